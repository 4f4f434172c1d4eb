"""An in-memory model's tokens and computing dtype do not depend on the caller's tokenizer settings or autocast
context: a tokenizer truncating on the left kept the last ``max_length`` tokens of each text, and a measurement
inside ``torch.autocast`` computed in bfloat16, both recorded as the ordinary measurement (same inputs fingerprint,
same dtype) with other numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import aniso
from tiny_gpt2 import tiny_gpt2

TEXTS = ["the cat sat on the mat and looked at the dog for a long time before it went back to sleep again",
         "a dog ran in the park with a red ball and then it ran home to its owner who was waiting at the door",
         "rain fell on the old town all night long and the streets were wet and shining in the morning light",
         "she read the letter twice before she slept and in the morning she wrote a long answer to her friend"]


pytestmark = pytest.mark.filterwarnings("ignore:.*leaves out .second-order.:RuntimeWarning")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("ANISO_PROGRESS", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _numbers(stats) -> np.ndarray:
    return np.array([(layer["mean_cosine"], layer["drift_norm"]) for layer in stats.to_dict()["layers"]], dtype=np.float64)


def test_a_tokenizer_truncating_on_the_left_gives_the_same_tokens_and_is_restored():
    model, tok = tiny_gpt2()
    base = aniso.measure(model, TEXTS, tokenizer=tok, statistics="first-order", progress=False, max_length=8)
    tok.truncation_side = "left"
    tok.padding_side = "left"
    left = aniso.measure(model, TEXTS, tokenizer=tok, statistics="first-order", progress=False, max_length=8)
    assert left.inputs == base.inputs
    np.testing.assert_array_equal(_numbers(left), _numbers(base))
    assert (tok.truncation_side, tok.padding_side) == ("left", "left")  # the caller's tokenizer as it was given


def test_a_measurement_inside_autocast_computes_in_the_weights_dtype():
    model, tok = tiny_gpt2()
    base = aniso.measure(model, TEXTS, tokenizer=tok, statistics="first-order", progress=False, max_length=16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under = aniso.measure(model, TEXTS, tokenizer=tok, statistics="first-order", progress=False, max_length=16)
        assert torch.is_autocast_enabled("cpu")  # the caller's context is left as it was
    assert under.meta["source"]["fields"]["dtype"] == "float32"
    np.testing.assert_array_equal(_numbers(under), _numbers(base))
