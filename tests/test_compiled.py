"""The `compiled` variant: torch.compile of every family's reference (families/compiled.py).

The policy is tested in-process (no compile); the CLI tests compile vector_add's reference
at 1024 elements on the CPU, Inductor's C++ path (a few seconds on 2 cores each)."""

import pytest

from conftest import FAST
from gpubench.errors import UsageError
from gpubench.families import compiled
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Machine

GPU = Machine(has_cuda=True, has_triton=True, device_name="gpu")
CPU = Machine(has_cuda=False, has_triton=True)
TINY = ["vector_add", "--sizes", "1024", *FAST]


def _variant(name: str = "vector_add", folder=None):
    family = load_family(name, folder or family_dirs()[name])
    return next((v for v in family.variants if v.name == compiled.NAME), None)


def test_every_family_gets_it_on_a_gpu_and_on_a_cpu_only_when_asked():
    with compiled.run_settings(None):
        variant = _variant()
        assert variant.kind == "compiled" and variant.returns is True
        assert "torch.compile of the reference" in variant.description
        assert variant.unavailable_reason("float32", GPU) is None
        assert variant.unavailable_reason("float32", CPU) == compiled.CPU_REASON
    with compiled.run_settings("on", "max-autotune"):
        variant = _variant()
        assert variant.unavailable_reason("float32", CPU) is None
        assert variant.mode == "max-autotune"
    with compiled.run_settings("off"):
        assert _variant() is None  # the spec's module is the same; its variant is dropped
    assert all(_variant(name) is not None for name in family_dirs())


@pytest.mark.parametrize("machine, asked, variants, env, expected", [
    (GPU, None, (), None, "on"),
    (CPU, None, (), None, "off"),
    (CPU, None, ("compiled",), None, "on"),  # --variants compiled is asking
    (CPU, True, (), None, "on"),
    (GPU, False, (), None, "off"),
    (GPU, None, (), "off", "off"),  # the environment's default (the test suite's)
    (GPU, True, (), "off", "on"),  # the command line wins
])
def test_a_run_settles_it_for_its_machine(monkeypatch, machine, asked, variants, env, expected):
    if env is None:
        monkeypatch.delenv(compiled.ENV_CHOICE, raising=False)
    else:
        monkeypatch.setenv(compiled.ENV_CHOICE, env)
    assert compiled.settle_for(machine, asked, variants) == expected


def test_an_unknown_mode_is_a_usage_error():
    with compiled.run_settings(None, "fastest"), pytest.raises(UsageError, match="default"):
        _variant()


SPEC = '''
import torch
from gpubench.families.spec import Family, TorchVariant

family = Family(reference=lambda x: x * 2, make_inputs=lambda n, dtype, device: (
                    torch.randn(n, dtype=dtype, device=device),),
                flops=lambda n: n, bytes_moved=lambda n, itemsize: 2 * n * itemsize,
                variants=(TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out),
                                       baseline=True),{extra}){opt_out})
'''


@pytest.mark.parametrize("extra, opt_out, expected", [
    ("", ", compiled=False", None),  # the family opts out
    (' TorchVariant("compiled", fn=lambda x, out: out.copy_(x * 2))', "", "torch"),  # its own
])
def test_a_family_opts_out_or_keeps_its_own(tmp_path, extra, opt_out, expected):
    folder = tmp_path / f"doubling{len(extra)}"
    folder.mkdir()
    (folder / "spec.py").write_text(SPEC.format(extra=extra, opt_out=opt_out))
    with compiled.run_settings("on"):
        variant = _variant(folder.name, folder)
    assert (variant.kind if variant else None) == expected


def test_it_passes_on_the_cpu_when_asked_and_its_build_is_cached_the_second_time(gpubench):
    first = gpubench("run", *TINY, "--variants", "compiled", "--compiled")
    assert first.code == 0, first.output
    row = first.by_variant()["compiled"]
    assert row["status"] == "ok" and row["kind"] == "compiled", row
    assert row["build"]["compile_s"] > 0 and row["build"]["mode"] == "default"
    assert row["build"]["allocates_output"] is True
    assert "compiled (alloc)" in first.stdout
    again = gpubench("run", *TINY, "--variants", "compiled", "--compiled")
    # Inductor's FX-graph cache lives under GPUBENCH_CACHE_DIR, shared by both runs
    assert again.by_variant()["compiled"]["build"]["cached"] is True, again.output
    assert "cached" in again.stdout.split("compiled (alloc)")[1].splitlines()[0]


def test_a_cpu_run_leaves_it_out_and_says_how_to_ask(gpubench):
    done = gpubench("run", *TINY, "--variants", "torch", env={"GPUBENCH_COMPILED": ""})
    assert done.code == 0, done.output
    assert "compiled" not in done.by_variant()
    assert "compiled (torch.compile of each reference): not run, on a CPU only when asked " \
           "(--compiled" in " ".join(done.stdout.split())
    refused = gpubench("run", *TINY, "--no-compiled", "--variants", "compiled")
    assert refused.code == 2 and "compiled" in refused.output  # no such variant then


def test_a_failed_torch_compile_is_skipped_with_its_reason(gpubench, tmp_path):
    # No C++ compiler for Inductor's CPU code, as on a machine without one; a cache of its
    # own, so that no earlier run's compiled graph is found instead of compiling
    env = {"CXX": str(tmp_path / "no-such-compiler"),
           "GPUBENCH_CACHE_DIR": str(tmp_path / "cold-cache")}
    done = gpubench("run", *TINY, "--variants", "compiled", "--compiled", env=env)
    row = done.by_variant()["compiled"]
    assert row["status"] == "skipped", row
    assert row["error"].startswith("torch.compile failed here: "), row["error"]
    assert "Traceback" not in done.output
    assert done.by_variant()["torch"]["status"] == "ok"


def test_loading_the_compiled_variant_turns_off_tqdms_monitor_thread():
    """Inductor's progress bars on a GPU start tqdm's monitor thread, which outlives the point
    and fails it in the worker's health check (seen on an H200): load() switches it off."""
    tqdm = pytest.importorskip("tqdm")
    from gpubench.families import compiled

    tqdm.tqdm.monitor_interval = 10
    variant = compiled.CompiledVariant("compiled", reference=lambda x: x * 2)
    compiled.load(variant)
    assert tqdm.tqdm.monitor_interval == 0


def test_every_worker_compiles_in_process_unless_the_user_says_otherwise(monkeypatch):
    """A submission's own torch.compile would start Inductor's pool of compile processes
    (children that outlive the point, and a reader thread the health check blames)."""
    from gpubench.run.lanes.worker_process import worker_env

    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    assert worker_env("cuda")["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "8")
    assert worker_env("cuda")["TORCHINDUCTOR_COMPILE_THREADS"] == "8"
