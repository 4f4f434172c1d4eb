"""A model folder whose tokenizer holds far fewer tokens than config.json's vocab_size (a vocab.txt cut to its first
lines) is refused, naming the tokenizer file and both numbers, by the API and by `aniso hub import` (it was measured
and imported without a word); a vocab_size padded a little above the tokenizer is read."""

from __future__ import annotations

from pathlib import Path

import pytest

import aniso
from aniso.sources import ModelRefused

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "the river runs under the old bridge"]


def _folder(root: Path, vocab_size: int) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    folder = root / f"bert-{vocab_size}"
    folder.mkdir()
    words = sorted({w for t in TEXTS for w in t.split()})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + [f"x{i}" for i in range(100 - 5 - len(words))]
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": true}')
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64, pad_token_id=0),
              add_pooling_layer=False).eval().save_pretrained(folder, safe_serialization=True)
    return folder


def test_a_truncated_vocabulary_is_refused_naming_the_file_and_both_sizes(clean_env):
    folder = _folder(clean_env, 1000)
    with pytest.raises(ModelRefused) as err:
        aniso.measure(str(folder), TEXTS)
    msg = str(err.value)
    assert ("the tokenizer (tokenizer_config.json, vocab.txt) holds 100 tokens, but config.json vocab_size is 1000"
            in msg and "at least 90%" in msg and "\n" not in msg), msg


def test_hub_import_refuses_a_truncated_vocabulary(hub_env, aniso_cli):
    folder = _folder(hub_env, 1000)
    code, _, err = aniso_cli(["hub", "import", "me/vt", str(folder), "--cache-dir", str(hub_env / "hc")])
    assert code == 2 and "holds 100 tokens, but config.json vocab_size is 1000" in err, err


def test_a_vocab_size_padded_a_little_above_the_tokenizer_is_read(clean_env):
    stats = aniso.measure(str(_folder(clean_env, 104)), TEXTS)
    assert stats.inputs["n_sequences"] == 3


def test_a_twins_tokenizer_trained_short_of_its_rows_is_read(clean_env):
    """A twin's tokenizer is trained on a few texts towards the config's vocab_size and may hold far fewer entries
    than the embedding's rows by design; its tokenizer_config.json says so (TWIN_TOKENIZER_FIELD, written by the
    twin) and the folder is measured."""
    import json

    from aniso.sources.twin import TWIN_TOKENIZER_FIELD

    folder = _folder(clean_env, 1000)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True, TWIN_TOKENIZER_FIELD: 100}))
    assert aniso.measure(str(folder), TEXTS).inputs["n_sequences"] == 3
