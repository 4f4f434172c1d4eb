"""A tokenizer that does not lowercase on an uncased vocabulary reads every capitalised word as [UNK]: the run says
so in a RuntimeWarning naming the model and the share, and records the share in the inputs' provenance (it was
measured without a word); text its vocabulary knows gives no warning."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import aniso

TEXTS = ["the cat sat on the mat near the door", "a dog ran in the park with the cat",
         "the river runs under the old bridge in the town"]


def _folder(root: Path, lower: bool) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    folder = root / f"bert-lower-{lower}"
    folder.mkdir()
    words = sorted({w for t in TEXTS for w in t.split()})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": '
                                                  f'{"true" if lower else "false"}}}')
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64, pad_token_id=0),
              add_pooling_layer=False).eval().save_pretrained(folder, safe_serialization=True)
    return folder


CAPITALISED = [t[0].upper() + t[1:] for t in TEXTS]  # one capitalised word of 9 or 10 in each


def test_a_share_of_unknown_tokens_above_five_percent_is_said_and_recorded(clean_env):
    with pytest.warns(RuntimeWarning, match=r"^10\.7% of its tokens \(3 of 28\) are \[UNK\], over 5%: "
                                            r"unknown words$") as caught:
        stats = aniso.measure(str(_folder(clean_env, False)), CAPITALISED)
    assert any("bert-lower-False" in w.filename for w in caught), [w.filename for w in caught]
    assert stats.inputs["unknown_token_share"] == pytest.approx(3 / 28, abs=1e-4)


def test_text_the_vocabulary_knows_gives_no_warning(clean_env):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*of its tokens \(.*\) are ", category=RuntimeWarning)
        stats = aniso.measure(str(_folder(clean_env, True)), CAPITALISED)
    assert stats.inputs["unknown_token_share"] == 0
