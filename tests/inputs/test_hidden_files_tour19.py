"""Tour 19: a photograph folder holding a hidden thumbnail cache (``.thumbnails/``) was measured mostly from the
thumbnails, labelled "8 photographs from FOLDER"; macOS's ``__MACOSX/._*`` resource forks were drawn into the sample
and then skipped, leaving fewer inputs than there were. Hidden files are no inputs: left out before the sample, and
named and counted in the set's label and one warning."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile
from PIL import Image

from aniso.inputs.media import InputsUnavailable, load_images, load_speech


def _photo(path, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(path)


def test_hidden_photographs_are_left_out_and_named(tmp_path):
    for i in range(4):
        _photo(tmp_path / f"p{i}.jpg", i)
        _photo(tmp_path / ".thumbnails" / f"t{i}.jpg", 10 + i)
    _photo(tmp_path / "__MACOSX" / "._p0.jpg", 20)
    _photo(tmp_path / "sub" / ".hidden.png", 21)
    with pytest.warns(Warning, match=r"6 hidden files left out \(a name or folder beginning with '\.', or a system "
                                        r"folder: __MACOSX, @eaDir, #recycle, .*: "):
        got = load_images(tmp_path, 8, 0)
    assert sorted(got.names) == [f"p{i}.jpg" for i in range(4)] and got.n_available == 4
    assert "4 photographs from" in got.label and "6 hidden files left out" in got.label


def test_a_folder_of_hidden_recordings_only_is_refused_naming_them(tmp_path):
    (tmp_path / ".cache").mkdir()
    soundfile.write(tmp_path / ".cache" / "a.wav", 0.3 * np.sin(np.arange(16000) / 10), 16000)
    with pytest.raises(InputsUnavailable, match=r"no \.flac/\.wav files under .* \(1 hidden file left out .*"
                                                r"\.cache/a\.wav\)"):
        load_speech(tmp_path, 4, 0)


def test_a_hidden_folder_given_as_the_folder_itself_is_read(tmp_path):
    folder = tmp_path / ".photos"
    for i in range(2):
        _photo(folder / f"p{i}.png", i)
    assert len(load_images(folder, 8, 0).items) == 2


@pytest.mark.parametrize("system", ["@eaDir/p0.jpg", ".@__thumb", "#recycle", "$RECYCLE.BIN", "System Volume Information",
                                    "@EADIR/p0.jpg"])
def test_the_system_folders_of_photo_tools_and_file_servers_are_left_out_and_named(tmp_path, system):
    """A Synology NAS keeps a thumbnail of each photograph in ``@eaDir/<photo>/SYNOPHOTO_THUMB_S.jpg``: measured,
    16 photographs were 32, the thumbnails drawn as photographs of the set."""
    for i in range(4):
        _photo(tmp_path / f"p{i}.jpg", i)
        _photo(tmp_path / system / f"p{i}.jpg" / "SYNOPHOTO_THUMB_S.jpg", 10 + i)
    (tmp_path / "Thumbs.db").write_bytes(b"\0" * 64)
    with pytest.warns(Warning, match=r"4 hidden files left out \(.*@eaDir.*: "):
        got = load_images(tmp_path, 64, 0)
    assert sorted(got.names) == [f"p{i}.jpg" for i in range(4)] and got.n_available == 4
    assert "4 photographs from" in got.label and "4 hidden files left out" in got.label
