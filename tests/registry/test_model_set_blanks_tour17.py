"""Registry ids given apart by blanks where a model set is comma-separated (`--aniso-models 'a b'`) were answered
"did you mean 'a'?", dropping the other: the answer says the ids are comma-separated."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main
from aniso.registry.entries import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[2]


def test_ids_apart_by_blanks_are_told_to_be_comma_separated():
    registry = load_registry(ROOT / "models.yaml")
    with pytest.raises(RegistryError, match=r"model set 'all-MiniLM-L6-v2 paraphrase-minilm-l3-onnx' holds 2 ids or "
                                            r"tags apart by blanks; the ids and tags of a model set are "
                                            r"comma-separated: all-MiniLM-L6-v2,paraphrase-minilm-l3-onnx$"):
        registry.model_set("all-MiniLM-L6-v2 paraphrase-minilm-l3-onnx")


def test_through_the_setting(clean_env, capsys):
    assert main(["list", "models", "--models", "all-MiniLM-L6-v2 paraphrase-minilm-l3-onnx", "--registry",
                 str(ROOT / "models.yaml")]) == 2
    assert "comma-separated: all-MiniLM-L6-v2,paraphrase-minilm-l3-onnx" in capsys.readouterr().err


def test_ids_apart_by_blanks_one_of_them_unknown():
    """With one of the blank-separated ids unknown, the answer was the old "did you mean" of the first id, the
    others dropped: it says the ids are comma-separated and names the unknown one."""
    registry = load_registry(ROOT / "models.yaml")
    with pytest.raises(RegistryError, match=r"model set 'all-MiniLM-L6-v2 nonsense-model' holds 2 ids or tags apart "
                                            r"by blanks; the ids and tags of a model set are comma-separated: "
                                            r"all-MiniLM-L6-v2,nonsense-model \(and 'nonsense-model' is no registry "
                                            r"id, tag or named set\)$"):
        registry.model_set("all-MiniLM-L6-v2 nonsense-model")
    with pytest.raises(RegistryError, match=r"model set 'two words' is no named set"):
        registry.model_set("two words")  # no word of it known: not read as a list


def test_an_option_quoted_into_the_claims_is_named_as_an_option():
    from aniso.registry.selection import parse_claims

    with pytest.raises(ValueError, match=r"^claims: 'G.token-nlp-anisotropic --twin' holds '--twin', an option quoted "
                                         r"into the value of the claims: give it apart, outside the quotes$"):
        parse_claims("G.token-nlp-anisotropic --twin")
