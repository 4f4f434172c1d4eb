"""Settings on bad or relative input (tour 3): input paths recorded absolute, the device setting named with its
variable and option."""

from __future__ import annotations

import os

import pytest

from aniso.common import settings as settings_module
from aniso.common.settings import SettingError, Settings


def test_a_relative_input_path_is_recorded_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("ANISO_"):
            monkeypatch.delenv(name)
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "c.txt").write_text("one\n")
    s = Settings.from_sources({}, environ={"ANISO_CORPUS": "f/c.txt", "ANISO_MODELS_DIR": "f"})
    assert s.corpus == str(tmp_path / "f" / "c.txt") and s.models_dir == str(tmp_path / "f")
    assert Settings.from_sources({"train_text": "f/c.txt"}, environ={}).train_text == str(tmp_path / "f" / "c.txt")
    assert Settings.from_sources({}, environ={}).corpus is None  # unset stays unset
    assert "corpus" in settings_module.INPUT_PATH_SETTINGS and "registry" not in settings_module.INPUT_PATH_SETTINGS


def test_an_unsupported_device_names_the_variable_and_the_option():
    with pytest.raises(SettingError) as exc:
        Settings.from_sources({}, environ={"ANISO_DEVICE": "meta"})
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("setting device (ANISO_DEVICE, --aniso-device):") and "'meta'" in msg
