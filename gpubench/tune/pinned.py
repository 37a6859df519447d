"""The pinned-config file: what `gpubench tune` chose for one GPU, variant, dtype and shape,
which `gpubench run` then runs that variant with (and says so under its table).

Where: <family folder>/tuned/<gpu>/<variant>/<dtype>-<shape>.json, beside the kernel it
tunes (check it in, or not: a GPU of another model never reads it). The config is matched
by its label ('BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 w8 s3'), not its index: an
edited config list then finds its config moved, or says it is gone, rather than running
whatever now sits at that index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpubench.tune.space import TuneConfig

FOLDER = "tuned"
FORMAT = 1


def gpu_slug(device_name: str) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'; '' -> 'cpu'."""
    slug = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    return slug or "cpu"


def pinned_path(family_dir: Path, device_name: str, variant: str, dtype: str,
                shape_slug: str) -> Path:
    return Path(family_dir) / FOLDER / gpu_slug(device_name) / variant / \
        f"{dtype}-{shape_slug}.json"


@dataclass(frozen=True)
class Pinned:
    """One pinned choice, with where it came from (the tune run) and how it was made."""

    family: str
    variant: str
    dtype: str
    shape: str  # Shape.text()
    gpu: str
    config: TuneConfig
    run: str = ""  # the tune run's folder
    rule: str = ""  # how it was picked among the tied
    tied: tuple[str, ...] = ()  # labels of the configs tied with it

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "family": self.family, "variant": self.variant,
                           "dtype": self.dtype, "shape": self.shape, "gpu": self.gpu,
                           "config": self.config.to_dict(), "run": self.run,
                           "rule": self.rule, "tied": list(self.tied)}, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Pinned:
        """Raises ValueError (with the reason) for a file this gpubench cannot read."""
        try:
            data = json.loads(text)
            if data.get("format") != FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {FORMAT}")
            return cls(data["family"], data["variant"], data["dtype"], data["shape"],
                       data["gpu"], TuneConfig.from_dict(data["config"]), data.get("run", ""),
                       data.get("rule", ""), tuple(data.get("tied") or ()))
        except (AttributeError, KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a pinned-config file ({type(exc).__name__}: {exc})") \
                from None


def find_config(pinned: Pinned, space: Sequence[TuneConfig]) -> TuneConfig | None:
    """The space's config with the pinned label, or None when the space no longer has it."""
    return next((c for c in space if c.label == pinned.config.label), None)
