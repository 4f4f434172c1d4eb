"""A corpus or training text saved as UTF-16 or UTF-32: the settings check skipped its NUL test for a UTF-16
byte-order mark (and let more NUL bytes than a quarter through), so the byte-level miniatures would have trained on
text whose every other byte is NUL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("encoding, named", [("utf-16", "UTF-16 (with its byte-order mark)"),
                                             ("utf-16-le", "UTF-16LE (no byte-order mark"),
                                             ("utf-32", "UTF-32 (with its byte-order mark)")])
def test_a_training_text_in_utf16_is_refused_naming_the_setting(tmp_path, monkeypatch, capsys, encoding, named):
    """The settings check skipped its NUL test for a UTF-16 byte-order mark, so the byte-level miniatures would have
    trained on text whose every other byte is NUL."""
    from aniso.common.settings import SettingError, Settings

    path = tmp_path / "train.txt"
    path.write_bytes(("A line of training text, long enough to fill the windows. " * 40).encode(encoding))
    with pytest.raises(SettingError) as caught:
        Settings(train_text=str(path), cache_dir=str(tmp_path / "c")).check_paths()
    said = str(caught.value)
    assert "train_text" in said and f"{path} is not UTF-8 text: it is {named}" in said, said
    assert "save it as UTF-8 (e.g. iconv -f" in said, said
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_TRAIN_TEXT", str(path))
    monkeypatch.setenv("CI", "1")
    assert main(["run", "mini-bert-bytes-s0", "--registry", str(ROOT / "models.yaml"), "--claims",
                 "X.rogue-dimensions"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ANISO_TRAIN_TEXT" in err and "is not UTF-8 text" in err, err
