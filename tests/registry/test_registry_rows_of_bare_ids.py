"""A registry whose `models:` lists bare ids (`- all-MiniLM-L6-v2`) instead of rows: one line naming the row, its
value and what a row is (a mapping with id, source, …), not pydantic's "valid dictionary or instance of
ModelEntry". A row of docs/bad-input.md."""

from __future__ import annotations

import pytest

from aniso.cli import main
from aniso.registry.entries import RegistryError, load_registry


def test_a_registry_of_bare_ids_names_the_row_and_what_a_row_is(tmp_path, capsys):
    path = tmp_path / "ids.yaml"
    path.write_text("models:\n- all-MiniLM-L6-v2\n- roberta-base\n")
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: models[0]: 'all-MiniLM-L6-v2' is a text (a bare id?), not a row; each row of "
                          "models is a mapping with the fields id, source, modality"), msg
    assert "(2 rows are no mapping)" in msg and "ModelEntry" not in msg and "\n" not in msg, msg
    assert main(["list", "models", "--registry", str(path)]) == 2
    line = capsys.readouterr().err.strip()
    assert "models[0]: 'all-MiniLM-L6-v2' is a text" in line and "\n" not in line, line


@pytest.mark.parametrize("row, said", [("- 5\n", "5 is a number, not a row"), ("-\n", "models[0]: is empty")])
def test_a_row_of_another_kind_is_named(tmp_path, row, said):
    path = tmp_path / "r.yaml"
    path.write_text("models:\n" + row)
    with pytest.raises(RegistryError, match="each row of models is a mapping") as err:
        load_registry(path)
    assert said in str(err.value), str(err.value)
