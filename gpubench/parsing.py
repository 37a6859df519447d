"""Parsing of the small values users type: sizes, dtypes, durations.

Pure functions, shared by the command line and the suite files, so that
`--sizes 2^20` and `sizes = ["2^20"]` mean the same thing and fail the same way.
"""

from __future__ import annotations

import re

from gpubench.errors import UsageError, did_you_mean

# Canonical dtype names are torch's attribute names; the aliases are what
# kernel engineers type. bf16/fp16/fp32 cover >95% of real use.
DTYPE_ALIASES = {
    "float32": "float32",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "float16": "float16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float64": "float64",
    "fp64": "float64",
    "double": "float64",
}

# Sizes are element counts or matrix edges. 2^40 elements of fp32 is 4 TiB,
# already beyond any GPU, so anything larger is certainly a typo.
MAX_SIZE = 2**40

# ASCII digits only: `\d` also matches other scripts' digits, which int() reads but no
# user means in a size.
_POWER = re.compile(r"^(\d+)\s*(?:\^|\*\*)\s*(\d+)$", re.ASCII)
# Binary multiples, as kernel engineers mean them: 4k = 4096 (a tile count, a
# head dim, a context length), 1M = 2^20 elements. 'm' is left out on purpose:
# it reads as milli as often as mega.
_SUFFIXES = {"k": 2**10, "K": 2**10, "M": 2**20, "G": 2**30}
_SCALED = re.compile(r"^(\d+)([kKMG])$", re.ASCII)
# More significant digits than 2^64 has are certainly too large: such numbers are not
# converted (int() refuses past 4300 digits, and is slow well before that).
_MAX_DIGITS = 20


def _digits(text: str) -> int:
    """An ASCII digit string as an int; one too long to be a size reads as too large."""
    significant = text.lstrip("+-").lstrip("0")
    return MAX_SIZE + 1 if len(significant) > _MAX_DIGITS else int(text)


def shown(text, limit: int = 40) -> str:
    """What a user typed, shortened for a message (a 5000-digit size is not echoed)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def parse_size(text: str) -> int:
    """One size: '4096', '2^20', '2**20', '16_777_216', '4k' (4096) or '1M' (2^20).
    Must be a positive integer."""
    raw = str(text).strip().replace("_", "")
    power = _POWER.match(raw)
    scaled = _SCALED.match(raw)
    if power:
        base, exp = _digits(power.group(1)), _digits(power.group(2))
        value = base**exp if exp <= 64 and base <= MAX_SIZE else MAX_SIZE + 1
    elif scaled:
        value = _digits(scaled.group(1)) * _SUFFIXES[scaled.group(2)]
    elif re.fullmatch(r"[+-]?[0-9]+", raw):
        value = _digits(raw)
    else:
        raise UsageError(
            f"invalid size '{shown(text)}': sizes are positive integers such as 4096, 2^20, "
            "4k or 1M"
        )
    if value <= 0:
        raise UsageError(f"invalid size '{shown(text)}': sizes must be positive")
    if value > MAX_SIZE:
        raise UsageError(f"invalid size '{shown(text)}': larger than 2^40, which no GPU "
                         "holds")
    return value


def parse_sizes(text: str | list | tuple) -> tuple[int, ...]:
    """A comma-separated list ('1024,4096') or a list of items; order kept, duplicates dropped."""
    items = text.split(",") if isinstance(text, str) else list(text)
    if not items or all(str(item).strip() == "" for item in items):
        raise UsageError("no sizes given: pass e.g. --sizes 1024,4096")
    sizes: list[int] = []
    for item in items:
        if str(item).strip() == "":
            raise UsageError(f"invalid size list '{text}': empty item between commas")
        size = parse_size(item)
        if size not in sizes:
            sizes.append(size)
    return tuple(sizes)


def parse_dtype(text: str) -> str:
    """A dtype name or alias -> canonical name ('bf16' -> 'bfloat16')."""
    key = str(text).strip().lower().removeprefix("torch.")
    if key not in DTYPE_ALIASES:
        hint = did_you_mean(key, DTYPE_ALIASES)
        raise UsageError(f"unknown dtype '{text}'{hint}; known: float32, float16, bfloat16")
    return DTYPE_ALIASES[key]


def parse_dtypes(text: str | list | tuple) -> tuple[str, ...]:
    """Comma-separated or list of dtypes, canonicalised, order kept, duplicates dropped."""
    items = text.split(",") if isinstance(text, str) else list(text)
    dtypes: list[str] = []
    for item in items:
        dtype = parse_dtype(item)
        if dtype not in dtypes:
            dtypes.append(dtype)
    if not dtypes:
        raise UsageError("no dtypes given: pass e.g. --dtype float32,bf16")
    return tuple(dtypes)


def split_names(values: tuple[str, ...] | list[str] | str | None) -> tuple[str, ...]:
    """Repeatable and comma-separated options alike: ('a,b', 'c') -> ('a', 'b', 'c')."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    names: list[str] = []
    for value in values:
        for name in str(value).split(","):
            name = name.strip()
            if name and name not in names:
                names.append(name)
    return tuple(names)


# Up to 2^16 a number reads at a glance (M=4096, cols=32768); past it, 2^20 beats 1048576.
_POWER_LABEL_FROM = 2**17


def format_size(size: int) -> str:
    """4096 -> '4096', 1048576 -> '2^20': large powers of two are how kernel people read sizes."""
    if size >= _POWER_LABEL_FROM and size & (size - 1) == 0:
        return f"2^{size.bit_length() - 1}"
    return str(size)
