"""``aniso hub import`` given a folder but no hub id: the folder is read as the hub id, so argparse would say the
folder is missing; the line says the hub id is."""

from __future__ import annotations

import pytest

from aniso.cli import main

SAID = "aniso hub import: give the hub id before the folder: aniso hub import ORG/NAME FOLDER\n"


@pytest.mark.parametrize("given", ["existing", "./not-here", "/some/where/model"])
def test_a_folder_without_its_hub_id_is_said_to_lack_the_hub_id(tmp_path, capsys, given):
    folder = str(tmp_path) if given == "existing" else given
    with pytest.raises(SystemExit) as caught:
        main(["hub", "import", folder, "--revision", "a b", "--cache-dir", str(tmp_path / "hc")])
    assert caught.value.code == 2
    assert capsys.readouterr().err == SAID


def test_a_hub_id_without_its_folder_is_still_said_to_lack_the_folder(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["hub", "import", "org/name", "--cache-dir", str(tmp_path / "hc")])
    assert caught.value.code == 2
    assert "required: folder" in capsys.readouterr().err
