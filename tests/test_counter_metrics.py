"""IsoScore, per-dimension contributions and partition isotropy (aniso.metrics), with Hypothesis properties and a
check against the IsoScore package; the streamed statistics behind massive activations, rogue dimensions and the
attention sink (aniso.stats.accumulators)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso import metrics
from aniso.stats.accumulators import AttentionSink, LayerAccumulator


@given(st.integers(2, 40), st.data())
def test_isoscore_of_k_equally_used_dimensions_is_k_minus_1_over_n_minus_1(n, data):
    k = data.draw(st.integers(1, n))
    lam = np.zeros(n)
    lam[:k] = data.draw(st.floats(0.01, 100))
    assert metrics.isoscore_from_eigenvalues(lam) == pytest.approx((k - 1) / (n - 1), abs=1e-9)


@given(st.integers(0, 2**31 - 1), st.integers(3, 12), st.floats(0.1, 50))
@settings(max_examples=30)
def test_isoscore_is_in_0_1_and_free_of_scale_and_rotation(seed, d, scale):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(60, d)) * rng.uniform(0.1, 3, size=d)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    s = metrics.isoscore(x)
    assert 0 <= s <= 1
    assert metrics.isoscore(scale * x @ q) == pytest.approx(s, abs=1e-9)
    n = x.shape[0]
    assert metrics.isoscore_from_moments(x.sum(0), x.T @ x, n) == pytest.approx(s, abs=1e-9)


def test_isoscore_matches_the_isoscore_package():
    """The IsoScore package 2.0.1 (points as rows; torch float64 inside) on the same points."""
    from IsoScore.IsoScore import IsoScore

    rng = np.random.default_rng(0)
    for x in (rng.normal(size=(500, 8)), rng.normal(size=(300, 16)) @ np.diag(np.linspace(0.1, 5, 16)),
              np.c_[rng.normal(size=(200, 3)), np.zeros((200, 5))] @ np.linalg.qr(rng.normal(size=(8, 8)))[0]):
        assert metrics.isoscore(x) == pytest.approx(float(IsoScore(x)), abs=1e-6)


@given(st.integers(0, 2**31 - 1), st.integers(2, 30), st.integers(1, 10))
@settings(max_examples=40)
def test_dimension_contributions_sum_to_the_exact_avg_cos(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) + rng.normal(size=d)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = metrics.dimension_contributions(u.sum(0), (u * u).sum(0), n)
    assert c.sum() == pytest.approx(metrics.mean_cosine(x), abs=1e-10)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    assert c[0] == pytest.approx(np.mean([u[i, 0] * u[j, 0] for i, j in pairs]), abs=1e-10)


@given(st.integers(0, 2**31 - 1), st.integers(2, 6), st.integers(5, 40))
@settings(max_examples=30)
def test_partition_isotropy_is_in_0_1_and_rotation_invariant(seed, d, v):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(v, d)) * np.linspace(0.5, 2.0, d)  # distinct singular values: eigenvectors defined
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    iso = metrics.partition_isotropy(w)
    assert 0 < iso <= 1
    assert metrics.partition_isotropy(w @ q) == pytest.approx(iso, rel=1e-7)
    assert 0 < metrics.partition_isotropy(w, centre=True) <= 1


@given(st.integers(0, 2**31 - 1), st.integers(2, 12), st.integers(5, 300), st.sampled_from([0.0, 3.0]))
@settings(max_examples=30)
def test_partition_isotropies_share_one_gram_and_equal_the_direct_computation(seed, d, v, offset):
    """Raw and centred from one WᵀW and one pass (blocks of 7 rows here) equal the definition computed directly:
    the centred matrix's own eigenvectors, and Z(v) and Z(−v) each from their own product."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(v, d)) * np.linspace(0.5, 2.0, d) + offset * rng.normal(size=d)

    def direct(m):
        vectors = np.linalg.eigh(m.T @ m)[1]
        z = [np.log(np.exp(m @ vectors * sign).sum(0)) for sign in (1, -1)]
        return float(np.exp(np.min(z) - np.max(z)))

    raw, centred = metrics.partition_isotropies(w, chunk=7)
    assert raw == pytest.approx(direct(w), rel=1e-9)
    assert centred == pytest.approx(direct(w - w.mean(0)), rel=1e-9)
    assert (metrics.partition_isotropy(w), metrics.partition_isotropy(w, centre=True)) == \
        metrics.partition_isotropies(w)


def test_partition_isotropy_of_a_symmetric_set_is_1_and_of_a_shifted_one_less():
    d = 5
    sym = np.r_[np.eye(d), -np.eye(d)] * 2.0
    assert metrics.partition_isotropy(sym) == pytest.approx(1.0, abs=1e-12)
    shifted = sym + np.array([3.0, 0, 0, 0, 0])
    assert metrics.partition_isotropy(shifted) < 0.5
    assert metrics.partition_isotropy(shifted, centre=True) == pytest.approx(1.0, abs=1e-12)
    big = np.r_[np.eye(2), -np.eye(2)] * 800.0  # exp(800) overflows without log-sum-exp
    assert metrics.partition_isotropy(big) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="NaN"):
        metrics.partition_isotropy(np.array([[np.nan, 1.0]]))


def test_massive_activation_statistics_find_the_first_token_feature():
    rng = np.random.default_rng(0)
    acc = LayerAccumulator(6, reservoir_size=64, svd_batch_size=8)
    for _ in range(5):
        x = rng.normal(size=(10, 6))
        x[0, 3] = 500.0 + rng.normal()  # the first token of the sequence, feature 3
        acc.update(x, positions=np.arange(10))
    s = acc.summary()
    assert (s.massive_feature, s.massive_position) == (3, 0) and s.massive_value > 500
    assert s.massive_ratio > 100 and s.massive_first_token_cv < 0.01
    again = LayerAccumulator.from_state(acc.state()).summary()
    assert (again.massive_feature, again.massive_position) == (3, 0)


def test_rogue_dimension_statistics_and_standardisation():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 16))
    x[:, 5] += 30.0  # one rogue dimension: almost all of avg cos
    acc = LayerAccumulator(16, reservoir_size=400, svd_batch_size=100)
    acc.update(x)
    s = acc.summary()
    assert s.rogue_dims[0] == 5 and s.rogue_top3_share > 0.9 and s.mean_cosine > 0.5
    assert abs(s.mean_cosine_standardised) < s.q95


def test_attention_sink_share():
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    probs = torch.zeros(2, 2, 4, 4)
    probs[:, 0, :, 0] = 1.0  # head 0 attends to the first token only
    probs[:, 1, :, :] = 0.25  # head 1 spreads evenly
    sink = AttentionSink([2])
    sink.update([probs], mask)
    out = sink.result()
    assert out["per_head"][0] == pytest.approx([1.0, 0.25]) and out["share"] == 0.5 and out["rows"] == 7
    with pytest.raises(ValueError, match="heads"):
        sink.update([torch.zeros(2, 3, 4, 4)], mask)
    assert math.isfinite(out["share_per_layer"][0])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_partition_isotropies_of_a_tensor_are_those_of_its_values_in_float64(dtype):
    """A model's embedding matrix is measured as a tensor where it lies (here the CPU), block by block in float64:
    the same numbers as the array of its values."""
    rng = np.random.default_rng(3)
    w = torch.from_numpy(rng.normal(size=(500, 16)) * np.linspace(0.5, 2.0, 16) + 0.3).to(dtype)
    expected = metrics.partition_isotropies(w.to(torch.float64).numpy())
    got = metrics.partition_isotropies(w, chunk=64)
    assert got == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="NaN or infinite"):
        metrics.partition_isotropies(torch.full((3, 2), float("nan"), dtype=dtype))
