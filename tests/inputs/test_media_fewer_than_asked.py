"""A folder holding fewer photographs or recordings than the setting asks for: every one is measured, and the label
says how many were asked (the corpus says "only 381 paragraphs, 5000 requested"; a folder of 12 photographs at
``n_images`` 500 was labelled "12 photographs from FOLDER" alone)."""

from __future__ import annotations

import numpy as np
import pytest

from aniso.inputs.media import load_images, load_speech


def _photos(folder, n):
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(folder / f"p{i}.png")


def test_a_folder_of_fewer_photographs_than_asked_says_so(tmp_path):
    _photos(tmp_path / "img", 3)
    got = load_images(tmp_path / "img", 500, 0)
    assert len(got.items) == 3
    assert "3 photographs from" in got.label
    assert "only 3 photographs in the folder, 500 requested (setting n_images)" in got.label
    assert "requested" not in load_images(tmp_path / "img", 3, 0).label


def test_a_folder_of_fewer_recordings_than_asked_says_so(tmp_path):
    soundfile = pytest.importorskip("soundfile")
    folder = tmp_path / "speech"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(2):
        soundfile.write(folder / f"c{i}.wav", rng.normal(0, 0.1, 16_000).astype(np.float32), 16_000)
    got = load_speech(folder, 32, 0)
    assert "only 2 recordings in the folder, 32 requested (setting n_clips)" in got.label
    assert "requested" not in load_speech(folder, 2, 0).label
