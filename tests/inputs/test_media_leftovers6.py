"""Photographs and recordings that are no file to read (a symbolic link to itself or to nothing, a FIFO) are
sampled, skipped and named like any unusable file, not left out of the folder's listing unsaid."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso.inputs.media import SkippedInput, load_images, load_speech
from media_files import photos, recordings


def _unreadable_files(folder: Path, suffix: str) -> dict[str, str]:
    """A link to itself, a link to nothing and a FIFO, each with ``suffix``; their names -> what the skip says."""
    os.symlink(folder / f"loop{suffix}", folder / f"loop{suffix}")
    os.symlink(folder / f"gone{suffix}", folder / f"dangling{suffix}")
    os.mkfifo(folder / f"pipe{suffix}")
    return {f"loop{suffix}": "Too many levels of symbolic links (a symbolic link to itself, or a loop of links)",
            f"dangling{suffix}": "it is a symbolic link to nothing",
            f"pipe{suffix}": "it is a FIFO or pipe, not a regular file"}


def test_photographs_that_are_links_in_a_loop_to_nothing_or_fifos_are_skipped_and_named(tmp_path):
    photos(tmp_path, 3)
    expected = _unreadable_files(tmp_path, ".jpg")
    with pytest.warns(SkippedInput) as seen:
        got = load_images(tmp_path, 6, 0)
    assert len(got.items) == 3 and got.n_available == 6
    assert "(3 unusable files skipped: 3 of the 6 drawn measured, none drawn in their place)" in got.label
    messages = [str(w.message) for w in seen]
    for name, why in expected.items():
        assert any(f"image_dir: skipped, measuring the rest: cannot read {tmp_path / name}: {why}" in m
                   for m in messages), (name, messages)
    assert {name for name, _ in got.skipped} == set(expected)


def test_recordings_that_are_links_in_a_loop_to_nothing_or_fifos_are_skipped_and_named(tmp_path):
    recordings(tmp_path, 2)
    expected = _unreadable_files(tmp_path, ".wav")
    with pytest.warns(SkippedInput) as seen:
        got = load_speech(tmp_path, 5, 0)
    assert len(got.items) == 2
    assert "(3 unusable files skipped: 2 of the 5 drawn measured, none drawn in their place)" in got.label
    messages = [str(w.message) for w in seen]
    for name, why in expected.items():
        assert any(f"speech_dir: skipped, measuring the rest: cannot read {tmp_path / name}: {why}" in m
                   for m in messages), (name, messages)


def test_the_sample_of_a_folder_with_a_link_in_a_loop_has_a_fingerprint_and_keeps_its_identity(tmp_path):
    """The unreadable file counts in the folder's identity by its name (read without opening it), so adding one
    changes the dataset fingerprint, and the sample is the same on a second read."""
    photos(tmp_path, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedInput)
        before = load_images(tmp_path, 4, 0)
    os.symlink(tmp_path / "loop.jpg", tmp_path / "loop.jpg")
    with pytest.warns(SkippedInput):
        first = load_images(tmp_path, 4, 0)
    with pytest.warns(SkippedInput):
        second = load_images(tmp_path, 4, 0)
    assert first.dataset_fingerprint != before.dataset_fingerprint
    assert (first.fingerprint, first.dataset_fingerprint) == (second.fingerprint, second.dataset_fingerprint)



@settings(max_examples=15, deadline=None)
@given(good=st.integers(1, 3), loops=st.integers(0, 2), dangling=st.integers(0, 2))
def test_every_drawn_file_is_measured_or_named_as_skipped(good, loops, dangling):
    """Whatever mix of photographs and links that cannot be read a folder holds, each file drawn is either measured
    or skipped by name, and the header's counts add up."""
    import tempfile

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        photos(folder, good)
        for i in range(loops):
            os.symlink(folder / f"loop{i}.png", folder / f"loop{i}.png")
        for i in range(dangling):
            os.symlink(folder / f"gone{i}.png", folder / f"dangling{i}.png")
        drawn = good + loops + dangling
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SkippedInput)
            got = load_images(folder, drawn, 0)
        assert len(got.items) == good and got.n_available == drawn
        assert {n for n, _ in got.skipped} == {f"loop{i}.png" for i in range(loops)} | \
            {f"dangling{i}.png" for i in range(dangling)}
        if loops + dangling:
            assert f": {good} of the {drawn} drawn measured" in got.label
