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
