"""Extraction for the M and X claims: the final normalisation's input and output, positions, the attention sink,
the embedding matrices' partition isotropy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aniso.extract.hidden import final_norm_of, iter_text_hidden_states
from aniso.stats.pipeline import compute_stats, embedding_isotropy
from aniso.registry.entries import ModelEntry
from aniso.common.settings import Settings


@pytest.fixture(scope="module")
def tiny_gpt2(tiny_bert_dir):
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(vocab_size=44, n_embd=32, n_layer=2, n_head=2, n_positions=64)).eval()
    return model, AutoTokenizer.from_pretrained(tiny_bert_dir)


TEXTS = ["w1 w2 w3 w4 w5", "w6 w7", "w8 w9 w10 w11"]


def test_the_final_norm_is_found_where_the_family_keeps_it(tiny_gpt2, tiny_bert_dir):
    from transformers import AutoModel

    assert final_norm_of(tiny_gpt2[0])[0] == "ln_f"
    assert final_norm_of(AutoModel.from_pretrained(tiny_bert_dir)) is None  # post-LN: none after the last layer


def test_the_final_norm_input_and_output_are_captured_on_real_tokens(tiny_gpt2):
    model, tok = tiny_gpt2
    batch = next(iter_text_hidden_states(model, tok, TEXTS, final_norm=True))
    pre, post = batch.final_norm
    assert pre.shape == post.shape == batch.layers[-1].shape
    assert torch.allclose(post, batch.layers[-1], atol=1e-5)  # GPT-2's last hidden state is after ln_f
    assert not torch.allclose(pre, post)
    assert batch.positions[0].tolist()[:3] == [0, 1, 2] and int((batch.positions[0] == 0).sum()) == len(TEXTS)
    assert not model.ln_f._forward_hooks  # the hook is removed when the batches end


def test_statistics_hold_the_final_norm_pair_and_the_attention_sink(tiny_gpt2):
    model, tok = tiny_gpt2
    entry = ModelEntry.model_validate(dict(id="g", source={"kind": "hub", "repo": "x/g"}, modality="text",
                                           granularity="subword", architecture="transformer", role="decoder",
                                           family="gpt2"))
    stats = compute_stats(entry, iter_text_hidden_states(model, tok, TEXTS, final_norm=True, attentions=True), None,
                          Settings(), {})
    pair = stats.meta["final_norm"]
    assert pair["after"]["mean_cosine"] == pytest.approx(stats.summaries()[-1].mean_cosine, abs=1e-6)
    sink = stats.meta["attention_sink"]
    assert len(sink["per_head"]) == 2 and len(sink["per_head"][0]) == 2
    assert sink["rows"] == stats.meta["n_tokens"] == 17  # [CLS] and [SEP] around 11 words
    # causal attention: query t spreads over t + 1 tokens, the first token included, so each head's mean is at least
    # the mean of 1/(t + 1) over the real positions of the three sequences (7, 4 and 6 tokens)
    floor = np.mean([1 / (t + 1) for n in (7, 4, 6) for t in range(n)])
    assert min(min(h) for h in sink["per_head"]) >= floor * 0.5
    assert stats.summaries()[-1].massive_position >= 0


def test_embedding_isotropy_reports_input_raw_and_centred(tiny_gpt2):
    iso = embedding_isotropy(tiny_gpt2[0])
    assert 0 < iso["input"]["raw"] <= 1 and 0 < iso["input"]["centred"] <= 1
    assert iso["input"]["vocab"] == 44 and iso["input"]["dim"] == 32
    assert iso["output_embeddings"] in ("tied to the input embeddings", "not loaded (base model without its LM head)")
    assert np.isfinite(iso["input"]["mean_norm"])


def test_a_loaded_text_model_records_whether_its_inputs_start_with_one_token(tiny_bert_entry):
    """What the statistics' meta gets at load (``first_token``): the tiny BERT's tokenizer prepends [CLS] to every
    paragraph of the run's text."""
    from aniso.inputs.text import Corpus
    from aniso.sources import SourceContext, load_model

    corpus = Corpus("t", "t", "t", "f", ("w1 w2", "w3 w4", "w5"), 3, 0)
    loaded = load_model(tiny_bert_entry, SourceContext(media=lambda kind: corpus))
    assert loaded.meta["first_token"] == {"fixed": True, "id": 2, "token": "[CLS]", "checked": 3}
    assert "first_token" not in load_model(tiny_bert_entry).meta  # no inputs given: nothing said
