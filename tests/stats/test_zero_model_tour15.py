"""A model whose weights are all zero makes every hidden state the zero vector: the refusal names the model and the
layer and says the model, not the inputs, made them zero (it advised giving more texts)."""

from __future__ import annotations

import pytest

import aniso
from aniso.sources import ModelRefused
from aniso.stats.pipeline import InputsRefused
from word_bert import TEXTS, word_bert


def test_an_all_zero_model_is_refused_as_the_model_not_the_inputs(clean_env):
    with pytest.raises(ModelRefused, match=r": layer 0: \d+ of \d+ hidden states are the zero vector, leaving 0 for "
                                           r"avg cos: the model makes them zero, not the inputs") as caught:
        aniso.measure(str(word_bert(clean_env / "zero", zero=True)), TEXTS)
    assert not isinstance(caught.value, InputsRefused)
    assert "give more" not in str(caught.value)


def test_the_same_model_with_weights_is_measured(clean_env):
    stats = aniso.measure(str(word_bert(clean_env / "weights")), TEXTS)
    assert len(stats.layers) == 3 and all(0 < s.mean_cosine < 1 for s in stats.layers)
