"""The closing hint of a run that left registry models out names the run's registry when it is not the default
one, so that the commands it gives run that registry's rows (``--registry`` / ``--aniso-registry PATH``); a twin
run's hint says ``--twin`` and names the registry its twins were made of, not their temporary copy."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import yaml

from aniso.cli import main
from aniso.registry.entries import load_yaml
from aniso.session import AnisoSession

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "G.token-nlp-anisotropic"


def _hint(path, twin=None) -> str:
    return AnisoSession.left_out_hint(SimpleNamespace(registry=SimpleNamespace(path=path), twin=twin))


def test_the_hint_keeps_a_registry_that_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert _hint(ROOT / "models.yaml") == ("run one with: aniso run ID; all of them with: pytest claims "
                                           "--aniso-models all")
    mix = tmp_path / "my registry.yaml"
    assert _hint(mix) == (f"run one with: aniso run ID --registry '{mix}'; all of them with: pytest claims "
                          f"--aniso-models all --aniso-registry '{mix}'")


def test_a_twin_runs_hint_names_the_users_registry_and_twin(hub_env, monkeypatch, capsys):
    tmp_path = hub_env
    if os.environ.get("ANISO_CORPUS"):  # (set relative to the checkout, as CI sets it)
        monkeypatch.setenv("ANISO_CORPUS", os.path.abspath(os.environ["ANISO_CORPUS"]))
    raw = load_yaml(ROOT / "models.yaml")
    raw["models"] = [r for r in raw["models"] if r["id"] in ("bert-base-uncased", "roberta-base")]
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    code = main(["run", "bert-base-uncased", "--twin", "--registry", str(mix), "--claims", CLAIM, "--",
                 "--aniso-n-sequences", "16"])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]
    said = " ".join(out.split())
    assert "--aniso-models all" not in said, said[-2000:]
    assert (f"run one with: aniso run ID --twin --registry {mix}; all of them with: aniso run all --twin "
            f"--registry {mix}") in said, said[-2000:]
