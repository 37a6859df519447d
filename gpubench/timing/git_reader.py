"""git, run by gpubench as a reader of folders it does not trust.

gpubench asks git which commit a family's folder is at (timing/revision.py), which commit
the working folder is at (timing/envinfo.py) and what a folder held at a revision (`ab
--base-rev`, run/ab/export.py). A family's folder may come from anywhere (a clone, a
download, a leaderboard entry), and git runs commands its repository's own config names:
`core.fsmonitor` on every status, `gpg.program` when `log.showSignature` asks log to verify
signatures, a `filter.<name>.clean` on status and `.smudge` on archive for the files a
.gitattributes names. Repository-local config cannot be turned off wholesale (there is no
GIT_CONFIG_NOLOCAL), so every key that runs something is overridden on the command line,
which wins over every config file; the system and global files are not read at all (the
user's own settings do not change what a revision is), and a `.git` *file* pointing at a
repository elsewhere is refused, since its config and its commit are another tree's.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Keys that name a command, each set to what runs nothing. The command line's `-c` wins
# over .git/config and anything it includes.
SAFE_CONFIG = (
    # run on every status and index refresh to list changed files (a hook path or the
    # built-in daemon): false is neither
    ("core.fsmonitor", "false"),
    # hooks (post-index-change runs when an index is written): a folder with no hook
    ("core.hooksPath", os.devnull),
    # log and show verify signatures through gpg.program when this is true
    ("log.showSignature", "false"),
    # the verifiers themselves, should a signature still be checked: `false` runs nothing
    # of the repository's and fails the check
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.ssh.allowedSignersFile", os.devnull),
    # a partial clone fetches missing objects from its remote over ssh or a helper
    ("core.sshCommand", "false"),
    ("protocol.allow", "never"),
    # a diff gpubench never asks for would run this instead of git's own (a diff driver's
    # textconv and command run only for diffs and blame, which gpubench never asks for)
    ("diff.external", "false"),
    # output goes to gpubench, never through a pager (--no-pager too)
    ("core.pager", "cat"),
    # an empty value clears the list of helpers: no credential is ever asked for
    ("credential.helper", ""),
    ("core.askPass", ""),
)
# Environment: no system or global config (GIT_CONFIG_NOGLOBAL for gits older than 2.32,
# which read no GIT_CONFIG_GLOBAL), no prompt, no pager, no lazy fetch of a partial
# clone's missing objects, no optional lock (status would otherwise rewrite the index of
# a folder gpubench only reads).
SAFE_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOGLOBAL": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
            "PAGER": "cat", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "GIT_NO_LAZY_FETCH": "1",
            "GIT_OPTIONAL_LOCKS": "0"}
# A filter driver's keys: empty means no command, and required=false lets git go on
# without one (a required filter that did not run is an error).
FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
# Subcommands that may verify a signature.
SHOWS_SIGNATURES = ("log", "show")
# status looks into each submodule by running git there, under the submodule's own config:
# the `-c` keys above reach it, but its filter drivers are not the ones read above (its
# clean filter ran). `dirty` keeps a submodule at another commit reported, read from its
# HEAD without running anything in it; only changes inside its working tree go unseen.
STATUS_SUBMODULES = "--ignore-submodules=dirty"


@dataclass(frozen=True)
class Repository:
    """The repository holding a folder: its top, or why none is used."""

    top: Path | None = None
    refused: str | None = None  # a repository found and not used, and why


def run_git(folder: Path | str, *args: str, timeout: float, text: bool = True
            ) -> subprocess.CompletedProcess:
    """`git ARGS` in `folder`, with nothing of the repository's config able to run a
    command; raises what subprocess.run raises (no git, a timeout)."""
    command = ["git", "--no-pager", "--no-optional-locks", *_config_args(folder, timeout)]
    if args and args[0] in SHOWS_SIGNATURES:
        args = (args[0], "--no-show-signature", *args[1:])
    elif args and args[0] == "status":
        args = (args[0], STATUS_SUBMODULES, *args[1:])
    return subprocess.run([*command, *args], cwd=folder, capture_output=True, text=text,
                          timeout=timeout, env=_env(), stdin=subprocess.DEVNULL)


def repository_of(folder: Path | str, timeout: float) -> Repository:
    """The repository holding `folder`, where its working tree contains the folder and its
    git directory is its own: `<top>/.git`, or a submodule's in an enclosing repository's
    .git. A `.git` file pointing anywhere else (another clone, a planted repository) is
    refused: its commit is not the folder's and its config is not the folder's to run."""
    try:
        done = run_git(folder, "rev-parse", "--show-toplevel", "--absolute-git-dir",
                       timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return Repository()
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 2:
        return Repository()
    here = Path(folder).resolve()
    top, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
    if not here.is_relative_to(top):
        return Repository(refused=f"git's working tree {top} does not contain {here}")
    if not _own_git_dir(top, git_dir):
        return Repository(refused=f"{top}/.git points to a repository elsewhere ({git_dir})")
    return Repository(top=top)


def _own_git_dir(top: Path, git_dir: Path) -> bool:
    """`<top>/.git` itself, or a folder under an enclosing repository's .git (a submodule's,
    `.git/modules/NAME`)."""
    if git_dir == top / ".git":
        return True
    return any(git_dir.is_relative_to(above / ".git") for above in top.parents)


def _config_args(folder: Path | str, timeout: float) -> list[str]:
    trusted = _as_args([("safe.directory", entry) for entry in _safe_directories()])
    return _as_args([*SAFE_CONFIG, *_filter_overrides(folder, timeout, trusted)]) + trusted


def _as_args(pairs: list[tuple[str, str]]) -> list[str]:
    return [arg for key, value in pairs for arg in ("-c", f"{key}={value}")]


def _filter_overrides(folder: Path | str, timeout: float,
                      trusted: list[str]) -> list[tuple[str, str]]:
    """Every filter driver the repository's config names, made to run nothing: the names
    are the repository's own, so they are read first (reading config runs nothing). Read
    with the command's own safe.directory entries (`trusted`, as -c arguments): without
    them git skips the config of a repository another user owns, so no filter was found,
    while the command, given them, read that config and ran its clean filter."""
    try:
        done = subprocess.run(["git", *trusted, "config", "--name-only", "--list"], cwd=folder,
                              capture_output=True, text=True, timeout=timeout, env=_env(),
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    drivers = {name.split(".", 1)[1].rsplit(".", 1)[0] for name in done.stdout.splitlines()
               if name.lower().startswith("filter.") and name.count(".") >= 2}
    return [(f"filter.{driver}.{key}", value) for driver in sorted(drivers)
            for key, value in FILTER_KEYS]


@functools.cache
def _safe_directories() -> tuple[str, ...]:
    """The user's own `safe.directory` entries (their global config, trusted; git reads it
    only from there or the command line): a checkout another user owns, which the user
    marked safe (CI containers), keeps its revision though the global file is not read."""
    try:
        done = subprocess.run(["git", "config", "--global", "--get-all", "safe.directory"],
                              capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line for line in done.stdout.splitlines() if line)


def _env() -> dict[str, str]:
    """The environment without the caller's GIT_* (a GIT_DIR set by an enclosing hook would
    point git at another repository), and with SAFE_ENV."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**kept, **SAFE_ENV}
