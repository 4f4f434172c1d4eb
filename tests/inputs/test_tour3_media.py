"""Unusable photographs and recordings: a 0-byte file is called empty, each skipped file is one line of its own (no
line of the suite's source under it), and the header says how many of the files drawn were measured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import SkippedInput, load_images, load_speech

ROOT = Path(__file__).resolve().parents[2]


def _photos(folder: Path, n: int) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(folder / f"p{i}.png")


def test_the_header_says_how_many_of_the_drawn_photographs_were_measured(tmp_path):
    _photos(tmp_path, 4)
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "notes.png").write_text("not a photograph")
    with pytest.warns(SkippedInput) as seen:
        got = load_images(tmp_path, 6, 0)
    assert len(got.items) == 4
    assert "(2 unusable files skipped: 4 of the 6 drawn measured, none drawn in their place)" in got.label
    reasons = sorted(str(w.message) for w in seen)
    assert f"image_dir: skipped, measuring the rest: cannot read {tmp_path / 'empty.jpg'}: it is empty (0 bytes)" in reasons


def test_an_empty_recording_is_called_empty(tmp_path):
    import soundfile

    soundfile.write(tmp_path / "a.wav", 0.1 * np.sin(np.arange(16000) / 5.0).astype(np.float32), 16000)
    (tmp_path / "b.flac").write_bytes(b"")
    with pytest.warns(SkippedInput, match=r"b.flac: it is empty \(0 bytes\)"):
        got = load_speech(tmp_path, 2, 0)
    assert len(got.items) == 1 and "1 of the 2 drawn measured" in got.label


def test_a_skipped_file_is_one_line_on_the_console(tmp_path):
    """Python shows a warning with the source line it was raised from: once a second line of the suite's code
    (``return load_images(...)``) under each skipped file."""
    _photos(tmp_path, 2)
    (tmp_path / "empty.jpg").write_bytes(b"")
    code = f"from aniso.inputs.media import load_images; load_images({str(tmp_path)!r}, 3, 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{tmp_path / 'empty.jpg'}:0: SkippedInput: image_dir: "), lines
