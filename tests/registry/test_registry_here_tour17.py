"""`pytest PATH/claims --aniso-models my-bert` from a folder whose models.yaml holds the row: pytest reads the
registry beside claims/, and the refusal suggested 'bert' and 'albert' without a word about the models.yaml here.
It names the file here and how to give it."""

from __future__ import annotations

from pathlib import Path

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_model_with_another_models_yaml_here_names_it(clean_env, monkeypatch, capsys):
    (clean_env / "models.yaml").write_text((ROOT / "models.yaml").read_text())
    monkeypatch.chdir(clean_env)
    assert main(["list", "models", "--models", "my-bert", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert (f"(the models.yaml in this folder is not this run's registry: give --aniso-registry "
            f"{(clean_env / 'models.yaml').resolve()}, or ANISO_REGISTRY)") in err, err


def test_the_same_through_the_registry_and_so_every_door(clean_env, monkeypatch):
    """The pytest door (the session) and the API look the model set up in the registry itself: the hint is there."""
    import pytest

    from aniso.registry.entries import RegistryError, load_registry

    (clean_env / "models.yaml").write_text((ROOT / "models.yaml").read_text())
    monkeypatch.chdir(clean_env)
    with pytest.raises(RegistryError, match=r"registry id or tag.* \(the models\.yaml in this folder is not this "
                                            r"run's registry: give --aniso-registry "):
        load_registry(ROOT / "models.yaml").model_set("my-mini")
    monkeypatch.chdir(ROOT)  # the registry's own folder: no other models.yaml
    with pytest.raises(RegistryError) as refused:
        load_registry(ROOT / "models.yaml").model_set("my-mini")
    assert "not this run's registry" not in str(refused.value)
