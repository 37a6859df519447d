"""A scripted `gpubench run --watch` session on the CPU: the test edits the family's Triton
launcher (run by the Triton interpreter: seconds an iteration, no C++ build) and reads
what the loop prints. A code edit gets its lines (the baseline's with a compare verdict,
the interpreter row's saying it is not judged for speed, then each point paired with the
last passing iteration in one worker); a broken edit shows
the error at its file and line and the loop goes on; the fix recovers (compared with the
last good iteration and the first); Ctrl-C saves every iteration as a run `gpubench
compare` reads, and exits 0 after a clean last iteration."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import FAST, REPO, start_gpubench

# An iteration takes ~3 s here (worker start, the interpreter, two points); a busy
# 2-core machine running the suite on two workers can take several times as long.
WAIT_S = 120
VERDICT = re.compile(r"\b(FASTER|SLOWER|SAME|UNSURE)\b")
INTERPRETED = "not compared for speed: Triton interpreter"


class Session:
    """The loop's output, read line by line as it comes."""

    def __init__(self, process: subprocess.Popen):
        self.process, self.lines = process, []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, done, what: str) -> list[str]:
        """The lines once `done(lines)` holds. Fails, with the output, if it never does."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            lines = list(self.lines)
            if done(lines):
                return lines
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"never saw {what}; output:\n" + "\n".join(self.lines))

    def wait_for_watching(self, count: int) -> list[str]:
        """The lines once the loop has said it is watching `count` times."""
        return self.wait_for(lambda lines: sum(_watching(x) for x in lines) >= count,
                             f"'watching' #{count}")

    def iteration(self, number: int) -> list[str]:
        """The lines of iteration `number` (2 and later): its header to the next 'watching'."""
        def span(lines):
            start = next((i for i, x in enumerate(lines) if f"] #{number}: " in x), None)
            end = next((i for i in range(start or 0, len(lines)) if _watching(lines[i])), None)
            return None if start is None or end is None else (start, end)

        lines = self.wait_for(span, f"iteration #{number}")
        start, end = span(lines)
        return lines[start:end]


def _watching(line: str) -> bool:
    return line.startswith("watching ")


def square_copy(tmp_path: Path) -> Path:
    """A copy of the shipped square family (its spec and Triton launcher) in fam/sq."""
    family = tmp_path / "fam" / "sq"
    family.mkdir(parents=True)
    for name in ("spec.py", "square_triton.py"):
        shutil.copy(REPO / "kernels" / "square" / name, family / name)
    return family


def watch_square(tmp_path: Path, build_cache):
    """(its environment, the process) of `run sq --watch` over square_copy's folder: the
    Triton variant on the CPU, the session saved under tmp_path/session."""
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160"}
    return env, start_gpubench(["run", "sq", "--kernels-dir", str(tmp_path / "fam"),
                                "--variants", "triton", "--sizes", "4096", *FAST, "--device",
                                "cpu", "--out", str(tmp_path / "session"), "--watch"],
                               tmp_path, env)


def test_watch_session_edits_breaks_recovers_and_saves(tmp_path, build_cache):
    family = square_copy(tmp_path)
    launcher = family / "square_triton.py"
    good = launcher.read_text()
    env, process = watch_square(tmp_path, build_cache)
    session = Session(process)
    try:
        first = session.wait_for_watching(1)
        assert any(re.search(r"triton .* PASS", line) for line in first), first

        launcher.write_text(good.replace("x * x, mask", "x * x * 1.0, mask"))
        edited = session.iteration(2)
        assert "square_triton.py -> triton" in edited[0]
        # The baseline gets compare's verdict; the interpreter row is checked, never judged
        # for speed (records/result.correctness_only): its time is the interpreter's.
        assert any(line.startswith("torch") and VERDICT.search(line) for line in edited), edited
        assert any(line.startswith("triton") and INTERPRETED in line for line in edited), edited
        # then paired with the last passing iteration in one worker (commands/pairing.py):
        # the unchanged baseline is a control, never FASTER or SLOWER
        paired = [line for line in edited if line.startswith("  paired with #1: ")]
        assert any(" torch " in line and re.search(r"\b(SAME|UNSURE)\b", line)
                   for line in paired), edited
        assert any(" triton " in line and "Triton interpreter" in line for line in paired)

        launcher.write_text(good.replace("x * x, mask", "x * x +, mask"))  # a syntax error
        broken = "\n".join(session.iteration(3))
        assert re.search(r"triton\s+ERROR", broken), broken
        assert re.search(r"square_triton\.py\b.*\b16\b", broken), broken  # its file and line

        launcher.write_text(good)
        fixed = session.iteration(4)
        line = next(line for line in fixed if line.startswith("triton"))
        assert INTERPRETED in line and "(vs first #1:" in line, fixed  # recovered
        assert any(line.startswith("  paired with #2: torch") for line in fixed), fixed

        spec = family / "spec.py"
        spec_text = spec.read_text()
        spec.write_text(spec_text + "\nraise ValueError('half-saved spec')\n")
        said = "\n".join(session.wait_for_watching(5)[-3:])
        assert "error:" in said and "spec.py" in said and "half-saved spec" in said, said
        spec.write_text(spec_text)  # fixed: the whole family runs again, planned anew
        replanned = session.iteration(5)
        assert "spec.py -> all of sq" in replanned[0], replanned

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=WAIT_S) == 0, "\n".join(session.lines)
        assert not _processes_under(tmp_path), "a worker outlived the loop"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    ended = session.lines[-1]
    assert "5 iteration(s) saved in" in ended, session.lines
    iterations = sorted(p.name for p in (tmp_path / "session").glob("iter-*"))
    assert iterations == [f"iter-00{n}" for n in range(1, 6)]
    compared = subprocess.run([sys.executable, "-m", "gpubench", "compare",
                               str(tmp_path / "session" / "iter-002"),
                               str(tmp_path / "session" / "iter-004")],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    shown = compared.stdout.splitlines()  # a table per family: 'sq float32 ...', then rows
    assert any(line.startswith("sq ") for line in shown)
    assert any(" triton " in line for line in shown)


def _processes_under(folder: Path) -> list[str]:
    """Command lines of live processes that name `folder` (the loop's workers do)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(folder) in line:
            found.append(line)
    return found


def test_watch_keeps_only_the_base_copies_of_the_sources(tmp_path, build_cache):
    """Five iterations over a family with a large header: the session's copies of the
    sources (commands/pairing.py) hold at most two copies' worth, not one per save."""
    family = square_copy(tmp_path)
    header = family / "big.h"
    header.write_bytes(b"// filler\n" * 400_000)  # 4 MB, never edited
    launcher = family / "square_triton.py"
    good = launcher.read_text()
    _env, process = watch_square(tmp_path, build_cache)
    session = Session(process)
    sources = tmp_path / "session" / "sources"
    try:
        session.wait_for_watching(1)
        for number in range(2, 6):
            edit = f"x * x * {number}.0 / {number}.0, mask"
            launcher.write_text(good.replace("x * x, mask", edit))
            session.iteration(number)
            assert _bytes_on_disk(sources) <= 2 * header.stat().st_size, number
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=WAIT_S) == 0, "\n".join(session.lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert [p.name for p in sources.iterdir()] == ["iter-005"]  # the last passing one


def _bytes_on_disk(folder: Path) -> int:
    """The bytes of the files under `folder`, a hard-linked file counted once."""
    seen = {}
    for path in folder.rglob("*"):
        if path.is_file():
            stat = path.stat()
            seen[(stat.st_dev, stat.st_ino)] = stat.st_size
    return sum(seen.values())
