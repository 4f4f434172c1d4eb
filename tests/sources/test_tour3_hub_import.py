"""``aniso hub import`` refuses, before it writes a file, a folder that ``aniso run`` would refuse: no tokenizer
files, a config that does not fit the weights (another model type, fewer layers); ``refs/main`` stays as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from aniso.cli import main


def _folder(tmp_path, tiny_bert_dir, name):
    folder = tmp_path / name
    shutil.copytree(tiny_bert_dir, folder)
    return folder


def _import(folder, cache, capsys):
    code = main(["hub", "import", "org/mini", str(folder), "--cache-dir", str(cache)])
    out, err = capsys.readouterr()
    return code, out, err


def _ref(cache):
    ref = cache / "models--org--mini" / "refs" / "main"
    return ref.read_text() if ref.is_file() else None


@pytest.fixture
def imported(tmp_path, tiny_bert_dir, capsys):
    """A cache holding a good import of the tiny BERT as org/mini (a good folder is imported, exit 0)."""
    cache = tmp_path / "hub"
    code, out, err = _import(_folder(tmp_path, tiny_bert_dir, "good"), cache, capsys)
    assert code == 0 and "org/mini@main -> commit" in out, out + err
    return cache


def _refused(folder, cache, capsys, said):
    before = _ref(cache)
    code, out, err = _import(folder, cache, capsys)
    assert code == 2 and out == "", out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"aniso hub import: {folder}: ") and said in lines[0], err
    assert "not imported, the cache is as it was" in lines[0]
    assert _ref(cache) == before  # refs/main not moved


def test_a_folder_without_tokenizer_files_is_not_imported(tmp_path, tiny_bert_dir, imported, capsys):
    folder = _folder(tmp_path, tiny_bert_dir, "notok")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    _refused(folder, imported, capsys, "no tokenizer files")


def test_a_config_of_another_model_type_over_bert_weights_is_not_imported(tmp_path, tiny_bert_dir, imported, capsys):
    from transformers import GPT2Config

    folder = _folder(tmp_path, tiny_bert_dir, "othertype")
    GPT2Config(vocab_size=44, n_embd=32, n_layer=2, n_head=2, n_positions=64).save_pretrained(folder)
    _refused(folder, imported, capsys, "so they would be randomly initialised")


def test_a_config_of_fewer_layers_than_the_weights_is_not_imported(tmp_path, tiny_bert_dir, imported, capsys):
    folder = _folder(tmp_path, tiny_bert_dir, "fewlayers")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"num_hidden_layers": 1}))
    _refused(folder, imported, capsys, "of modules its config does not build")
