"""A data folder setting naming the root of the file system (`ANISO_IMAGE_DIR=/`, as `$IMGS/` gives with IMGS
unset) is refused in one line before any walk: it would search every folder on the disk and measure stray icons
as photographs. A row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main
from aniso.common.settings import Settings, SettingError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["image_dir", "speech_dir", "models_dir"])
def test_the_root_folder_as_a_data_folder_is_refused(name):
    with pytest.raises(SettingError, match=rf"^setting {name} .*: / is the root of the file system; a search from it "
                                           r"would walk every folder on the disk"):
        Settings(**{name: "/"}).check_data_folders()


def test_aniso_stats_with_image_dir_the_root_is_one_line(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("ANISO_IMAGE_DIR", "/")
    assert main(["stats", "efficientnet-lite0", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ANISO_IMAGE_DIR" in err[0] and "/ is the root of the file system" in err[0], err
