"""A number in exponent form without a dot (``params_m: 1e3``) is a number to whoever writes it: YAML 1.1 reads it
as text, and the row was refused as "Input should be a valid number". The registry reads it as YAML 1.2 does."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from registry_rows import ENTRY

ROW = "models:\n" + ENTRY


@pytest.mark.parametrize("text, value", [("1e3", 1000.0), ("2.5E2", 250.0), ("1e+3", 1000.0), ("1.0e+3", 1000.0),
                                         ("1000", 1000.0)])
def test_a_size_in_exponent_form_is_read_as_the_number(tmp_path, text, value):
    path = tmp_path / "models.yaml"
    path.write_text(ROW + f"    params_m: {text}\n")
    assert load_registry(path).get("tiny").params_m == value


@pytest.mark.parametrize("text", ['"1e3"', "1e", "e3"])
def test_text_that_is_no_number_stays_text_and_is_refused(tmp_path, text):
    path = tmp_path / "models.yaml"
    path.write_text(ROW + f"    params_m: {text}\n")
    with pytest.raises(RegistryError, match=r"models\[0\] \(id 'tiny'\): params_m"):
        load_registry(path)
