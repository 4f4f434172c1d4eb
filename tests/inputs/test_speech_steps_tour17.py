"""A recording of constant stretches (1 s of zero, then 2 s of a constant 0.5: no sound, one step) was measured as
speech, the constant-offset rule seeing it vary: silence is also judged by how long the samples change from one to
the next, so it is skipped and named; speech with long pauses is still read."""

from __future__ import annotations

import numpy as np
import pytest

from aniso.inputs.media import SkippedInput, load_speech


def _write(path, audio, rate=16_000):
    import soundfile

    soundfile.write(path, audio, rate)


def _tone(seconds, rate=16_000):
    t = np.arange(int(seconds * rate)) / rate
    return 0.3 * np.sin(2 * np.pi * 220 * t)


@pytest.mark.parametrize("name, audio", [
    ("step.wav", np.concatenate([np.zeros(16_000), np.full(32_000, 0.5)])),
    ("stairs.wav", np.repeat([0.0, 0.2, -0.1, 0.4, 0.1], 8_000)),
])
def test_a_recording_of_constant_stretches_is_skipped_as_silent(tmp_path, name, audio):
    _write(tmp_path / "speech.wav", _tone(1.0))
    _write(tmp_path / name, audio)
    with pytest.warns(SkippedInput, match=name.replace(".", r"\.") + r" is silent \(.*constant stretches: its "
                                          r"samples change within 20 ms in [\d.e-]+ s of it; at least 0\.1 s "
                                          r"of sound needed\)"):
        got = load_speech(tmp_path, 5, 0)
    assert got.names == ("speech.wav",)


def test_speech_with_long_pauses_is_read(tmp_path):
    _write(tmp_path / "a.wav", np.concatenate([np.zeros(32_000), _tone(0.2), np.zeros(32_000)]))
    _write(tmp_path / "b.wav", _tone(1.0))
    assert load_speech(tmp_path, 5, 0).names == ("a.wav", "b.wav")


def test_quiet_speech_and_a_square_wave_sound(tmp_path):
    """Speech scaled down 1,000 times (a float WAV, peak under 0.001: it changes at every sample by less than an int16
    step) and a loud 100 Hz square wave (held between its edges) are sound, measured as such; the constant-stretch rule
    had skipped them as silent."""
    import soundfile

    soundfile.write(tmp_path / "quiet.wav", 0.001 * _tone(1.0) * np.random.default_rng(0).uniform(0.5, 1, 16_000),
                    16_000, subtype="FLOAT")
    t = np.arange(48_000) / 16_000
    _write(tmp_path / "square.wav", 0.5 * np.sign(np.sin(2 * np.pi * 100 * t)))
    assert load_speech(tmp_path, 5, 0).names == ("quiet.wav", "square.wav")
