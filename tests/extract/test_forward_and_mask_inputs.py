"""An in-memory model or tokenizer that cannot tell padding from text: a tokenizer that returns no attention mask
(a KeyError traceback), a user's forward that takes no attention mask or token type ids (a TypeError traceback).
Each is one line naming the argument; a forward of its own that takes the mask is measured."""

from __future__ import annotations

import warnings

import pytest
import torch

import aniso

transformers = pytest.importorskip("transformers")
TEXTS = ["The cat sat on the mat.", "Hello world"]


def _bert_and_tokenizer():
    from transformers import BertConfig, BertModel, BertTokenizerFast
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on", "mat", ".",
                                         "hello", "world"])}
    inner = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    inner.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok = BertTokenizerFast(tokenizer_object=inner, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                            sep_token="[SEP]")
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64)).eval()
    return bert, tok


def _measure(model, tok):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aniso.measure(model, TEXTS, tokenizer=tok, batch_size=2, progress=False)


def test_a_tokenizer_that_returns_no_attention_mask_is_named():
    bert, tok = _bert_and_tokenizer()
    tok.model_input_names = ["input_ids"]
    with pytest.raises(ValueError, match=r"^tokenizer: BertTokenizer(Fast)? returns no attention_mask \(its "
                                         r"model_input_names: \['input_ids'\]\)"):
        _measure(bert, tok)


def test_a_forward_of_its_own_without_the_mask_is_named_and_one_with_it_is_measured():
    bert, tok = _bert_and_tokenizer()
    want = _measure(bert, tok).to_frame()["avg_cos"].tolist()
    orig = bert.forward

    def without_mask(input_ids=None, output_hidden_states=None):
        return orig(input_ids=input_ids, output_hidden_states=output_hidden_states)

    bert.forward = without_mask
    with pytest.raises(ValueError, match=r"^model: its forward takes \(input_ids, output_hidden_states\), without "
                                         r"attention_mask"):
        _measure(bert, tok)

    def with_mask(input_ids=None, attention_mask=None, output_hidden_states=None):  # no token_type_ids
        return orig(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states)

    bert.forward = with_mask
    assert _measure(bert, tok).to_frame()["avg_cos"].tolist() == pytest.approx(want)
