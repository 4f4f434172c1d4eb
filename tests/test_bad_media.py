"""Bad recordings and photographs: high-bit images are scaled, not clipped; huge images and decompression bombs are
refused from their header; one unusable file is skipped, counted and named, and only a sample without a usable
file is an error."""

from __future__ import annotations

import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import InputsUnavailable, SkippedInput, load_images, load_speech


def _gradient16() -> np.ndarray:
    """A 64 x 256 16-bit horizontal gradient over the whole 0..65535 range."""
    row = np.round(np.linspace(0, 65535, 256)).astype(np.uint16)
    return np.tile(row, (64, 1))


def _png_header_only(path: Path, width: int, height: int, mode: int = 0) -> None:
    """A PNG whose header claims ``width`` x ``height`` (8-bit greyscale) and whose data is one empty row: the
    size is all Pillow reads before decoding, so nothing large is written or allocated."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, mode, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
                     + chunk(b"IEND", b""))


# -- 1. high-bit images ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I"])
def test_a_16_bit_greyscale_photograph_is_scaled_not_clipped(tmp_path, mode):
    """A 16-bit gradient gives the pixels of its 8-bit version (within 1/255), not an all-white image."""
    from PIL import Image

    g16 = _gradient16()
    if mode == "I":  # how some Pillow versions open 16-bit PNGs: 32-bit integers in 0..65535
        im16 = Image.fromarray(g16.astype(np.int32), "I")
    else:
        im16 = Image.new(mode, (g16.shape[1], g16.shape[0]))
        im16.frombytes(g16.astype(">u2" if mode == "I;16B" else "<u2").tobytes())
    (tmp_path / "16").mkdir()
    if mode == "I;16":
        im16.save(tmp_path / "16" / "g.png")  # a real 16-bit PNG file
    else:
        im16.save(tmp_path / "16" / "g.tiff")
        (tmp_path / "16" / "g.tiff").rename(tmp_path / "16" / "g.png")  # Pillow reads it by its content
    g8 = np.round(g16 / 257).astype(np.uint8)
    (tmp_path / "8").mkdir()
    Image.fromarray(g8, "L").save(tmp_path / "8" / "g.png")

    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedInput)
        got16 = np.asarray(load_images(tmp_path / "16", 1, 0).items[0], dtype=float)
        got8 = np.asarray(load_images(tmp_path / "8", 1, 0).items[0], dtype=float)
    assert got16.shape == got8.shape == (64, 256, 3)
    assert np.abs(got16 - got8).max() <= 1, "16-bit and 8-bit versions differ by more than 1/255"
    assert got16.min() == 0 and got16.max() == 255 and got16.mean() < 200  # the whole range, not white


def test_a_float_image_is_skipped_naming_its_mode(tmp_path):
    from PIL import Image

    Image.fromarray(np.linspace(0, 3, 64 * 64, dtype=np.float32).reshape(64, 64), "F").save(tmp_path / "f.tiff")
    (tmp_path / "f.tiff").rename(tmp_path / "f.png")
    with pytest.warns(SkippedInput), pytest.raises(InputsUnavailable, match=r"f\.png is a floating-point image"):
        load_images(tmp_path, 1, 0)


# -- 2. huge images and decompression bombs -------------------------------------------------------------------------

@pytest.mark.parametrize("side", [12_000, 10_000, 20_000])
def test_a_decompression_bomb_is_refused_from_its_header(tmp_path, side):
    """A 12,000 x 12,000 header (432 MB once decoded as RGB) is refused before decoding, naming the file, whatever
    the cap: Pillow's warning (above 89 M pixels: 10,000 and 12,000 a side) is an error here, as is its error (above
    179 M: 20,000 a side)."""
    _png_header_only(tmp_path / "huge.png", side, side)
    for cap in (None, 10**12):
        with pytest.warns(SkippedInput, match=r"huge\.png is refused as a decompression bomb"), \
                pytest.raises(InputsUnavailable, match=r"huge\.png is refused as a decompression bomb"):
            load_images(tmp_path, 1, 0, **({"max_pixels": cap} if cap else {}))


def test_a_uniform_image_under_pillows_limit_but_above_the_cap_is_skipped(tmp_path):
    """A real 9,000 x 9,000 file (a few KB: uniform) under Pillow's limit but above the cap is skipped; the setting
    raises the cap."""
    from PIL import Image

    from aniso.common.settings import Settings

    Image.new("L", (9000, 9000), 7).save(tmp_path / "big.png")
    Image.new("RGB", (32, 32), (1, 2, 3)).save(tmp_path / "ok.png")
    assert (tmp_path / "big.png").stat().st_size < 200_000
    with pytest.warns(SkippedInput, match=r"big\.png is 9000 x 9000 pixels"):
        got = load_images(tmp_path, 2, 0, max_pixels=Settings().max_image_pixels)
    assert got.names == ("ok.png",) and got.describe()["n_skipped"] == 1
    assert Settings.from_sources({}, {"ANISO_MAX_IMAGE_PIXELS": "100000000"}).max_image_pixels == 10**8


# -- 3. one bad file never loses the sample --------------------------------------------------------------------------

def _wav(path: Path, audio: np.ndarray, rate: int = 16_000) -> None:
    import soundfile

    soundfile.write(path, audio, rate)


def test_unusable_photographs_are_skipped_counted_and_named(tmp_path):
    from PIL import Image

    for i in range(3):
        Image.new("RGB", (16, 16), (40 * i, 0, 0)).save(tmp_path / f"good{i}.png")
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "corrupt.jpg").write_bytes(b"\xff\xd8\xff not a jpeg")
    Image.new("RGB", (4, 4)).save(tmp_path / "tiny.png")
    with pytest.warns(SkippedInput) as seen:
        got = load_images(tmp_path, 10, 0)
    messages = " | ".join(str(w.message) for w in seen)
    assert "skipped" in messages and all(n in messages for n in ("empty.jpg", "corrupt.jpg", "tiny.png"))
    assert got.names == ("good0.png", "good1.png", "good2.png") and len(got.items) == 3
    described = got.describe()
    assert described["n_items"] == 3 and described["n_skipped"] == 3
    assert set(described["skipped"]) == {"empty.jpg", "corrupt.jpg", "tiny.png"}
    assert "cannot read" in described["skipped"]["empty.jpg"] and "4 x 4 pixels" in described["skipped"]["tiny.png"]
    assert "3 unusable files skipped" in got.label


def test_unusable_recordings_are_skipped_counted_and_named(tmp_path):
    t = np.arange(16_000) / 16_000
    _wav(tmp_path / "speech.wav", 0.3 * np.sin(2 * np.pi * 220 * t))
    _wav(tmp_path / "blip.wav", 0.3 * np.ones(10))  # 10 samples: shorter than one frame
    _wav(tmp_path / "header-only.wav", np.zeros(0))
    _wav(tmp_path / "silent.wav", np.zeros(16_000))
    (tmp_path / "zero.flac").write_bytes(b"")
    with pytest.warns(SkippedInput) as seen:
        got = load_speech(tmp_path, 10, 0)
    assert got.names == ("speech.wav",) and got.describe()["n_skipped"] == 4
    reasons = got.describe()["skipped"]
    assert "too short" in reasons["blip.wav"] and "empty" in reasons["header-only.wav"]
    assert "is silent" in reasons["silent.wav"] and "cannot read" in reasons["zero.flac"]
    assert len(seen) == 4 and "4 unusable files skipped" in got.label


def test_a_sample_without_a_usable_file_is_an_error_listing_every_reason(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"")
    (tmp_path / "b.png").write_bytes(b"\x89PNG broken")
    with pytest.warns(SkippedInput), pytest.raises(InputsUnavailable) as exc:
        load_images(tmp_path, 5, 0)
    message = str(exc.value)
    assert "\n" not in message and message.startswith("image_dir: no usable photograph among the 2 sampled")
    assert "a.jpg" in message and "b.png" in message


def test_training_photographs_leave_out_the_skipped_ones(tmp_path):
    """The miniatures' training set (photographs not measured) neither re-reads nor warns about a file the measured
    sample already skipped."""
    from PIL import Image

    from aniso.inputs.media import load_images_excluding

    for i in range(4):
        Image.new("RGB", (16, 16), (40 * i, 0, 0)).save(tmp_path / f"{i}.png")
    (tmp_path / "empty.jpg").write_bytes(b"")
    with pytest.warns(SkippedInput):
        measured = load_images(tmp_path, 5, 0)
    assert len(measured.items) == 4
    Image.new("RGB", (16, 16)).save(tmp_path / "new.png")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedInput)
        assert load_images_excluding(measured).names == ("new.png",)
