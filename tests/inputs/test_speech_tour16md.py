"""A recording of a constant (a DC offset, no sound) was measured as speech, where an all-zero one is skipped as
silent: it is skipped and named the same way."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import SkippedInput, load_speech


def _sound(path: Path, audio: np.ndarray, rate: int = 16_000) -> None:
    import soundfile

    soundfile.write(path, audio, rate)


def _speech_like(seconds: float = 1.0, rate: int = 16_000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t)) / 2


@pytest.mark.parametrize("name, audio, rate", [
    ("dc.flac", np.full(5 * 16_000, 0.5), 16_000),  # the case found: 5 s of a constant 0.5
    ("low.wav", np.full(16_000, -0.25), 44_100),  # resampled: the filter's ringing at the ends is no sound
    ("stereo.wav", np.full((16_000, 2), [0.1, -0.2]), 16_000),
])
def test_a_recording_of_a_constant_is_skipped_as_silent_and_named(tmp_path, name, audio, rate):
    _sound(tmp_path / "speech.wav", _speech_like())
    _sound(tmp_path / name, audio, rate)
    with pytest.warns(SkippedInput, match=name.replace(".", r"\.") + " is silent"):
        got = load_speech(tmp_path, 5, 0)
    assert got.names == ("speech.wav",)
    reason = got.describe()["skipped"][name]
    assert "a constant offset" in reason and "s of sound needed" in reason, reason


def test_sound_on_a_dc_offset_is_read(tmp_path):
    _sound(tmp_path / "offset.wav", 0.4 + _speech_like())
    assert load_speech(tmp_path, 5, 0).names == ("offset.wav",)


def test_an_all_zero_recording_is_still_named_silent_with_peak_0(tmp_path):
    _sound(tmp_path / "speech.wav", _speech_like())
    _sound(tmp_path / "silent.wav", np.zeros(16_000))
    with pytest.warns(SkippedInput):
        got = load_speech(tmp_path, 5, 0)
    assert got.describe()["skipped"]["silent.wav"].endswith("is silent (1 s, peak 0; at least 0.1 s of sound needed)")


@pytest.mark.skipif(not os.environ.get("ANISO_SPEECH_DIR"), reason="needs ANISO_SPEECH_DIR (real recordings)")
def test_every_real_recording_of_the_speech_folder_is_read():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedInput)
        got = load_speech(os.environ["ANISO_SPEECH_DIR"], 10_000, 0)
    assert got.describe()["n_skipped"] == 0 and len(got.items) == got.n_available
