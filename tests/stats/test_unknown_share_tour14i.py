"""A tokenizer that does not lowercase on an uncased vocabulary reads every capitalised word as [UNK]: the run says
so in a RuntimeWarning naming the model and the share, and records the share in the inputs' provenance (it was
measured without a word); text its vocabulary knows gives no warning."""

from __future__ import annotations

import warnings

import pytest

import aniso
from word_bert import TEXTS, word_bert

CAPITALISED = [t[0].upper() + t[1:] for t in TEXTS]  # one capitalised word of 9 or 10 in each


def test_a_share_of_unknown_tokens_above_five_percent_is_said_and_recorded(clean_env):
    with pytest.warns(RuntimeWarning, match=r"^10\.7% of its tokens \(3 of 28\) are \[UNK\], over 5%: "
                                            r"unknown words$") as caught:
        stats = aniso.measure(str(word_bert(clean_env / "bert-lower-False", lower=False)), CAPITALISED)
    assert any("bert-lower-False" in w.filename for w in caught), [w.filename for w in caught]
    assert stats.inputs["unknown_token_share"] == pytest.approx(3 / 28, abs=1e-4)


def test_text_the_vocabulary_knows_gives_no_warning(clean_env):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r".*of its tokens \(.*\) are ", category=RuntimeWarning)
        stats = aniso.measure(str(word_bert(clean_env / "bert-lower-True", lower=True)), CAPITALISED)
    assert stats.inputs["unknown_token_share"] == 0
