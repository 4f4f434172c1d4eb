"""A model folder whose config.json says one model type while its tokenizer files are another's (a BERT folder,
vocab.txt, whose config says ``model_type: roberta``) is refused naming the folder, both and what to do: it was
loaded as RoBERTa without a word, each token read at the next position."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aniso.sources.detect import UndetectableModel
from aniso.sources.local import detect

CONFIG = {"architectures": ["RobertaModel"], "model_type": "roberta", "hidden_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 4, "intermediate_size": 37, "vocab_size": 100, "pad_token_id": 0,
          "max_position_embeddings": 64}


def _folder(tmp_path: Path, files: dict[str, str], config: dict | None = None) -> Path:
    folder = tmp_path / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config or CONFIG), encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_bert_folder_whose_config_says_roberta_is_refused_naming_both(tmp_path, capsys):
    folder = _folder(tmp_path, {"vocab.txt": "[PAD]\n[UNK]\n", "tokenizer.json": "{}",
                                "tokenizer_config.json": json.dumps({"do_lower_case": True})})
    with pytest.raises(UndetectableModel) as exc:
        detect(folder)
    said = str(exc.value)
    assert "\n" not in said, said
    assert "model_type 'roberta'" in said and "RobertaModel" in said and "vocab.txt" in said, said
    assert "BertTokenizer" in said and "merges.txt, vocab.json" in said and "fix config.json" in said, said
    from aniso.cli import main

    assert main(["stats", str(folder), "--n-sequences", "2"]) == 2  # refused before any weight is read
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{folder}: config.json says model_type 'roberta'" in err, err


def test_a_folder_of_its_own_tokenizer_or_naming_its_tokenizer_is_detected(tmp_path):
    from aniso.sources.detect import tokenizer_problem

    folder = _folder(tmp_path, {"vocab.json": "{}", "merges.txt": "", "tokenizer.json": "{}"})
    assert detect(folder)["family"] == "roberta"
    assert tokenizer_problem(folder, CONFIG) is None
    told = _folder(tmp_path / "told", {"vocab.txt": "a\n", "tokenizer.json": "{}",
                                       "tokenizer_config.json": json.dumps({"tokenizer_class": "BertTokenizer"})})
    assert tokenizer_problem(told, CONFIG) is None  # the folder names its tokenizer itself
    bert = _folder(tmp_path / "bert", {"vocab.txt": "a\n", "tokenizer.json": "{}"},
                   CONFIG | {"model_type": "bert", "architectures": ["BertModel"]})
    assert tokenizer_problem(bert, json.loads((bert / "config.json").read_text())) is None


def test_a_local_row_whose_config_names_another_model_type_s_classes_is_refused_at_load(tmp_path, capsys):
    """A registry row (source kind local, family roberta) on a folder whose config.json says model_type roberta and
    architectures [BertModel] was loaded as RoBERTa without a word; the folder given as a path was refused."""
    from aniso.cli import main

    folder = _folder(tmp_path, {"vocab.json": "{}", "merges.txt": "", "tokenizer.json": "{}"},
                     CONFIG | {"architectures": ["BertModel"]})
    registry = tmp_path / "models.yaml"
    registry.write_text(f"models:\n- id: my-rob\n  source: {{kind: local, path: {folder}}}\n  modality: text\n"
                        "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: roberta\n",
                        encoding="utf-8")
    assert main(["stats", "my-rob", "--registry", str(registry), "--n-sequences", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"my-rob: {folder}: config.json says model_type 'roberta' but architectures " \
        "['BertModel']" in err and "fix the one that is wrong" in err, err
