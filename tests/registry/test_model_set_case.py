"""A model set naming a registry id in another case (``ALL-MINILM-L6-V2``) gets "did you mean 'all-MiniLM-L6-v2'",
through pytest's --aniso-models (the registry's selection) and `aniso list --models`. A row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main
from aniso.registry.entries import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("given, meant", [("ALL-MINILM-L6-V2", "all-MiniLM-L6-v2"),
                                          ("all-minilm-l6-v2", "all-MiniLM-L6-v2"), ("SMALL", "small")])
def test_a_model_set_in_another_case_gets_did_you_mean(given, meant):
    with pytest.raises(RegistryError) as err:
        load_registry(ROOT / "models.yaml").model_set(given)
    assert f"model set {given!r} is no named set" in str(err.value)
    assert f"did you mean {meant!r}" in str(err.value) and "case-sensitive" in str(err.value), str(err.value)


def test_aniso_list_models_in_upper_case_gets_did_you_mean(clean_env, capsys):
    assert main(["list", "models", "--models", "ALL-MINILM-L6-V2", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean 'all-MiniLM-L6-v2'" in err[0], err
