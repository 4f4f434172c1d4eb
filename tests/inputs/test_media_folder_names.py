"""Photograph and recording folders whose file names hold control characters, or whose sub-folder chains are
deeper than the system lets a path be: named in one line each, never printed raw, never a traceback."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from aniso.inputs.media import SkippedInput, load_images, load_speech
from media_files import photos, recordings

_ODD = "bad\x1b[31mRED\nline2"


@pytest.mark.parametrize("kind", ["image", "speech"])
def test_a_skipped_file_whose_name_holds_a_terminal_escape_and_a_line_end_is_shown_escaped(kind, tmp_path):
    if kind == "image":
        photos(tmp_path, 3)
        (tmp_path / f"{_ODD}.png").write_bytes(b"not an image")
        load = lambda: load_images(tmp_path, 4, 0)  # noqa: E731
    else:
        recordings(tmp_path, 2)
        (tmp_path / f"{_ODD}.wav").write_bytes(b"not a recording")
        load = lambda: load_speech(tmp_path, 3, 0)  # noqa: E731
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = load()
    skipped = [w for w in seen if issubclass(w.category, SkippedInput)]
    assert len(skipped) == 1, [str(w.message) for w in seen]
    shown = warnings.formatwarning(skipped[0].message, skipped[0].category, skipped[0].filename,
                                   skipped[0].lineno, "")
    assert "\x1b" not in shown and shown.count("\n") == 1  # one line, ending in its line end
    assert "bad\\x1b[31mRED\\nline2" in skipped[0].filename
    assert "bad\\x1b[31mRED\\nline2" in str(skipped[0].message)
    assert [name for name, _ in got.skipped] == [f"bad\\x1b[31mRED\\nline2.{'png' if kind == 'image' else 'wav'}"]


def _too_deep(folder: Path) -> None:
    """A chain of sub-folders whose path is longer than PATH_MAX (4096 bytes on Linux), made step by step."""
    here = os.getcwd()
    try:
        os.chdir(folder)
        for _ in range(25):
            os.mkdir("d" * 200)
            os.chdir("d" * 200)
    finally:
        os.chdir(here)


@pytest.mark.parametrize("kind", ["image", "speech"])
def test_a_folder_holding_a_chain_of_sub_folders_deeper_than_a_path_may_be_is_named_in_one_line(kind, tmp_path):
    from aniso.inputs.media import InputsUnavailable

    folder = tmp_path / "deep"
    (photos if kind == "image" else recordings)(folder, 3)
    _too_deep(folder)
    with pytest.raises(InputsUnavailable) as caught:
        (load_images if kind == "image" else load_speech)(folder, 3, 0)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"{kind}_dir: the folder {folder} holds a chain of sub-folders deeper than the system "
                              "lets a path be (File name too long)")


def test_hub_import_of_such_a_folder_is_refused_alike_writing_nothing(tmp_path):
    from aniso.sources.hubcache import HubCacheError, import_folder

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    _too_deep(folder)
    with pytest.raises(HubCacheError) as caught:
        import_folder("me/x", folder, cache_dir=tmp_path / "hc")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"the folder {folder} holds a chain of sub-folders deeper than the system lets a path be")
    assert not (tmp_path / "hc" / "models--me--x").exists()
