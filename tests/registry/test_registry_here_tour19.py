"""Tour 19: `aniso stats my-mini` and `aniso run my-mini --registry OTHER` from a folder whose models.yaml holds the
row gave no hint of that file where the registry came from ANISO_REGISTRY or --registry (the pytest door did);
`aniso run "M bert-base-uncased"` (two ids quoted as one) was "no registry id, no model folder and no hub id"."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = str(ROOT / "models.yaml")
HERE = " (the models.yaml in this folder holds it, and is not this run's registry: give "


def _here(tmp_path, monkeypatch):
    (tmp_path / "models.yaml").write_text("models:\n- id: my-mini  # mine\n  source: {kind: local, path: ./m}\n")
    monkeypatch.chdir(tmp_path)


def test_the_models_yaml_here_is_named_at_every_command(tmp_path, monkeypatch, clean_env, refused_line):
    _here(tmp_path, monkeypatch)
    monkeypatch.setenv("ANISO_REGISTRY", REGISTRY)
    assert HERE + f"{tmp_path / 'models.yaml'} as the registry)" in refused_line(["stats", "my-mini"])
    monkeypatch.delenv("ANISO_REGISTRY")
    assert HERE in refused_line(["run", "my-mini", "--registry", REGISTRY])
    assert HERE not in refused_line(["run", "other-mini", "--registry", REGISTRY])  # not its id: no hint


def test_the_api_names_it_too(tmp_path, monkeypatch, clean_env):
    import pytest

    import aniso

    _here(tmp_path, monkeypatch)
    with pytest.raises(ValueError, match=r"the models\.yaml in this folder holds it"):
        aniso.measure("my-mini", ["a b c"], registry=REGISTRY)


def test_two_ids_quoted_as_one_are_named(clean_env, refused_line):
    for command in ("run", "stats"):
        line = refused_line([command, "all-MiniLM-L6-v2 bert-base-uncased", "--registry", REGISTRY])
        assert line.endswith("(2 registry ids in one, separated by blanks: give one model)"), line
