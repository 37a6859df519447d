"""`gpubench eject FAMILY`: the Triton code torch.compile writes for the family's reference,
written into the family folder as a Triton variant of its own (a first draft to edit), with
a spec entry, then run once beside the baseline.

The capture is tools/inductor_capture.py; the rewrite into a plain-Triton module is
families/eject_source.py; this module picks the shape and dtype, writes the files and runs.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from gpubench import errors
from gpubench.families.compiled import inductor_cache_dir
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.families.eject_source import NothingToEject, write_module
from gpubench.records.shape import ShapeChoice
from gpubench.run.machine import detect_machine
from gpubench.run.plan import choose_dtypes, choose_shapes
from gpubench.safe_text import short_path

# Exit status of a refusal: the reference compiles to no Triton kernel (an extern cuBLAS
# call, a C++ kernel) or to a launch eject does not rewrite. Usage-like: nothing was wrong
# with gpubench or the machine, there is just nothing to hand over.
EXIT_NOTHING_TO_EJECT = errors.EXIT_USAGE
BLOCK_MARK = "# --- gpubench eject:"


@dataclass(frozen=True)
class EjectRequest:
    """What `gpubench eject` was asked for, built once by the CLI."""

    family: str
    shapes: ShapeChoice = field(default_factory=ShapeChoice)  # one shape; empty: the first default
    dtype: str | None = None  # None: float32 (or the family's first)
    mode: str = "default"  # torch.compile mode: default or max-autotune
    kernels_dirs: tuple[Path, ...] = ()
    name: str | None = None  # the variant's name; None: compiled_<shape>_<dtype>
    run: bool = True  # --no-run: write the files only
    device: str = "auto"


def execute(request: EjectRequest, console: Console) -> int:
    # Inductor's files under gpubench's cache, not /tmp/torchinductor_$USER: read before
    # torch's first question to Inductor fixes the default in the environment.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir())
    import torch

    machine = detect_machine(request.device)
    dirs = resolve_families((request.family,), family_dirs(request.kernels_dirs))
    folder = dirs[request.family]
    family = load_family(request.family, folder)
    shapes = choose_shapes(family, request.shapes, machine)
    if len(shapes) > 1 and request.shapes:
        raise errors.UsageError(f"eject writes one shape at a time; got {len(shapes)}")
    shape = shapes[0]
    dtype = request.dtype or choose_dtypes(family, None)[0]
    inputs = family.inputs(shape, getattr(torch, dtype), machine.device)
    console.print(f"Compiling {family.name}'s reference at {shape.label()}, {dtype} with "
                  f"torch.compile (mode {request.mode}) on {machine.device} ...")
    from gpubench.tools.inductor_capture import capture

    try:
        with _quiet_inductor(Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])):
            captured = capture(family.reference, inputs, request.mode)
    except Exception as exc:  # torch.compile or Inductor failed: say so, no traceback
        raise errors.BuildFailed(
            f"torch.compile could not compile {family.name}'s reference at {shape.label()}, "
            f"{dtype}: {type(exc).__name__}: {exc}") from None
    name = request.name or f"compiled_{shape.slug()}_{dtype}"
    module = f"compiled_{family.name}_{shape.slug()}_{dtype}_triton.py"
    try:
        written = write_module(captured.code, captured.configs, function=family.name,
                               family=family.name, shape=dict(shape.items()), dtype=dtype,
                               mode=request.mode, device=machine.device,
                               torch_version=torch.__version__,
                               triton_version=_triton_version(),
                               configs_from=_configs_from(captured))
    except NothingToEject as exc:
        console.print(f"Nothing to eject for {family.name} at {shape.label()}: {exc}")
        return EXIT_NOTHING_TO_EJECT
    added = _write_variant(folder, module, written.text, name, family.name, dtype,
                           dict(shape.items()),
                           f"torch.compile's Triton at {shape.label()} ({request.mode}), "
                           "ejected")
    _say_written(console, folder / module, name, added, captured, written)
    if not request.run:
        return errors.EXIT_OK
    return _run_once(request, name, shape.text(), dtype, console, beside_compiled=machine.has_cuda)


def _configs_from(captured) -> str:
    """Whose launch configs the file holds, said in its docstring."""
    if captured.unseen:
        return (f"Inductor's where its launch was seen, gpubench's rule for "
                f"{', '.join(captured.unseen)} (not seen)")
    if not captured.tuned:
        return "gpubench's rule (no GPU: Inductor's autotuner never ran)"
    return "the ones Inductor launched with (its autotuner's choice)"


def _triton_version() -> str:
    import triton

    return triton.__version__


@contextlib.contextmanager
def _quiet_inductor(cache: Path):
    """Inductor's own chatter kept out of eject's output (its cache-off UserWarning, the
    'temporary cache dir kept' log line of the codegen-only path, whose compile is meant
    to fail), and the temporary folders it keeps on that failure removed: eject reports
    what it wrote, and leaves nothing else behind."""
    import logging
    import shutil
    import warnings

    before = set(cache.glob("tmp*")) if cache.is_dir() else set()
    loggers = [logging.getLogger(name) for name in ("torch._inductor", "torch._dynamo")]
    levels = [logger.level for logger in loggers]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for logger in loggers:
                logger.setLevel(logging.ERROR)
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
        for left in (set(cache.glob("tmp*")) if cache.is_dir() else set()) - before:
            shutil.rmtree(left, ignore_errors=True)


def _write_variant(folder: Path, module: str, text: str, name: str, function: str,
                   dtype: str, shape: dict, description: str) -> bool:
    """The module and its spec entry, both or neither: a folder that cannot be written
    (read-only, a directory in the way, a full disk) is an OutputError (exit 12) naming it,
    and a module written before the spec failed is taken back."""
    path = folder / module
    existed = path.exists()
    try:
        path.write_text(text)
        return _add_spec_entry(folder / "spec.py", name, module, function, dtype, shape,
                               description)
    except OSError as exc:
        if not existed:
            with contextlib.suppress(OSError):
                path.unlink()
        raise errors.OutputError(
            f"cannot write the ejected variant into {short_path(folder)}: "
            f"{exc.strerror or exc} ({short_path(exc.filename or path)}); nothing was "
            "added to the family") from None


def _add_spec_entry(spec: Path, name: str, module: str, function: str, dtype: str,
                    shape: dict, description: str) -> bool:
    """Append a marked block to spec.py that adds the variant to `family` (the variants
    tuple itself is left as the user wrote it: appending needs no parsing of their code),
    at the one dtype and shape the kernel was compiled for: elsewhere it is skipped, not an
    ERROR. False when a block for this variant name is already there (ejecting again
    rewrites the module only)."""
    text = spec.read_text()
    mark = f"{BLOCK_MARK} {name} ---"
    if mark in text:
        return False
    block = (f"\n\n{mark}\n"
             "# Added by `gpubench eject`; delete this block and the module to remove it.\n"
             "from gpubench import TritonVariant as _EjectedTriton  # noqa: E402\n\n"
             "family = family.with_variants(_EjectedTriton(\n"
             f"    {name!r}, module={module!r}, function={function!r}, dtypes=({dtype!r},),\n"
             f"    shapes=({shape!r},), description={description!r}))\n")
    spec.write_text(text.rstrip("\n") + "\n" + block)
    return True


def _say_written(console: Console, path: Path, name: str, added: bool, captured,
                 written) -> None:
    console.print(f"Wrote {path}")
    console.print(f"{'Added' if added else 'Kept'} variant '{name}' in {path.parent / 'spec.py'}"
                  f"{'' if added else ' (already there)'}")
    if captured.unseen:
        console.print("Inductor's launch config was not seen for "
                      f"{', '.join(captured.unseen)} (this torch launched it some other way): "
                      "its block sizes are gpubench's rule, not the autotuner's, and its time "
                      "may differ from the compiled original's.")
    elif not captured.tuned:
        console.print("No GPU here: Inductor wrote this Triton for an sm_90 target without "
                      "running it; block sizes are gpubench's rule, not an autotuner's. "
                      "Eject again on the GPU for the tuned launch.")
    if written.inductor_helpers:
        console.print("It imports Inductor's triton_helpers for: "
                      + ", ".join(written.inductor_helpers))


def _run_once(request: EjectRequest, name: str, shape: str, dtype: str,
              console: Console, beside_compiled: bool) -> int:
    """`gpubench run FAMILY --variants NAME --shape ... --dtype ...`, in a child process
    like any run (its workers, its table); the baseline always runs beside it, and on a
    GPU the compiled original too (`compiled` at the same mode), whose time the ejected
    kernels should match. On a CPU the ejected Triton runs in the interpreter, whose time
    means nothing beside Inductor's C++: only its check counts there."""
    variants = f"{name},compiled" if beside_compiled else name
    command = [sys.executable, "-m", "gpubench", "run", request.family, "--variants", variants,
               "--shape", shape, "--dtype", dtype, "--device", request.device]
    if beside_compiled:
        command += ["--compiled", "--compile-mode", request.mode]
    for folder in request.kernels_dirs:
        command += ["--kernels-dir", str(folder)]
    console.print("$ gpubench " + " ".join(command[3:]))
    return subprocess.call(command, env=os.environ.copy())
