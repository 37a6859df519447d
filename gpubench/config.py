"""Suite files: configs/*.toml -> a validated RunConfig.

A suite names families, sizes, dtypes and timing settings. Every key is
checked: an unknown key or a bad value is an error that names the file and the
key (with a suggestion for typos), because a silently ignored `warmpu_ms`
means a benchmark measured with settings nobody chose. Command-line options
override the file; the file overrides the defaults.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.errors import ConfigError, GpubenchError, did_you_mean
from gpubench.parsing import parse_dtypes, parse_sizes
from gpubench.stopping import TimingSettings
from gpubench.timers import GPU_MODES


@dataclass(frozen=True)
class RunConfig:
    families: tuple[str, ...] = ()
    sizes: tuple[int, ...] | None = None  # for every family
    family_sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dtypes: tuple[str, ...] | None = None
    variants: tuple[str, ...] = ()
    kernels_dirs: tuple[Path, ...] = ()
    timing: TimingSettings = field(default_factory=TimingSettings)
    modes: tuple[str, ...] = ("cold",)
    remeasure_throttled: bool = False
    timeout_s: float = 120.0
    build_timeout_s: float = 600.0
    seed: int | None = None

    def sizes_for(self, family: str) -> tuple[int, ...] | None:
        return self.sizes or self.family_sizes.get(family)


_TOP_KEYS = {"families", "sizes", "dtypes", "variants", "kernels_dirs", "seed", "timing"}
# key -> (TimingSettings field or RunConfig field, converter from the file's unit)
_TIMING_KEYS = {
    "warmup_ms": ("warmup_s", lambda v: _positive(v) / 1e3),
    "min_time_ms": ("min_time_s", lambda v: _positive(v) / 1e3),
    "max_time_ms": ("max_time_s", lambda v: _positive(v) / 1e3),
    "target_ci_pct": ("target_rel_ci", lambda v: _positive(v) / 100),
    "min_samples": ("min_samples", lambda v: _count(v)),
    "max_samples": ("max_samples", lambda v: _count(v)),
    "modes": ("modes", lambda v: parse_modes(_names(v))),
    "remeasure_throttled": ("remeasure_throttled", lambda v: _boolean(v)),
    "timeout_s": ("timeout_s", lambda v: _positive(v)),
    "build_timeout_s": ("build_timeout_s", lambda v: _positive(v)),
}
# Keys of [timing] that configure the run rather than one measurement.
_RUN_LEVEL = ("modes", "remeasure_throttled", "timeout_s", "build_timeout_s")


def load_config(path: Path | str) -> RunConfig:
    """Read and validate a suite file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return _from_dict(data, path)


def _from_dict(data: dict, path: Path) -> RunConfig:
    _reject_unknown(data, _TOP_KEYS, path, "")
    config = RunConfig()
    with _key(path, "families"):
        config = replace(config, families=_names(data.get("families", [])))
    with _key(path, "variants"):
        config = replace(config, variants=_names(data.get("variants", [])))
    if "dtypes" in data:
        with _key(path, "dtypes"):
            config = replace(config, dtypes=_dtypes(data["dtypes"]))
    if "kernels_dirs" in data:
        with _key(path, "kernels_dirs"):
            dirs = tuple((path.parent / d).resolve() for d in _names(data["kernels_dirs"]))
            config = replace(config, kernels_dirs=dirs)
    if "seed" in data:
        with _key(path, "seed"):
            config = replace(config, seed=_count(data["seed"], minimum=0))
    if "sizes" in data:
        config = _with_sizes(config, data["sizes"], path)
    return _with_timing(config, data.get("timing", {}), path)


def _with_sizes(config: RunConfig, sizes, path: Path) -> RunConfig:
    if isinstance(sizes, dict):
        per_family = {}
        for family, values in sizes.items():
            with _key(path, f"sizes.{family}"):
                per_family[family] = parse_sizes(_list(values))
        return replace(config, family_sizes=per_family)
    with _key(path, "sizes"):
        return replace(config, sizes=parse_sizes(_list(sizes)))


def _with_timing(config: RunConfig, timing, path: Path) -> RunConfig:
    if not isinstance(timing, dict):
        raise ConfigError(f"{path}: key 'timing' must be a table ([timing])")
    _reject_unknown(timing, set(_TIMING_KEYS), path, "timing.")
    settings = {}
    for key, value in timing.items():
        name, convert = _TIMING_KEYS[key]
        with _key(path, f"timing.{key}"):
            settings[name] = convert(value)
    run_level = {k: settings.pop(k) for k in _RUN_LEVEL if k in settings}
    return replace(config, timing=replace(config.timing, **settings), **run_level)


# ---------------------------------------------------------------- validation


class _key:
    """Turns any error while reading one key into a ConfigError naming file and key."""

    def __init__(self, path: Path, key: str):
        self.path, self.key = path, key

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, ConfigError):
            return False
        if isinstance(exc, GpubenchError | ValueError | TypeError):
            raise ConfigError(f"{self.path}: key '{self.key}': {exc}") from None
        return False


def _reject_unknown(data: dict, allowed: set[str], path: Path, prefix: str) -> None:
    for key in data:
        if key not in allowed:
            hint = did_you_mean(key, allowed)
            raise ConfigError(f"{path}: unknown key '{prefix}{key}'{hint}; "
                              f"known: {', '.join(sorted(allowed))}")


def _list(value) -> list:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {value!r}")
    return value


def _names(value) -> tuple[str, ...]:
    items = _list(value)
    if not all(isinstance(item, str) and item for item in items):
        raise ValueError(f"expected a list of names, got {value!r}")
    return tuple(items)


def _dtypes(value) -> tuple[str, ...]:
    items = _names(value)
    return ("all",) if items == ("all",) else parse_dtypes(items)


def parse_modes(names) -> tuple[str, ...]:
    """Timing modes from 'cold,wall' or a list; 'all' for every GPU mode."""
    from gpubench.errors import unknown_name
    from gpubench.parsing import split_names

    chosen = split_names(names)
    if "all" in chosen:
        return GPU_MODES
    for mode in chosen:
        if mode not in GPU_MODES:
            raise unknown_name("timing mode", mode, GPU_MODES)
    if not chosen:
        raise ValueError("no timing mode given")
    return chosen


def _positive(value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    return float(value)


def _count(value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"expected a whole number >= {minimum}, got {value!r}")
    return value


def _boolean(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value
