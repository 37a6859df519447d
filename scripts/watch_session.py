"""A scripted `gpubench run --watch` session on a copy of a CUDA family, for the GPU
acceptance run (scripts/gpu-acceptance.sh, step `watch`): the family is copied to a
temporary folder, the loop started, and the .cu edited as a person would — a code edit,
a comment-only edit, a broken edit, the fix — then Ctrl-C. Every line the loop prints is
echoed with the seconds since the start, so the note can show how long each save took to
come back with its verdict. Exits 1 if an iteration never comes (its output says where).

    python scripts/watch_session.py [FAMILY_DIR] [FILE] [--variants cuda] [-- run options]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# A first CUDA build takes 10-50 s (issue 27); an edit's rebuild a few.
WAIT_S = 240


class Session:
    def __init__(self, args: list[str], cwd: Path):
        self.start = time.monotonic()
        self.lines: list[str] = []
        self.process = subprocess.Popen([sys.executable, "-m", "gpubench", *args], cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env={**os.environ, "COLUMNS": "140"})
        threading.Thread(target=self._echo, daemon=True).start()

    def _echo(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            print(f"{time.monotonic() - self.start:7.1f}s | {line}", end="", flush=True)

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.start:7.1f}s > {text}", flush=True)

    def wait_watching(self, count: int) -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            if sum(line.startswith("watching ") for line in self.lines) >= count:
                return
            time.sleep(0.1)
        self.say(f"FAILED: the loop never said 'watching' #{count}")
        self.process.kill()
        sys.exit(1)


def edits(text: str) -> list[tuple[str, str]]:
    """(what, new text) of the session's saves, in order."""
    code = text.replace("v * v", "v * v * 1.0f", 1)
    if code == text:
        code = text + "\n__device__ int gb_watch_unused_edit() { return 1; }\n"
    return [("code edit (v * v -> v * v * 1.0f)", code),
            ("comment-only edit", code + "\n// a comment: no code changed\n"),
            ("broken edit (a syntax error)", code.replace("{", "{ this is not C++;", 2)),
            ("the fix (back to the original)", text)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", nargs="?", default=str(REPO / "kernels" / "square"))
    parser.add_argument("file", nargs="?", default="square.cu")
    parser.add_argument("--variants", default="cuda")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpubench-watch-"))
    family = work / "fam" / Path(options.family).name
    shutil.copytree(options.family, family, ignore=shutil.ignore_patterns("__pycache__"))
    extra = [a for a in options.rest if a != "--"]
    session = Session(["run", family.name, "--kernels-dir", str(work / "fam"), "--variants",
                       options.variants, "--out", str(work / "session"), "--watch", *extra],
                      work)
    session.wait_watching(1)
    source = family / options.file
    for number, (what, text) in enumerate(edits(source.read_text()), start=2):
        session.say(f"save #{number}: {what} of {options.file}")
        source.write_text(text)
        session.wait_watching(number)
    session.say("Ctrl-C")
    session.process.send_signal(signal.SIGINT)
    code = session.process.wait(timeout=WAIT_S)
    session.say(f"exit code {code}; iterations: "
                f"{sorted(p.name for p in (work / 'session').glob('iter-*'))}")
    last = len(list((work / "session").glob("iter-*")))
    compared = subprocess.run([sys.executable, "-m", "gpubench", "compare",
                               str(work / "session" / "iter-001"),
                               str(work / "session" / f"iter-{last:03d}")],
                              capture_output=True, text=True, cwd=work)
    print(compared.stdout + compared.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
