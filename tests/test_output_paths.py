"""Outputs a user names are written through, never replaced (issue 61): a symlink keeps
pointing where it pointed and its target gets the text, a FIFO's reader gets the bytes,
/dev/null stays a character device, and a full device (/dev/full) is one line and exit 12,
never a traceback. A regular file or a new path is still written whole (atomic)."""

import os
import stat
import threading
from pathlib import Path

import pytest
from test_compare import noisy, result, run_of

from gpubench import errors
from gpubench.commands import history
from gpubench.files import write_output
from gpubench.store.folder import read_run, save_run
from gpubench.store.report_page import write_report

DEV_FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full")


def test_a_symlink_survives_and_its_target_gets_the_text(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "summary.md"
    target.write_text("old")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    assert write_output(link, "new text", mode=0o644) == target
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new text"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    # the temporary file was made beside the target, and none is left anywhere
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["real", "summary.md", "summary.md"]


def test_a_dangling_symlink_makes_its_target(tmp_path):
    link = tmp_path / "out.md"
    link.symlink_to(tmp_path / "made" / "later.md")
    write_output(link, "text")
    assert link.is_symlink() and (tmp_path / "made" / "later.md").read_text() == "text"


def test_a_fifo_is_written_through_to_its_reader(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_output(fifo, "through the pipe\n")
    reader.join(timeout=30)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_stays_a_character_device():
    before = os.stat("/dev/null")
    write_output(Path("/dev/null"), "nothing")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino and after.st_mode == before.st_mode


@needs_dev_full
def test_a_full_device_is_an_error_and_stays_a_device(tmp_path):
    with pytest.raises(OSError):
        write_output(DEV_FULL, "x" * 100_000)
    assert stat.S_ISCHR(os.stat(DEV_FULL).st_mode)
    with pytest.raises(errors.OutputError) as caught:
        history._write(DEV_FULL, "x")
    assert caught.value.exit_code == errors.EXIT_OUTPUT == 12
    save_run(run_of(result("a", noisy(1e-3))), tmp_path / "one")
    runs = [("one", read_run(tmp_path / "one"))]
    with pytest.raises(errors.OutputError):
        write_report(runs, DEV_FULL)
    assert stat.S_ISCHR(os.stat(DEV_FULL).st_mode)


def test_a_regular_file_is_replaced_whole(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("old")
    inode = path.stat().st_ino
    write_output(path, "new")
    assert path.read_text() == "new" and path.stat().st_ino != inode  # renamed over
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_cli_outputs_through_a_symlink_and_onto_devices(gpubench, tmp_path):
    save_run(run_of(result("a", noisy(1e-3))), tmp_path / "one")
    save_run(run_of(result("a", noisy(2e-3, seed=5))), tmp_path / "two")
    (tmp_path / "shared.md").write_text("")
    (tmp_path / "link.md").symlink_to(tmp_path / "shared.md")
    done = gpubench("compare", "one", "two", "--markdown", "link.md")
    assert done.code == 0, done.output
    assert (tmp_path / "link.md").is_symlink()
    assert (tmp_path / "shared.md").read_text().startswith("**gpubench compare** BASE")
    assert gpubench("report", "one", "-o", "/dev/null").code == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    if DEV_FULL.exists():
        full = gpubench("compare", "one", "two", "--markdown", str(DEV_FULL))
        assert full.code == 12 and "Traceback" not in full.output
        assert "cannot write the markdown to /dev/full: No space left on device" in full.stderr
        assert stat.S_ISCHR(os.stat(DEV_FULL).st_mode)
