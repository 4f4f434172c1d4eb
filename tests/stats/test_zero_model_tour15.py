"""A model whose weights are all zero makes every hidden state the zero vector: the refusal names the model and the
layer and says the model, not the inputs, made them zero (it advised giving more texts)."""

from __future__ import annotations

from pathlib import Path

import pytest

import aniso
from aniso.sources import ModelRefused
from aniso.stats.pipeline import InputsRefused

TEXTS = ["the cat sat on the mat near the door", "a dog ran in the park with the cat",
         "the river runs under the old bridge in the town"]


def _folder(root: Path, zero: bool) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    folder = root / f"bert-zero-{zero}"
    folder.mkdir()
    words = sorted({w for t in TEXTS for w in t.split()})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": true}')
    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, max_position_embeddings=64, pad_token_id=0),
                      add_pooling_layer=False).eval()
    if zero:
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def test_an_all_zero_model_is_refused_as_the_model_not_the_inputs(clean_env):
    with pytest.raises(ModelRefused, match=r": layer 0: \d+ of \d+ hidden states are the zero vector, leaving 0 for "
                                           r"avg cos: the model makes them zero, not the inputs") as caught:
        aniso.measure(str(_folder(clean_env, zero=True)), TEXTS)
    assert not isinstance(caught.value, InputsRefused)
    assert "give more" not in str(caught.value)


def test_the_same_model_with_weights_is_measured(clean_env):
    stats = aniso.measure(str(_folder(clean_env, zero=False)), TEXTS)
    assert len(stats.layers) == 3 and all(0 < s.mean_cosine < 1 for s in stats.layers)
