"""Speech and image inputs: seeded samples, 16 kHz audio, RGB photographs, dataset identity, fallback, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import InputsUnavailable, load_images, load_speech


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


SPEECH = SHARED / "speech"


IMAGES = SHARED / "images" / "caltech101"


needs_speech = pytest.mark.skipif(not SPEECH.is_dir(), reason=f"real recordings not found at {SPEECH}")


needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason=f"real photographs not found at {IMAGES}")


@needs_speech
def test_speech_sample_is_seeded_and_16k():
    a = load_speech(SPEECH, 3, seed=1)
    b = load_speech(SPEECH, 3, seed=1)
    c = load_speech(SPEECH, 3, seed=2)
    assert a.names == b.names and a.fingerprint == b.fingerprint and a.names != c.names
    assert all(x.dtype == np.float32 and x.ndim == 1 and 0 < len(x) <= 30 * 16_000 for x in a.items)


def test_speech_resampled_to_16k(tmp_path):
    soundfile = pytest.importorskip("soundfile")
    t = np.arange(8000) / 8000
    soundfile.write(tmp_path / "tone.wav", np.sin(2 * np.pi * 440 * t).astype(np.float32), 8000)
    clip = load_speech(tmp_path, 1, 0).items[0]
    assert len(clip) == 16_000
    spectrum = np.abs(np.fft.rfft(clip))
    assert abs(int(np.argmax(spectrum)) - 440) <= 1  # 1 s at 16 kHz: bin k is k Hz


def test_missing_inputs_name_the_setting(tmp_path):
    with pytest.raises(InputsUnavailable, match="speech_dir: .* is not a folder"):
        load_speech(tmp_path / "nope", 2, 0)
    with pytest.raises(InputsUnavailable, match="image_dir: no .jpg"):
        load_images(tmp_path, 2, 0)
    with pytest.raises(InputsUnavailable, match="ANISO_SPEECH_DIR"):
        load_speech(None, 2, 0, hub_reachable=False)


@needs_images
def test_image_sample_is_seeded_rgb():
    a = load_images(IMAGES, 4, seed=0)
    assert a.names == load_images(IMAGES, 4, seed=0).names and len(a.items) == 4
    assert all(im.mode == "RGB" for im in a.items) and a.n_available >= 4


def test_dataset_identity_does_not_depend_on_the_sample(tmp_path):
    """Two samples of one folder share the dataset identity (what verdicts are recorded on); another folder does
    not."""
    from PIL import Image

    for i in range(4):
        Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(tmp_path / f"{i}.png")
    a, b = load_images(tmp_path, 2, seed=0), load_images(tmp_path, 3, seed=1)
    assert a.fingerprint != b.fingerprint and a.dataset == b.dataset
    assert a.describe()["dataset"] == a.dataset
    Image.new("RGB", (8, 8)).save(tmp_path / "4.png")
    assert load_images(tmp_path, 2, seed=0).dataset != a.dataset


def test_fallback_images_ship_with_the_install():
    """Without a folder the embedded scikit-image photographs are used, labelled as the fallback, all RGB."""
    pytest.importorskip("skimage")
    fallback = load_images(None, 192, seed=0)
    assert fallback.is_fallback and "FALLBACK IMAGES" in fallback.label
    assert len(fallback.items) == 12 and all(im.mode == "RGB" for im in fallback.items)
    assert fallback.dataset.startswith("skimage-data@scikit-image-")
