"""Helpers of the model-folder tests: a copy of a model folder (the tiny BERT) with its config edited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def copy_folder(source: Path, tmp_path: Path, name: str) -> Path:
    """A copy of the folder ``source`` as ``tmp_path / name``."""
    folder = tmp_path / name
    shutil.copytree(source, folder)
    return folder


def edit_config(folder: Path, **changes) -> None:
    """``folder``'s config.json with ``changes`` set."""
    path = folder / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | changes), encoding="utf-8")
