"""`pytest PATH/claims --aniso-models my-bert` from a folder whose models.yaml holds the row: pytest reads the
registry beside claims/, and the refusal suggested 'bert' and 'albert' without a word about the models.yaml here.
It names the file here and how to give it."""

from __future__ import annotations

from pathlib import Path

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_model_with_another_models_yaml_here_names_it(clean_env, monkeypatch, capsys):
    """The registry set in ANISO_REGISTRY (perhaps long ago): the hint names the option `aniso list` takes."""
    (clean_env / "models.yaml").write_text((ROOT / "models.yaml").read_text())
    monkeypatch.chdir(clean_env)
    monkeypatch.setenv("ANISO_REGISTRY", str(ROOT / "models.yaml"))
    assert main(["list", "models", "--models", "my-bert"]) == 2
    err = capsys.readouterr().err
    assert (f"(the models.yaml in this folder is not this run's registry: give --registry "
            f"{(clean_env / 'models.yaml').resolve()}, or ANISO_REGISTRY)") in err, err


def test_a_registry_given_on_purpose_gets_no_word_on_the_models_yaml_here(clean_env, monkeypatch, capsys):
    """`aniso list models --models nosuch --registry my.yaml` inside a checkout added "give --aniso-registry
    …/models.yaml": the user chose --registry, and `aniso list` takes no --aniso-registry."""
    (clean_env / "models.yaml").write_text((ROOT / "models.yaml").read_text())
    monkeypatch.chdir(clean_env)
    assert main(["list", "models", "--models", "my-bert", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "--models 'my-bert': model set 'my-bert' is no named set" in err and "this folder" not in err, err
    assert "--aniso-registry" not in err


def test_aniso_list_of_a_registry_the_default_set_selects_none_of(clean_env, monkeypatch, capsys):
    """A one-row registry whose row is outside 'small' (params_m written as a raw count) was refused whole: "setting
    models (ANISO_MODELS, --aniso-models) must select at least one model", no setting given. The row is listed,
    marked outside the set; a set the user names must still select one."""
    registry = clean_env / "pm.yaml"
    registry.write_text("models:\n- id: pm\n  source: {kind: hub, repo: sentence-transformers/all-MiniLM-L6-v2}\n"
                        "  modality: text\n  granularity: subword\n  architecture: transformer\n  role: encoder\n"
                        "  family: bert\n  params_m: 22713216\n")
    assert main(["list", "models", "--registry", str(registry)]) == 0
    out = capsys.readouterr().out
    assert "1 models in" in out and "0 in the set 'small'" in out and "pm " in out, out
    assert main(["list", "models", "--registry", str(registry), "--models", "small"]) == 2
    assert "--models must select at least one model" in capsys.readouterr().err


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


def test_another_tools_models_yaml_in_the_working_folder_is_named_as_read_by_default(clean_env, monkeypatch, capsys):
    """`aniso stats ./folder` in a project folder holding another tool's models.yaml was refused for that file's rows
    with no word that it had been read as the registry by default, nor how to give another."""
    (clean_env / "models.yaml").write_text("# my own experiment config\nmodels:\n  - gpt2\n  - bert-base-uncased\n"
                                           "lr: 0.001\n")
    monkeypatch.chdir(clean_env)
    assert main(["list", "models"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("(read as the registry because it is the models.yaml of the working folder and none "
                                "was given: give the registry with --registry, --aniso-registry under pytest, or "
                                "ANISO_REGISTRY, or run elsewhere)"), err
    assert main(["list", "models", "--registry", str(ROOT / "models.yaml")]) == 0
    capsys.readouterr()
    (clean_env / "mine.yaml").write_text((clean_env / "models.yaml").read_text())
    assert main(["list", "models", "--registry", str(clean_env / "mine.yaml")]) == 2
    assert "read as the registry because" not in capsys.readouterr().err  # given on purpose: no such word
