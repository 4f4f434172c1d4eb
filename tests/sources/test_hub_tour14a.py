"""A hub id the cache holds at another revision only (``aniso hub import me/v FOLDER --revision v1.0``): measuring
``me/v`` (revision main) says the cache holds it at v1.0 only, not main, and gives the registry row that measures
v1.0 (it said only "not cached here")."""

from __future__ import annotations


import pytest

import aniso

COMMIT = "945efccc1363df69ae5b7afb12ebd486a317787a"


@pytest.fixture
def hub(one_snapshot_hub):
    """A hub cache holding me/v at v1.0 only; offline (see ``one_snapshot_hub``)."""
    return one_snapshot_hub("me/v", "v1.0", COMMIT)


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
