"""The attention on the first token, read at the model's own attention (SDPA) from its queries and keys, against
the probabilities of transformers' eager attention: every text family of the registry's tiny configs, with padding,
causal and bidirectional masks, grouped-query heads, rotary and ALiBi positions."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch
from hypothesis import given, strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode

from aniso.extract.attention import (FirstTokenAttention, attention_with_logsumexp, first_column,
                                    first_key_probabilities, first_key_probabilities_from_lse)
from aniso.extract.hidden import attention_sites, iter_text_hidden_states
from aniso.extract.modalities import modality_of
from aniso.registry.entries import load_registry

REGISTRY = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")

#: One registry entry per tiny text configuration whose attention the sink statistic reads (encoders, decoders).
#: Rows whose model is their repository's own code (CharacterBERT) run, without it, on the transformers classes
#: their twin builds (``aniso.sources.twin``: BertModel for CharacterBERT), a family already here.
FAMILIES = {json.dumps(e.tiny, sort_keys=True): e for e in REGISTRY
            if e.modality == "text" and e.tiny is not None and e.role in ("encoder", "decoder")
            and not e.needs_remote_code}
#: Texts of different lengths (padding in every batch), some longer than Gemma 3's tiny sliding window (16 tokens).
TEXTS = ["Anisotropy of hidden states.",
         "The tower is 324 metres tall, about the same height as an 81-storey building, and was the tallest for "
         "41 years.",
         "During its construction, the Eiffel Tower surpassed the Washington Monument.",
         "Tall."]


def _build(entry, attn: str | None, extra: dict | None = None):
    from transformers import AutoConfig, AutoModel

    fields = dict(entry.tiny) | (extra or {})
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModel.from_config(config, **({"attn_implementation": attn} if attn else {})).eval()
    return model, modality_of(entry).tiny_preprocessors(entry, config)[0]


def _keep(on_first, mask, layer):
    return on_first


def _measured(model, tokenizer, backend=None):
    """(b, H, t) per layer from the model's own attention, and the batch's mask; ``backend``: an SDPA backend to
    restrict SDPA to (``torch.nn.attention.sdpa_kernel``), None: SDPA's own choice."""
    reader = FirstTokenAttention([model.get_submodule(s.name) for s in attention_sites(model)], reduce=_keep)
    enc = tokenizer(TEXTS, padding=True, truncation=True, max_length=48, return_tensors="pt")
    mask = enc["attention_mask"].bool()
    restrict = sdpa_kernel(backend) if backend is not None else contextlib.nullcontext()
    try:
        with torch.inference_mode(), restrict, reader.reading(mask):
            model(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")})
        return reader.take(), enc, mask
    finally:
        reader.remove()


def _eager(model, enc, mask):
    with torch.inference_mode():
        out = model(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}, output_attentions=True)
    return [first_column(a, mask.long().argmax(1)) for a in out.attentions]


def _family(model_type: str):
    return next(e for e in FAMILIES.values() if e.tiny["model_type"] == model_type)


#: Grouped-query heads: 4 query heads on 1 key/value head in Llama (the registry's tiny Llama has 2 on 2, Gemma 3's
#: 4 on 1, Falcon's multi-query 4 on 1).
CASES = [(e.id, e, None) for e in FAMILIES.values()] + [("llama-mqa", _family("llama"), {"num_key_value_heads": 1})]


@pytest.mark.parametrize("backend", [None, SDPBackend.MATH], ids=["own-kernel", "math-kernel"])
@pytest.mark.parametrize("name, entry, extra", CASES, ids=[c[0] for c in CASES])
def test_first_token_attention_equals_the_eager_probabilities(name, entry, extra, backend):
    """For every real query row of every layer and head: the probability on the sequence's first token, from the
    model's default attention, equals eager attention's to 1e-6 (same weights, the same padded batch); read from
    the log-sum-exp of SDPA's own (CPU flash) kernel, and with SDPA restricted to its math kernel, where the lse is
    not returned and a second SDPA call gives the probabilities."""
    model, tokenizer = _build(entry, None, extra)
    got, enc, mask = _measured(model, tokenizer, backend)
    if entry.tiny["model_type"] == "canine":
        # CANINE's attention is eager-only and returns no map unless asked, and calls no SDPA: not measured.
        assert got is None
        return
    assert got is not None, f"{name}: nothing measured under {model.config._attn_implementation}"
    eager, _ = _build(entry, "eager", extra)
    want = _eager(eager, enc, mask)
    assert len(got) == len(want)
    rows = mask[:, None, :].expand_as(want[0])
    assert mask.sum(1).unique().numel() > 1  # the batch is padded
    hidden = []
    for layer, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, layer
        diff = (a - b.double()).abs()[rows]
        assert float(diff.max()) <= 1e-6, (name, layer, float(diff.max()))
        hidden.append(bool((a[rows] == 0).any()))
    # Only a sliding window (Gemma 3's local layers, 16 tokens in its tiny config) hides the first token from a row.
    assert any(hidden) == ("sliding_window" in entry.tiny), hidden


class _OwnProbabilities(TorchFunctionMode):
    """SDPA's own probability on the first key: the same call with values that are 1 on that key, 0 elsewhere."""

    def __init__(self, first):
        super().__init__()
        self.first, self.got = first, []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            q, k, v = args[:3]
            one_hot = torch.zeros(*v.shape[:3], 1, dtype=v.dtype)
            one_hot[torch.arange(v.shape[0]), :, self.first] = 1.0
            self.got.append(func(q, k, one_hot, *args[3:], **kwargs)[..., 0])
        return func(*args, **kwargs)


#: Every family whose default attention calls SDPA, and ALiBi through SDPA: Falcon with ``alibi`` adds it to the mask
#: SDPA receives (its eager path adds it a second time, so eager is no reference there).
SDPA_CASES = [(e.id, e, None) for e in FAMILIES.values()
              if e.tiny["model_type"] not in ("bloom", "gptj", "canine")] + [("falcon-alibi", _family("falcon"),
                                                                               {"alibi": True})]


@pytest.mark.parametrize("name, entry, extra", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_first_token_attention_equals_sdpas_own_probabilities(name, entry, extra):
    """Where the model runs SDPA, the probabilities read from its queries and keys are the ones SDPA applies (to
    1e-6): SDPA itself, given values that pick the first key, returns them."""
    model, tokenizer = _build(entry, None, extra)
    got, enc, mask = _measured(model, tokenizer)
    own = _OwnProbabilities(mask.long().argmax(1))
    with torch.inference_mode(), own:
        model(**{k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")})
    assert got is not None and len(got) == len(own.got) > 0
    rows = mask[:, None, :].expand_as(got[0])
    for layer, (a, b) in enumerate(zip(got, own.got)):
        b = b.reshape(a.shape)  # one query row with grouped heads is packed along the rows
        assert float((a - b.double()).abs()[rows].max()) <= 1e-6, (name, layer)


def test_the_default_attention_is_kept_and_the_statistics_keep_the_sink():
    """The sink no longer switches the model to eager attention; the statistics still hold it per layer and head."""
    from aniso.stats.pipeline import compute_stats
    from aniso.common.settings import Settings

    entry = _family("llama")
    model, tokenizer = _build(entry, None)
    assert model.config._attn_implementation == "sdpa"
    list(iter_text_hidden_states(model, tokenizer, TEXTS[:1]))  # transformers' own recording hooks, set once
    hooks = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()]
    stats = compute_stats(entry, iter_text_hidden_states(model, tokenizer, TEXTS, attentions=True, batch_size=3),
                          None, Settings(), {})
    assert model.config._attn_implementation == "sdpa"
    sink = stats.meta["attention_sink"]
    assert [len(h) for h in sink["per_head"]] == [4, 4] and sink["rows"] == stats.meta["n_tokens"]
    assert [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()] == hooks  # all removed


def _softmax_reference(q, k, mask, causal, scale, first):
    """The float64 softmax of the whole map, column ``first``."""
    heads = q.shape[1]
    k = k.repeat_interleave(heads // k.shape[1], dim=1)
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    if causal:
        t = s.shape[-1]
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return first_column(p, first)


@pytest.mark.parametrize("name, entry, extra", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_reading_the_sink_leaves_the_hidden_states_bit_identical(name, entry, extra):
    """The layer's SDPA call runs the kernel SDPA picks, with its log-sum-exp: the model's hidden states are the
    ones it gives unread, bit for bit."""
    model, tokenizer = _build(entry, None, extra)
    enc = tokenizer(TEXTS, padding=True, truncation=True, max_length=48, return_tensors="pt")
    inputs = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask")}
    with torch.inference_mode():
        plain = model(**inputs, output_hidden_states=True).hidden_states
    reader = FirstTokenAttention([model.get_submodule(s.name) for s in attention_sites(model)], reduce=_keep)
    try:
        with torch.inference_mode(), reader.reading(enc["attention_mask"].bool()):
            read = model(**inputs, output_hidden_states=True).hidden_states
        assert reader.take() is not None
    finally:
        reader.remove()
    assert all(torch.equal(a, b) for a, b in zip(plain, read))


def _random_call(b, kv, groups, t, e, kind, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    heads = kv * groups
    q = (torch.randn(b, heads, t, e, generator=gen) * 2).to(dtype)
    k = (torch.randn(b, kv, t, e, generator=gen) * 2).to(dtype)
    v = torch.randn(b, kv, t, e, generator=gen).to(dtype)
    lengths = torch.randint(1, t + 1, (b,), generator=gen)
    real = torch.arange(t)[None, :] < lengths[:, None]
    starts = torch.zeros(b, dtype=torch.int64)  # each sequence's first real token
    mask = None
    if kind == "bool":
        mask = (real[:, None, :, None] & real[:, None, None, :])  # padding rows attend nothing
    elif kind == "float":
        mask = (torch.where(real[:, None, None, :], 0.0, torch.finfo(torch.float32).min) +
                torch.randn(b, heads, t, t, generator=gen)).to(dtype)  # a bias per head (as ALiBi), padding keys out
    elif kind == "left-padded":  # left padding: the first real token is not at 0; a (b, 1, 1, s) key mask
        starts = t - lengths
        keys = torch.arange(t)[None, :] >= starts[:, None]
        mask = keys[:, None, None, :]
        real = keys
    return q, k, v, mask, real, starts


CALLS = dict(b=st.integers(1, 3), kv=st.sampled_from([1, 2]), groups=st.sampled_from([1, 3]), t=st.integers(1, 40),
             e=st.sampled_from([4, 8, 32]), kind=st.sampled_from(["none", "bool", "float", "causal", "left-padded"]),
             dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]), seed=st.integers(0, 2**16))


@given(**CALLS)
def test_first_key_probabilities_equal_the_float64_softmax(b, kv, groups, t, e, kind, dtype, seed):
    """Grouped heads, bool, additive or causal masks, left padding, padding rows that attend nothing: equal to the
    whole float64 softmax of the same scores to float32 rounding (1e-6); bfloat16 queries and keys are read in
    float32."""
    q, k, _, mask, real, first = _random_call(b, kv, groups, t, e, kind, dtype, seed)
    heads = kv * groups
    got = first_key_probabilities(q, k, first, attn_mask=mask, is_causal=kind == "causal", scale=0.3,
                                  enable_gqa=groups > 1)
    assert got.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    want = _softmax_reference(q, k, mask, kind == "causal", 0.3, first)
    rows = real[:, None, :].expand(b, heads, t)
    assert torch.allclose(got.double()[rows], want[rows], rtol=1e-6, atol=1e-6)


@given(**CALLS)
def test_attention_with_logsumexp_is_sdpa_bit_for_bit(b, kv, groups, t, e, kind, dtype, seed):
    """The output is SDPA's for the same call, bit for bit; the log-sum-exp is that of the float64 scores (1e-5
    relative in float32). bfloat16 inputs are not run here (the kernel rounds their scores)."""
    q, k, v, mask, real, _ = _random_call(b, kv, groups, t, e, kind, dtype, seed)
    call = dict(attn_mask=mask, is_causal=kind == "causal", scale=0.3, enable_gqa=groups > 1)
    got = attention_with_logsumexp(q, k, v, **call)
    if dtype == torch.bfloat16:
        assert got is None
        return
    assert got is not None  # on a CPU, SDPA picks its flash kernel for these calls
    out, lse = got
    assert torch.equal(out, torch.nn.functional.scaled_dot_product_attention(q, k, v, **call))
    kk = k.double().repeat_interleave(groups, dim=1)
    s = (q.double() @ kk.transpose(-1, -2)) * 0.3
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    if kind == "causal":
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    want = torch.logsumexp(s, -1)
    finite = torch.isfinite(want)
    assert torch.equal(torch.isfinite(lse) & finite, finite)
    assert torch.allclose(lse.double()[finite], want[finite], rtol=1e-5, atol=1e-5)


def test_attention_with_logsumexp_answers_none_where_sdpa_would_not_run_that_kernel():
    q = torch.randn(1, 2, 5, 8)
    assert attention_with_logsumexp(q, q, q, dropout_p=0.1) is None
    with sdpa_kernel(SDPBackend.MATH):
        assert attention_with_logsumexp(q, q, q) is None
    assert attention_with_logsumexp(q, q, q) is not None


@given(**(CALLS | dict(dtype=st.sampled_from([torch.float32, torch.float64]))))
def test_first_key_probabilities_from_lse_equal_the_float64_softmax(b, kv, groups, t, e, kind, dtype, seed):
    """From the kernel's log-sum-exp and one score per row: the softmax's column of the first real key (at 0, or
    after left padding) for every real row, within the bound of :func:`first_key_probabilities_from_lse`:
    |Δp| <= 1e-6 + 2e-6·p·M, M the row's largest |q|·|k|·scale (float32; float64 to 1e-12); rows that attend nothing
    and masked first keys give 0."""
    q, k, v, mask, real, first = _random_call(b, kv, groups, t, e, kind, dtype, seed)
    call = dict(attn_mask=mask, is_causal=kind == "causal", scale=0.3, enable_gqa=groups > 1)
    _, lse = attention_with_logsumexp(q, k, v, **call)
    got = first_key_probabilities_from_lse(q, k, first, lse, **call)
    assert got.shape == (b, kv * groups, t)
    want = _softmax_reference(q, k, mask, kind == "causal", 0.3, first)
    rows = real[:, None, :].expand(b, kv * groups, t)
    magnitude = (q.double().abs() @ k.double().abs().repeat_interleave(groups, 1).transpose(-1, -2)).amax(-1) * 0.3
    tol = 1e-6 + 2e-6 * want * magnitude if dtype == torch.float32 else 1e-12 * (1 + want * magnitude)
    assert bool(((got.double() - want).abs() <= tol)[rows].all())
    assert bool(torch.isfinite(got).all())
