"""The untrained-block experiment (G §4): construction, hooks, measurements, fixed point, cache and report."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aniso import metrics
from aniso.experiments.untrained_block import (
    BLOCK_KINDS, BlockSweep, SweepSpec, bias_direction, build_block, default_bias_norms, draw_inputs,
    find_fixed_point, measure_point, run_sweep,
)
from aniso.stats.pipeline import BlockSweepProvider, block_sweep_specs
from aniso.registry.entries import ModelEntry
from aniso.common.settings import Settings
from aniso.stats.cache import JsonCache

TINY = {
    "bert-post-ln": dict(hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=300),
    "bert-identity-attention": dict(hidden_size=32, num_attention_heads=4, intermediate_size=64, vocab_size=300),
    "gpt2-pre-ln": dict(n_embd=32, n_head=4, n_layer=2, vocab_size=300, bos_token_id=0, eos_token_id=0),
    "llama-pre-rmsnorm": dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=4, intermediate_size=64,
                              vocab_size=300),
}


def tiny_spec(kind: str, seed: int = 0, **kw) -> SweepSpec:
    base = dict(norms=default_bias_norms(6, top=40.0), n_sequences=3, seq_len=16, config=tuple(sorted(TINY[kind].items())),
                chunk=2, score_sample=64, hist_bins=10)
    base.update(kw)
    return SweepSpec(kind, seed, **base)


@pytest.mark.parametrize("kind", BLOCK_KINDS)
def test_capture_shapes_and_scores_match_softmax(kind):
    block = build_block(kind, 0, TINY[kind])
    x = draw_inputs(block.table, 2, 10, 0)
    out, cap = block.forward(x + 3.0 * bias_direction(block.dim, 0), capture=True)
    assert out.shape == (2, 10, 32)
    if kind == "bert-identity-attention":
        assert cap is None and not block.has_attention
        return
    assert cap.queries.shape == cap.keys.shape == (2, 4, 10, 8)
    assert cap.scores.shape == cap.probs.shape == (2, 4, 10, 10)
    # the reconstructed pre-softmax scores are the ones the block's own softmax received
    torch.testing.assert_close(torch.softmax(cap.scores, -1), cap.probs, atol=1e-6, rtol=1e-5)


def test_bert_block_initialised_as_bert():
    block = build_block("bert-post-ln", 3, dict(hidden_size=256, num_attention_heads=4, intermediate_size=512,
                                                vocab_size=2000))
    q = block.attention.query
    assert abs(float(q.weight.detach().std()) - 0.02) < 0.001 and float(q.bias.detach().abs().max()) == 0.0
    ln = block.block.output.LayerNorm
    assert float((ln.weight.detach() - 1).abs().max()) == 0.0 and float(ln.bias.detach().abs().max()) == 0.0
    assert abs(float(block.table.std()) - 0.02) < 0.001
    assert bool((block.table.norm(dim=1) > 0).all()), "the zero padding row must not be drawable"


def test_build_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = build_block("llama-pre-rmsnorm", 7, TINY["llama-pre-rmsnorm"])
    after = torch.rand(1)
    b = build_block("llama-pre-rmsnorm", 7, TINY["llama-pre-rmsnorm"])
    c = build_block("llama-pre-rmsnorm", 8, TINY["llama-pre-rmsnorm"])
    assert torch.equal(before, after)
    assert torch.equal(a.attention.q_proj.weight, b.attention.q_proj.weight)
    assert not torch.equal(a.attention.q_proj.weight, c.attention.q_proj.weight)


def test_bad_kind_and_config_named():
    with pytest.raises(ValueError, match="unknown block kind 'opt'"):
        build_block("opt", 0)
    with pytest.raises(ValueError, match="unknown block kind"):
        SweepSpec("opt")
    with pytest.raises(ValueError, match="increasing"):
        SweepSpec("bert-post-ln", norms=(0.0, 2.0, 1.0))
    with pytest.raises(ValueError, match="at least 3"):
        default_bias_norms(2)


def test_measure_point_against_direct_computation():
    spec = tiny_spec("bert-post-ln", chunk=1)
    block = build_block("bert-post-ln", 0, TINY["bert-post-ln"])
    x = draw_inputs(block.table, 3, 16, 0)
    bias = 5.0 * bias_direction(block.dim, 0)
    p = measure_point(block, x, bias, spec, torch.Generator().manual_seed(0))
    out, cap = block.forward(x + bias, capture=True)
    h = (x + bias).reshape(-1, 32).double().numpy()
    assert p.input_mean_cos == pytest.approx(metrics.mean_cosine(h), abs=1e-9)
    assert p.output_mean_cos == pytest.approx(metrics.mean_cosine(out.reshape(-1, 32).double().numpy()), abs=1e-6)
    assert p.input_mean_norm == pytest.approx(float(np.linalg.norm(h, axis=1).mean()), rel=1e-9)
    probs = cap.probs.double()
    srt = probs.sort(-1).values
    assert p.row_max == pytest.approx(float(srt[..., -1].mean()), rel=1e-5)
    assert p.row_min == pytest.approx(float(srt[..., 0].mean()), rel=1e-5)
    assert p.row_median == pytest.approx(float(srt[..., 7:9].mean(-1).mean()), rel=1e-5)
    entropy = float((-(probs * probs.log()).sum(-1)).mean())
    assert p.row_entropy == pytest.approx(entropy, rel=1e-5)
    assert p.seq_max == pytest.approx(float(probs.amax((-1, -2)).mean()), rel=1e-5)
    assert p.score_std == pytest.approx(float(cap.scores.double().std(unbiased=False)), rel=1e-4)
    q = cap.queries.double()
    assert p.query_mean_norm == pytest.approx(float(q.norm(dim=-1).mean()), rel=1e-6)
    head0 = q[:, 0].reshape(-1, 8).numpy()
    assert p.query_cos_per_head[0] == pytest.approx(metrics.mean_cosine(head0), abs=1e-6)
    assert sum(p.score_hist_counts) == 3 * spec.score_sample


def test_find_fixed_point_on_a_known_function():
    norms = [0.0, 1.0, 2.0, 4.0, 8.0]
    calls = []

    def gap(n):
        calls.append(n)
        return 3.0 - n

    fp = find_fixed_point(norms, [gap(n) for n in norms], gap)
    assert fp.n_star == pytest.approx(3.0, abs=1e-3) and fp.sign_changes == 1 and fp.bracket == (2.0, 4.0)
    assert fp.evaluations == len(calls) - len(norms) and fp.evaluations >= 1
    assert find_fixed_point(norms, [1, 2, 3, 4, 5], gap).n_star is None
    exact = find_fixed_point(norms, [1, 0, -1, -2, -3], gap)
    assert exact.n_star == 1.0 and exact.evaluations == 0
    with pytest.raises(ValueError, match="differ in length"):
        find_fixed_point(norms, [1, 2], gap)


def test_run_sweep_is_deterministic_and_round_trips():
    spec = tiny_spec("bert-post-ln")
    a, b = run_sweep(spec), run_sweep(spec)
    assert a.to_dict()["points"] == b.to_dict()["points"]
    # a post-LN block's outputs have norm sqrt(d): the fixed point sits near sqrt(32)
    assert a.fixed_point.n_star == pytest.approx(math.sqrt(32), rel=0.02)
    again = BlockSweep.from_dict(a.to_dict())
    assert again.to_dict() == a.to_dict() and again.spec == spec


def test_provider_caches_sweeps(tmp_path):
    entry = ModelEntry(id="tiny-block", source={"kind": "init", "block": "gpt2-pre-ln", "config": TINY["gpt2-pre-ln"]},
                       modality="embeddings", granularity="embedding", architecture="transformer", role="block",
                       family="gpt2", tags=["untrained-block"])
    settings = Settings(cache_dir=str(tmp_path), block_seeds=2, block_sequences=2, block_seq_len=8, n_bias_norms=4)
    specs = block_sweep_specs(entry, settings)
    assert [s.seed for s in specs] == [0, 1] and len(specs[0].norms) == 4
    first = BlockSweepProvider(settings).get(entry)
    second = BlockSweepProvider(settings).get(entry)
    assert [s.meta["cache"]["hit"] for s in first] == [False, False]
    assert [s.meta["cache"]["hit"] for s in second] == [True, True]
    assert second[1].to_dict()["points"] == first[1].to_dict()["points"]
    assert "untrained-block" in entry.all_tags and "untrained" in entry.all_tags


def test_json_cache_recomputes_corrupt_entries(tmp_path):
    cache = JsonCache(tmp_path)
    cache.save("k", {"a": [1, 2]})
    assert cache.load("k") == {"a": [1, 2]}
    path = tmp_path / "k.json"
    path.write_text(path.read_text().replace("[1, 2]", "[1, 3]"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert cache.load("k") is None
    assert "corrupt" in str(w[0].message) and "k.json" in str(w[0].message)


@given(st.lists(st.integers(-1000, 1000), min_size=3, max_size=30, unique=True))
def test_monotonic_trend_of_an_increasing_transform_is_one(xs):
    x = np.array(sorted(xs), dtype=float)
    assert metrics.monotonic_trend(x, np.exp(x / 100.0)).coefficient == pytest.approx(1.0)
    assert metrics.monotonic_trend(x, -x).coefficient == pytest.approx(-1.0)
    flat = metrics.monotonic_trend(x, np.ones_like(x))
    assert np.isnan(flat.coefficient) and np.isnan(flat.p_value)  # a constant series has no order: nothing tested


def test_the_identity_attention_control_differs_only_by_attention():
    """G.block-norm-fixed-point's control: the same seed gives the same weights except attention, the same inputs
    and drift; the post-LN block's N* is the same with and without attention (the LayerNorm's norm, near √d)."""
    from aniso.experiments.untrained_block import identity_attention_control

    spec = tiny_spec("bert-post-ln", seed=3)
    block = build_block("bert-post-ln", 3, dict(spec.config))
    control = build_block("bert-identity-attention", 3, dict(spec.config))
    assert torch.equal(block.table, control.table)
    kept = dict(control.block.named_parameters())
    shared = [n for n, _ in block.block.named_parameters() if n in kept]
    assert len(shared) == len(kept) >= 8 and not any(".self." in n for n in kept)
    assert all(torch.equal(p, kept[n]) for n, p in block.block.named_parameters() if n in kept)
    with_attention = run_sweep(spec).fixed_point
    without = identity_attention_control(spec)
    assert without.n_star is not None and without.sign_changes == 1
    assert without.n_star == pytest.approx(with_attention.n_star, rel=1e-3)
    assert without.n_star == pytest.approx(math.sqrt(32), rel=0.02)
    with pytest.raises(ValueError, match="'gpt2-pre-ln' has no identity-attention control"):
        identity_attention_control(tiny_spec("gpt2-pre-ln"))
