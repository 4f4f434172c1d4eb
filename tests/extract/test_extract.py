"""Extraction: padding excluded, every layer, encoder then decoder, queries and keys captured."""

from __future__ import annotations


import pytest
import torch

from aniso.extract.hidden import attention_sites, capture_queries_keys, iter_text_hidden_states, layer_names
from aniso.sources import load_model


TEXTS = ["w1 w2 w3", "w4 w5 w6 w7 w8 w9 w10 w11 w12", "w13", "w14 w15 w16 w17"]


def test_extraction_excludes_padding_and_gives_every_layer(tiny_bert_entry):
    loaded = load_model(tiny_bert_entry)
    assert layer_names(loaded.model) == ["0", "1", "2"]
    batches = list(iter_text_hidden_states(loaded.model, loaded.tokenizer, TEXTS, batch_size=4, max_length=32))
    n_tokens = sum(len(t.split()) + 2 for t in TEXTS)  # + [CLS], [SEP]
    assert len(batches) == 1 and len(batches[0].layers) == 3
    assert all(h.shape == (n_tokens, 32) for h in batches[0].layers)
    # A sequence's vectors do not depend on the padding its batch needs.
    alone = list(iter_text_hidden_states(loaded.model, loaded.tokenizer, TEXTS[2:3], batch_size=1, max_length=32))
    padded = torch.cat([b.layers[2] for b in iter_text_hidden_states(
        loaded.model, loaded.tokenizer, TEXTS[1:3], batch_size=2, max_length=32)])
    assert torch.allclose(alone[0].layers[2], padded[:3], atol=1e-5)


def test_encoder_decoder_gives_encoder_then_decoder_layers():
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    model = T5Model(T5Config(vocab_size=50, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=3,
                             num_heads=2, decoder_start_token_id=0, pad_token_id=0)).eval()
    assert layer_names(model) == ["enc.0", "enc.1", "enc.2", "dec.0", "dec.1", "dec.2", "dec.3"]

    class Tok:  # the smallest tokenizer interface extraction needs
        pad_token, eos_token, unk_token, padding_side = "<pad>", "</s>", "<unk>", "right"

        def __call__(self, texts, padding=False, truncation=True, max_length=8, return_tensors=None):
            ids = [[5 + len(w) for w in t.split()][:max_length] for t in texts]
            if not padding:
                return {"input_ids": ids}
            n = max(map(len, ids))
            return {"input_ids": torch.tensor([i + [0] * (n - len(i)) for i in ids]),
                    "attention_mask": torch.tensor([[1] * len(i) + [0] * (n - len(i)) for i in ids])}

    batches = list(iter_text_hidden_states(model, Tok(), ["a bb ccc", "dddd"], batch_size=2, max_length=8))
    assert [h.shape[0] for h in batches[0].layers] == [4] * 7


def test_capture_queries_keys_bert_and_gpt2_fused():
    """Captured Q/K are the projections' outputs; GPT-2's fused c_attn is split into [Q | K | V]."""
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    torch.manual_seed(0)
    bert = BertModel(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8,
                                vocab_size=50)).eval()
    ids = torch.randint(0, 50, (1, 7))
    with torch.inference_mode(), capture_queries_keys(bert) as cap:
        out = bert(ids, output_hidden_states=True)
    assert len(cap.sites) == 2
    q, k = cap.captured["encoder.layer.1.attention.self"][0]
    attn = bert.encoder.layer[1].attention.self
    with torch.inference_mode():
        assert torch.allclose(q, attn.query(out.hidden_states[1])) and torch.allclose(k, attn.key(out.hidden_states[1]))
    gpt = GPT2Model(GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=50, n_positions=16)).eval()
    with torch.inference_mode(), capture_queries_keys(gpt) as cap:
        out = gpt(ids, output_hidden_states=True)
    site = attention_sites(gpt)[0]
    assert site.layout == "concat"
    with torch.inference_mode():
        fused = gpt.h[0].attn.c_attn(gpt.h[0].ln_1(out.hidden_states[0]))
    q, k = cap.captured[site.name][0]
    assert torch.allclose(q, fused[..., :16]) and torch.allclose(k, fused[..., 16:32])
    assert not cap._hooks  # removed on exit


def _rebuilt_probs(q, k, n_heads, n_kv, head_dim, causal, bias=None):
    """softmax(q kᵀ / √d + bias) per head from captured (t, H·d) queries and (t, H_kv·d) keys."""
    t = q.shape[0]
    qh = q.reshape(t, n_heads, head_dim).transpose(0, 1)
    kh = k.reshape(t, n_kv, head_dim).transpose(0, 1).repeat_interleave(n_heads // n_kv, dim=0)
    scores = qh @ kh.transpose(1, 2) / head_dim ** 0.5
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1)


def _rotary(model_rotary, apply, q, k, n_heads, n_kv, head_dim):
    t = q.shape[0]
    qh = q.reshape(1, t, n_heads, head_dim).transpose(1, 2)
    kh = k.reshape(1, t, n_kv, head_dim).transpose(1, 2)
    cos, sin = model_rotary(qh, torch.arange(t)[None])
    qr, kr = apply(qh, kh, cos, sin)
    return qr.transpose(1, 2).reshape(t, -1), kr.transpose(1, 2).reshape(t, -1)


@pytest.mark.parametrize("family", ["bert", "gpt2", "opt", "llama-gqa", "gpt_neox", "bloom"])
def test_captured_queries_and_keys_rebuild_the_models_own_attention(family):
    """Each family's Q/K capture (separate or fused projections, split per layout) rebuilds the attention
    probabilities the model returns: softmax(QKᵀ/√d) with its causal mask, its rotary embedding applied to the
    captured (pre-rotary) queries and keys, or BLOOM's ALiBi bias."""
    import transformers as tf

    torch.manual_seed(0)
    common = dict(vocab_size=60, attn_implementation="eager")
    n_heads, n_kv, d = 4, 4, 8
    if family == "bert":
        model = tf.BertModel(tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=16, **common))
    elif family == "gpt2":
        model = tf.GPT2Model(tf.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=16, **common))
    elif family == "opt":
        model = tf.OPTModel(tf.OPTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=16,
                                         word_embed_proj_dim=32, max_position_embeddings=16, **common))
    elif family == "llama-gqa":
        n_kv = 2
        model = tf.LlamaModel(tf.LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                             num_key_value_heads=2, intermediate_size=16, **common))
    elif family == "gpt_neox":
        model = tf.GPTNeoXModel(tf.GPTNeoXConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                 intermediate_size=16, rotary_pct=1.0, **common))
    else:
        model = tf.BloomModel(tf.BloomConfig(hidden_size=32, n_layer=2, n_head=4, **common))
    model.eval()
    ids = torch.randint(3, 60, (1, 9))
    with torch.inference_mode(), capture_queries_keys(model) as cap:
        out = model(ids, output_attentions=True)
    sites = cap.sites
    assert len(sites) == 2
    q, k = cap.captured[sites[1].name][0]
    q, k = q[0], k[0]
    bias = None
    if family == "llama-gqa":
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        q, k = _rotary(model.rotary_emb, apply_rotary_pos_emb, q, k, n_heads, n_kv, d)
    elif family == "gpt_neox":
        from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

        q, k = _rotary(model.rotary_emb, apply_rotary_pos_emb, q, k, n_heads, n_kv, d)
    elif family == "bloom":
        from transformers.models.bloom.modeling_bloom import build_alibi_tensor

        bias = build_alibi_tensor(torch.ones(1, 9), 4, torch.float32).reshape(4, 1, 9)
    rebuilt = _rebuilt_probs(q, k, n_heads, n_kv, d, causal=family != "bert", bias=bias)
    assert torch.allclose(rebuilt, out.attentions[1][0], atol=1e-5)


def test_a_dropped_batch_is_freed_before_the_next_forward_pass(tiny_bert_entry):
    """The generator keeps no reference to the batch it yielded nor to the model output it came from: once the
    consumer drops a batch, its hidden states (and the padded states behind ``without_first``) are freed, before
    the next batch's forward pass runs."""
    import weakref

    loaded = load_model(tiny_bert_entry)
    batches = iter_text_hidden_states(loaded.model, loaded.tokenizer, TEXTS, batch_size=2, max_length=32,
                                      final_norm=True)
    refs = []
    for batch in batches:
        padded = batch.without_first_states.args[0][1]  # one of the model output's padded hidden states
        refs.append((weakref.ref(batch.layers[1]), weakref.ref(padded)))
        del batch, padded
        assert all(r() is None for r in refs[-1]), "a dropped batch's tensors are still held"
    assert len(refs) == 2
