"""A hub id the cache holds at another revision only (``aniso hub import me/v FOLDER --revision v1.0``): measuring
``me/v`` (revision main) says the cache holds it at v1.0 only, not main, and gives the registry row that measures
v1.0 (it said only "not cached here")."""

from __future__ import annotations

import json

import pytest

import aniso

COMMIT = "945efccc1363df69ae5b7afb12ebd486a317787a"


@pytest.fixture
def hub(clean_env, monkeypatch):
    """A hub cache holding me/v at revision v1.0 only (refs/v1.0 and its snapshot), named by HF_HUB_CACHE; offline."""
    from huggingface_hub import constants

    cache = clean_env / "hc"
    repo = cache / "models--me--v"
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "snapshots" / COMMIT / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    (repo / "refs").mkdir()
    (repo / "refs" / "v1.0").write_text(COMMIT, encoding="utf-8")
    for name in ("HUGGINGFACE_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_a_hub_id_held_at_another_revision_names_it_and_the_row_that_measures_it(hub):
    with pytest.raises(ValueError) as caught:
        aniso.measure("me/v", ["a b c d", "e f g h"], progress=False)
    said = str(caught.value)
    assert "\n" not in said and "me/v: not cached here" in said, said
    assert "for me/v it holds revision(s) v1.0 only, not 'main'" in said, said
    assert "source: {kind: hub, repo: me/v, revision: v1.0}" in said, said


def test_a_hub_row_at_a_revision_the_cache_lacks_names_the_one_it_holds(hub):
    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelUnavailable, load_model

    entry = ModelEntry.model_validate(dict(id="v", source={"kind": "hub", "repo": "me/v", "revision": "v2.0"},
                                           modality="text", granularity="subword", architecture="transformer",
                                           role="encoder", family="bert"))
    with pytest.raises(ModelUnavailable) as caught:
        load_model(entry)
    said = str(caught.value)
    assert said.startswith("v: hub id 'me/v' at revision 'v2.0' is not cached here and"), said
    assert said.count("v1.0") == 2 and "it holds revision(s) v1.0 only, not 'v2.0'" in said, said
