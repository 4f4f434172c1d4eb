"""A cache folder setting that is a symbolic link to nothing is named as such, not as "cannot write (File exists)"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("below", ["", "sub"], ids=["the-folder", "a-folder-on-its-way"])
def test_a_cache_folder_that_is_a_dangling_link_is_named_as_one(tmp_path, monkeypatch, capsys, below):
    link = tmp_path / "cache"
    os.symlink(tmp_path / "nonexistent-target", link)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(link / below) if below else str(link))
    assert main(["stats", "all-MiniLM-L6-v2", "--registry", str(ROOT / "models.yaml")]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "ANISO_CACHE_DIR" in lines[0], err
    assert f"{link} is a symbolic link to {tmp_path / 'nonexistent-target'}, which does not exist" in lines[0]
    assert not (tmp_path / "nonexistent-target").exists()
