"""Corpora, recordings and photographs a reader would count otherwise than the suite did, without a word why.

Photographs and recordings of formats the loaders do not read (.webp, .bmp, .tiff, .gif, .svg; .ogg, .mp3) beside
those they read are named and counted, in one warning and in the set's label, not left out unsaid; a folder of only
such files is refused naming them. A corpus whose lines end in a lone CR (old Mac OS line ends), one saved as
UTF-32 (with or without its byte-order mark) and one of WikiText headings only are refused saying so, through
``aniso run``, ``aniso stats`` and ``aniso.measure``; and a long line of text that begins and ends with ``=`` is a
paragraph, not a WikiText heading. Each case is a row of docs/bad-input.md."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from aniso.cli import main
from aniso.inputs.media import InputsUnavailable, SkippedInput, load_images, load_speech
from aniso.inputs.text import KNOWN_CORPORA, CorpusError, _fingerprint, corpus_paragraphs, wikitext_paragraphs

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = str(ROOT / "models.yaml")
PARAGRAPHS = [f"Paragraph {i} of the corpus holds a few words of its own , number {i} ." for i in range(20)]


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
    said = [(str(w.message), w.filename, w.lineno) for w in seen if issubclass(w.category, SkippedInput)]
    assert said == [(f"image_dir: {note}", str(tmp_path), 0)], said  # one line: "FOLDER:0: SkippedInput: ..."


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


def _write(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A corpus file of ``case`` and what its refusal must say."""
    path = tmp_path / f"{case}.txt"
    text = "\n".join(PARAGRAPHS) + "\n"
    if case == "cr":
        path.write_bytes(("\r".join(PARAGRAPHS) + "\r").encode())
        return path, ("has 1 paragraph(s); at least 2 distinct are needed: its lines end in a lone carriage return "
                      "(\\r, old Mac OS line ends: 20 of them), and a line of a corpus ends in \\n or \\r\\n; convert "
                      "them, e.g. tr '\\r' '\\n' < cr.txt > cr-lf.txt")
    if case == "utf32":
        path.write_text(text, encoding="utf-32")
        return path, ("is not UTF-8 text: it is UTF-32 (with its byte-order mark); save it as UTF-8 (e.g. iconv -f "
                      "UTF-32 -t UTF-8)")
    if case == "utf32le":
        path.write_bytes(text.encode("utf-32-le"))
        return path, ("is not UTF-8 text: it is UTF-32LE (no byte-order mark: three NUL bytes beside each Latin "
                      "letter); save it as UTF-8 (e.g. iconv -f UTF-32LE -t UTF-8)")
    if case == "utf32be":
        path.write_bytes(text.encode("utf-32-be"))
        return path, ("is not UTF-8 text: it is UTF-32BE (no byte-order mark: three NUL bytes beside each Latin "
                      "letter); save it as UTF-8 (e.g. iconv -f UTF-32BE -t UTF-8)")
    assert case == "headings"
    path.write_text("\n".join(f" = Heading {i} = " for i in range(20)) + "\n")
    return path, ("has 0 paragraph(s); at least 2 distinct are needed: all its 20 non-blank lines are WikiText "
                  "headings (lines that begin and end with '=', like ' = Title = '), which are not paragraphs")


CASES = ["cr", "utf32", "utf32le", "utf32be", "headings"]


@pytest.mark.parametrize("case", CASES)
def test_a_corpus_of_lone_cr_lines_utf32_or_headings_only_is_refused_saying_why(tmp_path, case):
    path, why = _write(tmp_path, case)
    with pytest.raises(CorpusError) as refused:
        corpus_paragraphs(path)
    assert str(refused.value) == f"corpus file {path} {why}"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", ["run", "stats"])
def test_the_corpus_refusals_are_one_line_through_aniso_run_and_stats(clean_env, monkeypatch, capsys, case, command):
    path, why = _write(clean_env, case)
    monkeypatch.setenv("ANISO_CORPUS", str(path))
    assert main([command, "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out + err, err[-3000:]
    assert str(path) in lines[0] and why in lines[0], lines[0]


@pytest.mark.parametrize("case", CASES)
def test_the_corpus_refusals_are_one_value_error_through_measure(clean_env, case):
    import aniso

    path, why = _write(clean_env, case)
    with pytest.raises(ValueError) as refused:
        aniso.measure("all-MiniLM-L6-v2", str(path), n_inputs=8, progress=False)
    assert str(path) in str(refused.value) and why in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_long_line_that_begins_and_ends_with_equals_is_a_paragraph_not_a_heading():
    long_line = "= " + " ".join(f"word{i}" for i in range(300_000)) + " ="
    text = "\n".join([" = Title = ", " = = Section = = ", long_line, PARAGRAPHS[0]]) + "\n"
    assert wikitext_paragraphs(text) == [long_line, PARAGRAPHS[0]]


@pytest.mark.skipif(not os.environ.get("ANISO_CORPUS", "").endswith("wiki.valid.tokens")
                    or not os.path.isfile(os.environ.get("ANISO_CORPUS", "")),
                    reason="needs ANISO_CORPUS set to WikiText's wiki.valid.tokens")
def test_the_wikitext_validation_file_reads_the_same_paragraphs_as_before_the_heading_bound():
    """Its 620 headings are all at most 70 characters: the paragraphs read are those the suite knows it by."""
    paragraphs = corpus_paragraphs(os.environ["ANISO_CORPUS"])
    assert _fingerprint(paragraphs) in KNOWN_CORPORA
