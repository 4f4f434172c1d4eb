"""A model whose weights are zero but its LayerNorms' makes every hidden state one vector (the norms' bias): avg cos
1.0 and SVD anisotropy, TwoNN and IsoScore NaN or a number from rounding, without a word. Refused naming the model
and the layer, as an all-zero model is; a real model's spread is far above the bound."""

from __future__ import annotations

import pytest

import aniso
from aniso.sources import ModelRefused
from word_bert import TEXTS, word_bert


def _norms_only(folder):
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(folder)
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) if "LayerNorm" in name else torch.zeros_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def test_a_model_whose_hidden_states_are_one_vector_is_refused_naming_the_layer(clean_env):
    folder = _norms_only(word_bert(clean_env / "norms-only"))
    with pytest.raises(ModelRefused, match=r"^norms-only: layer 0: its \d+ hidden states are one vector \(spread "
                                           r"\d\.\de[-+]\d\d of their squared norm\): the model ignores its inputs"):
        aniso.measure(str(folder), TEXTS, progress=False)
    with pytest.raises(ModelRefused, match=r"every statistic of the layer would describe one point \(avg cos 1 by "
                                           r"construction\)$") as refused:  # asked for first-order statistics only
        aniso.measure(str(folder), TEXTS, progress=False, statistics="first-order")
    assert "TwoNN" not in str(refused.value)  # statistics not asked for are not named (tour 18)


def test_the_spread_of_a_models_hidden_states_is_far_above_the_bound(clean_env):
    from aniso.stats.pipeline import SAME_VECTOR_SPREAD

    stats = aniso.measure(str(word_bert(clean_env / "weights")), TEXTS, progress=False)
    assert min(acc.spread for acc in stats.stats.layers) > 1e6 * SAME_VECTOR_SPREAD
