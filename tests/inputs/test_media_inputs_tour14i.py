"""A float recording far beyond full scale (peak 1000 where full scale is 1) and a WAV whose header says 1 Hz are
skipped and named as broken recordings are (they were measured as speech); a recording clipped a little above full
scale, or at 8 kHz, is read."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from aniso.inputs import media
from aniso.inputs.media import load_speech

T = np.arange(16000) / 16000
TONE = np.sin(2 * np.pi * 220 * T)


def _good(folder):
    soundfile.write(folder / "good.wav", (0.3 * TONE).astype(np.float32), 16000, subtype="FLOAT")


def test_a_float_recording_a_thousand_times_full_scale_is_skipped_and_named(tmp_path):
    _good(tmp_path)
    soundfile.write(tmp_path / "loud.wav", (1000 * 0.999 * TONE).astype(np.float32), 16000, subtype="FLOAT")
    with pytest.warns(Warning, match=r"loud\.wav has samples of magnitude up to 999, beyond full scale; .*at most "
                                     "4 times full scale"):
        got = load_speech(tmp_path, 2, 0)
    assert len(got.items) == 1 and "loud.wav" in dict(got.skipped)


def test_a_wav_whose_header_says_1_hz_is_skipped_and_named(tmp_path):
    _good(tmp_path)
    soundfile.write(tmp_path / "rate1.wav", (0.3 * TONE[:20000]).astype(np.float32), 1, subtype="PCM_16")
    with pytest.warns(Warning, match=r"rate1\.wav has sample rate 1 Hz; a recording of speech is read at 8,000 to "
                                     r"192,000 Hz"):
        got = load_speech(tmp_path, 2, 0)
    assert len(got.items) == 1 and "rate1.wav" in dict(got.skipped)
    assert media.SAMPLE_RATES == (8_000, 192_000) and media.MAX_AMPLITUDE == 4


def test_a_little_clipping_and_telephone_rate_are_read(tmp_path):
    soundfile.write(tmp_path / "clipped.wav", (1.5 * TONE).astype(np.float32), 16000, subtype="FLOAT")
    t8 = np.arange(8000) / 8000
    soundfile.write(tmp_path / "phone.wav", (0.3 * np.sin(2 * np.pi * 220 * t8)).astype(np.float32), 8000)
    got = load_speech(tmp_path, 2, 0)
    assert len(got.items) == 2 and not got.skipped
