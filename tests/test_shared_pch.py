"""The tests' shared folder of torch's precompiled headers (tests/conftest.py): kept between
sessions, so it must not grow without end, and the xdist controller's pre-build must know
whether this torch's frontend PCH is there."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from conftest import drop_orphaned_pchs, frontend_pch_made


def made_pch(folder: Path, name: str, header: Path) -> Path:
    pch = folder / name
    pch.mkdir()
    (pch / "pch.json").write_text(json.dumps({"recipe": {"header": str(header)}}))
    (folder / f"{name}.flock").touch()
    return pch


def test_a_pch_whose_header_is_gone_is_dropped_and_the_others_kept(tmp_path):
    header = tmp_path / "venv" / "extension.h"
    header.parent.mkdir()
    header.touch()
    folder = tmp_path / "gpubench-pch"
    folder.mkdir()
    kept = made_pch(folder, "kept", header)
    gone = made_pch(folder, "gone", tmp_path / "deleted-venv" / "extension.h")
    drop_orphaned_pchs(folder)
    assert kept.is_dir() and (folder / "kept.flock").exists()
    assert not gone.exists() and not (folder / "gone.flock").exists()


def test_the_pre_build_looks_for_this_torchs_frontend_pch(tmp_path):
    torch_dir = Path(importlib.util.find_spec("torch").submodule_search_locations[0])
    made_pch(tmp_path, "lean", torch_dir / "include" / "ATen" / "core" / "Tensor.h")
    made_pch(tmp_path, "other-venv", tmp_path / "torch" / "include" / "torch" / "extension.h")
    assert not frontend_pch_made(tmp_path)
    made_pch(tmp_path, "frontend", torch_dir / "include" / "torch" / "extension.h")
    assert frontend_pch_made(tmp_path)
