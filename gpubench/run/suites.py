"""The shipped suites: `--config quick` names configs/quick.toml wherever gpubench runs.

configs/ of the checkout installs as the data package `gpubench_configs` (pyproject.toml),
the way kernels/ installs as `gpubench_kernels`, so a wheel carries one copy of each suite
and the checkout keeps its layout. A bare name (no folder, no .toml) is a shipped suite;
anything else is a path, as it always was. A name that is neither fails with the shipped
names listed, since a newcomer's first `--config` is usually a guess at one of them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gpubench.errors import ConfigError, did_you_mean

SUFFIX = ".toml"


def shipped_configs_dir() -> Path | None:
    """configs/ of the checkout, or the installed copy (package gpubench_configs); None
    when neither is there (a wheel built without them), which only shipped names need."""
    checkout = Path(__file__).resolve().parents[2] / "configs"
    if (checkout / f"quick{SUFFIX}").is_file():
        return checkout
    spec = importlib.util.find_spec("gpubench_configs")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def shipped_names() -> list[str]:
    folder = shipped_configs_dir()
    return sorted(p.stem for p in folder.glob(f"*{SUFFIX}")) if folder else []


def is_bare_name(text: str) -> bool:
    """`quick`, not `./quick`, `configs/quick.toml` or `quick.toml`: only these look up
    the shipped suites, so a path keeps meaning the file it names."""
    return "/" not in text and "\\" not in text and not text.endswith(SUFFIX)


def resolve_suite(given: Path | str) -> Path:
    """The file a `--config` value names: a shipped suite for a bare name that is one,
    else the path itself. A path that does not exist is a ConfigError that lists the
    shipped names (and says which one a typo meant)."""
    text = str(given)
    names = shipped_names()
    if is_bare_name(text) and text in names:
        return shipped_configs_dir() / f"{text}{SUFFIX}"
    path = Path(given)
    if path.exists():
        return path
    listed = ", ".join(names) if names else "none (reinstall gpubench)"
    guess = did_you_mean(text, names) if is_bare_name(text) else ""
    raise ConfigError(f"{path}: no such config file, and no shipped suite of that name"
                      f"{guess}; the shipped suites: {listed} (`--config quick`)")
