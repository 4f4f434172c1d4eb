"""Photographs and recordings that cannot be read as files (a FIFO, a link to a device) or whose file name is not
UTF-8: each is skipped, named on one console line of its own, and counted in the header; nothing opens it, also not
the formatting of the warning that names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aniso.inputs.media import SkippedInput, load_images, load_speech
from media_files import photos, recordings

ROOT = Path(__file__).resolve().parents[2]


def _console(code: str) -> list[str]:
    """The stderr lines of ``code`` run in a fresh interpreter, whose warnings are shown as a run shows them (the
    formatter looks up each warning's source line); a subprocess, so that a file opened by mistake fails the test on
    the time-out instead of blocking the suite."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")
def test_a_fifo_and_a_link_to_a_device_among_photographs_are_named_on_the_console(tmp_path):
    photos(tmp_path, 3)
    os.mkfifo(tmp_path / "zz_fifo.jpg")
    (tmp_path / "zero.jpg").symlink_to("/dev/zero")
    lines = _console(f"from aniso.inputs.media import load_images; print(load_images({str(tmp_path)!r}, 8, 0).label)")
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{tmp_path / 'zero.jpg'}:0: SkippedInput: image_dir: ") and "is a device" in lines[0]
    assert lines[1].startswith(f"{tmp_path / 'zz_fifo.jpg'}:0: SkippedInput: image_dir: ") and "FIFO" in lines[1]


@pytest.mark.skipif(not os.path.exists("/dev/zero") or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")
def test_a_fifo_and_a_link_to_a_device_among_recordings_are_named_on_the_console(tmp_path):
    recordings(tmp_path, 2)
    os.mkfifo(tmp_path / "zz.wav")
    (tmp_path / "zero.wav").symlink_to("/dev/zero")
    code = (f"from aniso.inputs.media import load_speech; s = load_speech({str(tmp_path)!r}, 6, 0); "
            "import sys; print(s.label, file=sys.stderr)")
    lines = _console(code)
    assert [line.split(":0: SkippedInput: ")[0] for line in lines[:2]] == [str(tmp_path / "zero.wav"),
                                                                             str(tmp_path / "zz.wav")], lines
    assert lines[2].startswith("2 recordings") and "(2 unusable files skipped: 2 of the 4 drawn measured" in lines[2]


def test_a_photograph_whose_name_is_not_utf8_is_skipped_and_named_with_its_bytes_escaped(tmp_path):
    photos(tmp_path, 2)
    bad = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9_\xff.png")
    try:
        os.link(tmp_path / "p0.png", bad)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system takes no file names that are not UTF-8")
    with pytest.warns(SkippedInput) as seen:
        got = load_images(tmp_path, 8, 0)
    assert len(got.items) == 2 and "(1 unusable file skipped: 2 of the 3 drawn measured" in got.label
    shown = f"{tmp_path}/caf\\xe9_\\xff.png"
    assert [w.filename for w in seen] == [shown]
    assert f"cannot read {shown}: its file name is not UTF-8" in str(seen[0].message)
    json.dumps(got.describe(), ensure_ascii=False).encode("utf-8")  # results and the cache record it as text
    assert got.describe()["skipped"] == {"caf\\xe9_\\xff.png": str(seen[0].message).split("the rest: ", 1)[1]}


def test_a_name_that_is_not_utf8_counts_in_the_folder_fingerprint(tmp_path):
    photos(tmp_path, 2)
    before = load_images(tmp_path, 8, 0).dataset_fingerprint
    os.link(tmp_path / "p0.png", os.fsdecode(os.fsencode(tmp_path) + b"/x\xff.png"))
    with pytest.warns(SkippedInput):
        after = load_images(tmp_path, 8, 0).dataset_fingerprint
    assert after != before
