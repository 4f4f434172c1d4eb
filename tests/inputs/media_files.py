"""Small photograph and recording folders written by the media tests (imported by test modules in this folder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def photos(folder: Path, n: int) -> None:
    """Write ``n`` random 40 × 40 RGB PNGs ``p0.png`` … into ``folder`` (created)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(folder / f"p{i}.png")


def recordings(folder: Path, n: int) -> None:
    """Write ``n`` one-second 16 kHz sine WAVs ``r0.wav`` … into ``folder`` (created)."""
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        soundfile.write(folder / f"r{i}.wav", 0.1 * np.sin(np.arange(16000) / (3.0 + i)).astype(np.float32), 16000)
