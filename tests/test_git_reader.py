"""git as a reader of folders gpubench does not trust (issue 61): a family folder whose
.git/config names commands (core.fsmonitor, gpg.program with log.showSignature, a clean
filter) has its revision recorded and none of them runs; a `.git` file pointing at another
repository is refused, its commit not recorded, the reason kept."""

import os
import subprocess
from pathlib import Path

import pytest

from gpubench.timing import git_reader
from gpubench.timing.envinfo import git_commit
from gpubench.timing.revision import revision_of

VECTORS = ("fsmonitor", "gpg", "clean")
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(folder: Path) -> str:
    (folder / "k.py").write_text("a\n")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "one")
    return git(folder, "rev-parse", "HEAD")


def signed_commit(folder: Path) -> str:
    """HEAD made a commit with a (fake) PGP signature: log verifies it when asked to."""
    tree = git(folder, "rev-parse", "HEAD^{tree}")
    text = (f"tree {tree}\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n"
            "\nsigned\n")
    (folder.parent / "commit.txt").write_text(text)
    sha = git(folder, "hash-object", "-t", "commit", "-w", str(folder.parent / "commit.txt"))
    git(folder, "update-ref", "HEAD", sha)
    return sha


@pytest.fixture
def hostile(tmp_path):
    """A family folder whose .git/config runs a script per vector, each touching its
    marker; the folder is edited after its commit so that status looks at its files."""
    folder = tmp_path / "family"
    folder.mkdir()
    git(folder, "init", "-q")
    commit(folder)
    sha = signed_commit(folder)
    scripts = {}
    for vector in VECTORS:
        script = tmp_path / f"{vector}.sh"
        script.write_text(f"#!/bin/sh\ntouch {tmp_path}/marker-{vector}\ncat\n")
        script.chmod(0o755)
        scripts[vector] = str(script)
    for key, value in (("core.fsmonitor", scripts["fsmonitor"]),
                       ("gpg.program", scripts["gpg"]), ("log.showSignature", "true"),
                       ("filter.evil.clean", scripts["clean"]),
                       ("filter.evil.required", "true")):
        git(folder, "config", key, value)
    (folder / ".gitattributes").write_text("* filter=evil\n")
    (folder / "k.py").write_text("b\n")
    return folder, sha


def markers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.glob("marker-*"))


def test_plain_git_runs_the_folders_commands(hostile):
    """The control: without git_reader, log and status run what the config names."""
    folder, _ = hostile
    subprocess.run(["git", "log", "-1"], cwd=folder, capture_output=True)
    subprocess.run(["git", "status", "--porcelain"], cwd=folder, capture_output=True)
    assert "marker-gpg" in markers(folder) and "marker-fsmonitor" in markers(folder)


def test_the_revision_is_read_and_nothing_of_the_config_runs(hostile):
    folder, sha = hostile
    revision = revision_of(folder)
    assert revision.commit == sha and revision.subject == "signed" and revision.dirty
    assert git_commit(str(folder)) == f"{sha}-dirty"
    done = git_reader.run_git(folder, "show", "-s", "--format=%H", "HEAD", timeout=5)
    assert done.stdout.strip() == sha
    assert markers(folder) == []


def test_a_git_file_pointing_at_another_repository_is_refused(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other)
    folder = tmp_path / "family"
    folder.mkdir()
    (folder / ".git").write_text(f"gitdir: {other / '.git'}\n")
    revision = revision_of(folder)
    assert revision.commit is None and revision.changed is None
    assert "points to a repository elsewhere" in revision.unknown
    assert str(other / ".git") in revision.unknown
    assert git_commit(str(folder)) is None


def test_a_folder_inside_its_repository_and_a_submodule_are_accepted(tmp_path):
    top = tmp_path / "repo"
    (top / "kernels" / "fam").mkdir(parents=True)
    git(top, "init", "-q")
    sha = commit(top)
    assert revision_of(top / "kernels" / "fam").commit == sha
    gitdir = top / ".git" / "modules" / "sub"  # where `git submodule` keeps a submodule's
    sub = top / "sub"
    sub.mkdir()
    gitdir.parent.mkdir()
    git(tmp_path, "init", "-q", f"--separate-git-dir={gitdir}", str(sub))
    assert git_reader.repository_of(sub, 5).top == sub.resolve()


def test_the_callers_git_variables_do_not_point_git_elsewhere(hostile, tmp_path,
                                                              monkeypatch):
    folder, sha = hostile
    monkeypatch.setenv("GIT_DIR", os.fspath(tmp_path / "nowhere"))
    assert revision_of(folder).commit == sha and markers(folder) == []
