"""The environment a number was measured in: GPU, clocks, driver, versions, commit.

Results without it cannot be compared later. Device facts are read inside the
worker (the process that owns the GPU); the command line and git commit in the
parent. Every reader here tolerates a missing tool and says 'unknown'.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from contextlib import suppress

from gpubench.timing.git_reader import repository_of, run_git
from gpubench.version import __version__


def device_model(device: str) -> str:
    """The model a device's figures are kept under (`ab --aa`'s calibration): the GPU's
    name as device_env gives it, or the CPU's."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_properties(torch.cuda.current_device()).name
    return platform.processor() or platform.machine()


def device_env(device: str) -> dict:
    """GPU and library facts, read in the process that will run the kernels."""
    import torch

    env = {
        "device": device,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": _version_of("triton"),
        "cuda_runtime": torch.version.cuda,
        "host": platform.node(),
        "cpu": platform.processor() or platform.machine(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env.update(
            gpu=props.name,
            sm_count=props.multi_processor_count,
            compute_capability=f"{props.major}.{props.minor}",
            l2_cache_bytes=getattr(props, "L2_cache_size", None),
            memory_bytes=props.total_memory,
            gpu_uuid=_uuid_text(getattr(props, "uuid", "")),
        )
        env.update(nvml_facts(str(getattr(props, "uuid", ""))))
    else:
        env.update(gpu=None, cpu_threads=torch.get_num_threads())
    return env


def nvml_gpu_facts() -> list[dict] | None:
    """For every GPU NVML lists (all of the machine's, whatever CUDA_VISIBLE_DEVICES shows),
    the facts device_env gives a worker on it that say which GPU on which machine with
    which software: gpu_uuid, host, driver, torch, spelled as device_env spells them. Read
    in the parent without starting CUDA; None without NVML."""
    from gpubench.build.nvml import each_gpu

    found = each_gpu(lambda nvml, gpu: (_text(nvml.nvmlDeviceGetUUID(gpu)),
                                        _text(nvml.nvmlSystemGetDriverVersion())))
    if found is None:
        return None
    import torch

    return [{"gpu_uuid": uuid, "host": platform.node(), "driver": driver,
             "torch": torch.__version__} for uuid, driver in found]


def _uuid_text(uuid) -> str:
    """torch's UUID as nvidia-smi writes it ('GPU-8f3c...'), '' when unknown."""
    text = str(uuid or "")
    return text if not text or text.startswith("GPU-") else f"GPU-{text}"


def nvml_facts(uuid: str = "") -> dict:
    """Driver version, SM clocks and throttle reasons through NVML (nvidia-ml-py)."""
    try:
        import pynvml
    except ImportError:
        return {"nvml": "unavailable: pip install nvidia-ml-py"}
    try:
        pynvml.nvmlInit()
        handle = _nvml_handle(pynvml, uuid)
        return {
            "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "sm_clock_max_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000,
        }
    except Exception as exc:  # NVML errors are many and all mean "not known here"
        return {"nvml": f"unavailable: {exc}"}


def _nvml_handle(pynvml, uuid: str):
    """The NVML handle of torch's device, by UUID: CUDA and NVML may order GPUs differently."""
    if uuid:
        text = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        with suppress(Exception):
            return pynvml.nvmlDeviceGetHandleByUUID(text)
    return pynvml.nvmlDeviceGetHandleByIndex(0)


def host_env(argv: list[str] | None = None) -> dict:
    """Facts the parent process knows: the command, the git commit, gpubench's version."""
    return {
        "gpubench": gpubench_version(),
        "command": " ".join(argv if argv is not None else sys.argv),
        "cwd": os.getcwd(),
        "git_commit": git_commit(os.getcwd()),
        "gpubench_commit": git_commit(os.path.dirname(os.path.abspath(__file__))),
    }


def git_commit(path: str) -> str | None:
    """HEAD of the repository holding `path`, with '-dirty' for uncommitted changes."""
    # the working folder may be anyone's clone: git_reader runs nothing of its git config
    if repository_of(path, 5).top is None:
        return None
    try:
        head = run_git(path, "rev-parse", "HEAD", timeout=5)
        if head.returncode != 0:
            return None
        dirty = run_git(path, "status", "--porcelain", "--untracked-files=no", timeout=5)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _version_of(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpubench_version() -> str:
    """The running gpubench's version (gpubench/version.py's, which pyproject.toml reads):
    right from a source tree, an editable install or a wheel alike, where the package
    metadata of an editable install keeps the version it was installed at."""
    return __version__
