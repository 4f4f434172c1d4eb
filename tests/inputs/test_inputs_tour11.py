"""Corpora, recordings and photographs a reader would count otherwise than the suite did, without a word why.

Photographs and recordings of formats the loaders do not read (.webp, .bmp, .tiff, .gif, .svg; .ogg, .mp3) beside
those they read are named and counted, in one warning and in the set's label, not left out unsaid; a folder of only
such files is refused naming them. A corpus whose lines end in a lone CR (old Mac OS line ends), one saved as
UTF-32 (with or without its byte-order mark) and one of WikiText headings only are refused saying so, through
``aniso run``, ``aniso stats`` and ``aniso.measure``; and a long line of text that begins and ends with ``=`` is a
paragraph, not a WikiText heading. Each case is a row of docs/bad-input.md."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from aniso.inputs.media import InputsUnavailable, SkippedInput, load_images, load_speech


def _photos(folder: Path, n: int) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(folder / f"p{i}.jpg")


def test_photographs_of_formats_not_read_are_named_and_counted(tmp_path):
    from PIL import Image

    _photos(tmp_path, 6)
    photo = Image.open(tmp_path / "p0.jpg").convert("RGB")
    photo.save(tmp_path / "a.webp")
    photo.save(tmp_path / "b.bmp")
    photo.save(tmp_path / "c.tiff")
    photo.save(tmp_path / "d.gif")
    (tmp_path / "README.txt").write_text("Photographs of the tour.\n")  # no photograph: not counted
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = load_images(tmp_path, 16, 0)
    assert len(got.items) == 6
    note = ("4 files left out: photographs of formats this suite does not read (.bmp x1, .gif x1, .tiff x1, .webp x1: "
            "a.webp, b.bmp, c.tiff, d.gif); it reads .jpg/.jpeg/.png")
    assert note in got.label, got.label
    said = [str(w.message) for w in seen if issubclass(w.category, SkippedInput)]
    assert said == [f"image_dir: {note}"], said


def test_a_folder_of_svg_only_is_refused_naming_them_and_an_svg_beside_photographs_is_counted(tmp_path):
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40"/></svg>\n'
    only = tmp_path / "only"
    only.mkdir()
    (only / "x.svg").write_text(svg)
    with pytest.raises(InputsUnavailable, match=r"image_dir: no \.jpg/\.jpeg/\.png files under .*only \(1 file left "
                       r"out: photographs of formats this suite does not read \(\.svg x1: x\.svg\)"):
        load_images(only, 16, 0)
    beside = tmp_path / "beside"
    _photos(beside, 3)
    (beside / "x.svg").write_text(svg)
    with pytest.warns(SkippedInput, match=r"1 file left out: photographs of formats this suite does not read"):
        got = load_images(beside, 16, 0)
    assert len(got.items) == 3 and "(.svg x1: x.svg)" in got.label


def test_recordings_of_formats_not_read_are_named_and_counted(tmp_path):
    import soundfile

    for i in range(3):
        soundfile.write(tmp_path / f"r{i}.flac", 0.1 * np.sin(np.arange(16000) / (3.0 + i)), 16000)
    wave = 0.1 * np.sin(np.arange(16000) / 7.0)
    soundfile.write(tmp_path / "v.ogg", wave, 16000, format="OGG", subtype="VORBIS")
    (tmp_path / "m.mp3").write_bytes(b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(200))
    (tmp_path / "84-121123.trans.txt").write_text("84-121123-0000 GO DO YOU HEAR\n")  # a transcript: not counted
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = load_speech(tmp_path, 16, 0)
    assert len(got.items) == 3
    note = ("2 files left out: recordings of formats this suite does not read (.mp3 x1, .ogg x1: m.mp3, v.ogg); "
            "it reads .flac/.wav")
    assert note in got.label, got.label
    said = [str(w.message) for w in seen if issubclass(w.category, SkippedInput)]
    assert said == [f"speech_dir: {note}"], said
