"""Suite files: configs/*.toml -> a validated RunConfig.

A suite names families, shapes, dtypes and timing settings. Every key is
checked: an unknown key or a bad value is an error that names the file and the
key (with a suggestion for typos), because a silently ignored `warmpu_ms`
means a benchmark measured with settings nobody chose. Command-line options
override the file; the file overrides the defaults.

Shapes, per family or for all:
    sizes = [1024, "2^12"]                  one number per shape (one-axis families, or
    [sizes] matmul = [1024, 4096]           families that say how a number fills every axis)
    [shapes] matmul = ["M=16,N=4096,K=4096", {M = 8192, N = 8192, K = 128}]
    [axes] softmax = {cols = [128, 1000]}   sweep axes, the others at their defaults
    [axes] cols = [128, 1000]               (a list: for every family)
"""

from __future__ import annotations

import stat
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.errors import ConfigError, GpubenchError, did_you_mean
from gpubench.parsing import parse_dtypes, parse_size, parse_sizes
from gpubench.records.shape import ShapeChoice, parse_shape
from gpubench.run.suites import resolve_suite
from gpubench.timing.settings import (
    USER_KEYS,
    TimingSettings,
    of_type,
    whole_number,
    with_user_values,
)


@dataclass(frozen=True)
class RunConfig:
    families: tuple[str, ...] = ()
    shapes: ShapeChoice = field(default_factory=ShapeChoice)  # for every family
    family_shapes: dict[str, ShapeChoice] = field(default_factory=dict)
    dtypes: tuple[str, ...] | None = None
    variants: tuple[str, ...] = ()
    kernels_dirs: tuple[Path, ...] = ()
    timing: TimingSettings = field(default_factory=TimingSettings)
    seed: int | None = None

    def check_family_names(self, known) -> None:
        """A shapes table naming no family would silently run the defaults: refuse it."""
        for name, choice in self.family_shapes.items():
            if name not in known:
                raise ConfigError(f"{choice.origin}: there is no family '{name}'"
                                  f"{did_you_mean(name, known)}")

    def shapes_for(self, family: str) -> ShapeChoice:
        """What to run for `family`: a choice for every family wins (the command line's),
        else the family's own table, else nothing (the family's defaults)."""
        return self.shapes if self.shapes else self.family_shapes.get(family, ShapeChoice())


_TOP_KEYS = {"families", "sizes", "shapes", "axes", "dtypes", "variants", "kernels_dirs",
             "seed", "timing"}


def load_config(path: Path | str) -> RunConfig:
    """Read and validate a suite file: a path, or a shipped suite's bare name (`quick`)."""
    path = resolve_suite(path)
    try:
        data = tomllib.loads(_read_capped(path))
        return _from_dict(data, path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise ConfigError(f"{path}: nested too deeply to be a suite file") from None


# A suite file is a few kB; one past this is not one (and /dev/zero never ends).
MAX_CONFIG_BYTES = 1 << 20


def _read_capped(path: Path) -> str:
    if stat.S_ISFIFO(path.stat().st_mode) or stat.S_ISSOCK(path.stat().st_mode):
        # opening a named pipe waits for a writer: the run would hang with no word
        raise ConfigError(f"{path}: a named pipe or socket, not a suite file")
    with path.open("rb") as handle:
        raw = handle.read(MAX_CONFIG_BYTES + 1)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES >> 20} MiB, which no "
                          "suite file is")
    return raw.decode("utf-8")


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
            missing = [str(d) for d in dirs if not d.is_dir()]
            if missing:
                raise ValueError(f"no such folder: {', '.join(missing)} (relative paths are "
                                 f"read from the suite file's folder)")
            config = replace(config, kernels_dirs=dirs)
    if "seed" in data:
        with _key(path, "seed"):
            config = replace(config, seed=whole_number(data["seed"], minimum=0))
    config = _with_shapes(config, data, path)
    return replace(config, timing=_timing(data.get("timing", {}), path))


# ---------------------------------------------------------------- shapes


def _with_shapes(config: RunConfig, data: dict, path: Path) -> RunConfig:
    """Collect sizes / shapes / axes into one ShapeChoice for all families (top-level
    lists) and one per family (tables)."""
    common: dict = {"sizes": (), "shapes": (), "axes": ()}
    per_family: dict[str, dict] = {}

    def add(family: str | None, kind: str, value, where: str) -> None:
        target = common if family is None else per_family.setdefault(
            family, {"sizes": (), "shapes": (), "axes": ()})
        with _key(path, where):
            target[kind] = (*target[kind], *_READERS[kind](value))

    if "sizes" in data:
        sizes = data["sizes"]
        if isinstance(sizes, dict):
            for family, values in sizes.items():
                add(family, "sizes", values, f"sizes.{family}")
        else:
            add(None, "sizes", sizes, "sizes")
    if "shapes" in data:
        with _key(path, "shapes"):
            of_type(data["shapes"], dict, "a table of family = [shapes] ([shapes])")
        for family, values in data["shapes"].items():
            add(family, "shapes", values, f"shapes.{family}")
    if "axes" in data:
        with _key(path, "axes"):
            of_type(data["axes"], dict, "a table ([axes])")
        for name, value in data["axes"].items():
            if isinstance(value, dict):
                for axis, values in value.items():
                    add(name, "axes", {axis: values}, f"axes.{name}.{axis}")
            else:
                add(None, "axes", {name: value}, f"axes.{name}")
    config = replace(config, family_shapes={
        family: ShapeChoice(**kinds, origin=f"{path}: the shapes of '{family}'")
        for family, kinds in per_family.items()})
    if any(common.values()):
        config = replace(config, shapes=ShapeChoice(**common, origin=f"{path}"))
    return config


def _read_sizes(value) -> tuple[int, ...]:
    return parse_sizes(_list(value))


def _read_shapes(value) -> tuple[dict, ...]:
    """Each shape a string 'M=16,N=4096,K=4096' or an inline table {M = 16, ...}."""
    shapes = []
    for item in _list(value):
        if isinstance(item, str):
            shapes.append(parse_shape(item))
        elif isinstance(item, dict):
            shapes.append({str(k): parse_size(v) for k, v in item.items()})
        else:
            raise ValueError(f"a shape is 'M=16,N=4096' or {{M = 16, N = 4096}}, got {item!r}")
    return tuple(shapes)


def _read_axes(value: dict) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((axis, parse_sizes(_list(values))) for axis, values in value.items())


_READERS = {"sizes": _read_sizes, "shapes": _read_shapes, "axes": _read_axes}


# ---------------------------------------------------------------- timing


def _timing(timing, path: Path) -> TimingSettings:
    if not isinstance(timing, dict):
        raise ConfigError(f"{path}: key 'timing' must be a table ([timing])")
    _reject_unknown(timing, set(USER_KEYS), path, "timing.")

    def fail(key: str | None, exc: Exception):
        where = f"key 'timing.{key}'" if key else "[timing]"
        raise ConfigError(f"{path}: {where}: {exc}") from None

    return with_user_values(TimingSettings(), timing, fail)


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
    return of_type(value, list, "a list")


def _names(value) -> tuple[str, ...]:
    items = _list(value)
    if not all(isinstance(item, str) and item for item in items):
        raise ValueError(f"expected a list of names, got {value!r}")
    return tuple(items)


def _dtypes(value) -> tuple[str, ...]:
    items = _names(value)
    return ("all",) if items == ("all",) else parse_dtypes(items)
