"""The training-dynamics operationalisations on arrays whose answer is known, and the rule over seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from scipy.stats import binom

from aniso.judge import training_rules as tr


def _cos(first, last, shape=(4, 4)):
    return np.stack([np.full(shape, first), np.full(shape, (first + last) / 2), np.full(shape, last)])


def test_qk_means_align_in_common_or_opposite_direction():
    assert tr.qk_means_align(_cos(0.05, 0.6), 32).holds
    assert tr.qk_means_align(_cos(0.05, -0.6), 32).holds  # opposite directions align too
    r = tr.qk_means_align(_cos(0.05, 0.2), 32)  # grew, but not beyond q95(32) = 0.29
    assert not r.holds and r.measured["aligned_share"] == 0
    assert r.measured["q95_head_dim"] == pytest.approx(0.2913, abs=1e-3)
    cos = _cos(0.05, 0.6)
    cos[-1, :2] = 0.01  # 8 of 16 heads do not align
    r = tr.qk_means_align(cos, 32)
    assert not r.holds and r.measured["aligned_share"] == 0.5 and r.decided_not
    with pytest.raises(ValueError):
        tr.qk_means_align(np.zeros((1, 2, 2)), 32)


@hsettings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_alignment_ignores_the_sign_of_each_head(seed):
    rng = np.random.default_rng(seed)
    cos = rng.uniform(-1, 1, size=(3, 3, 4))
    signs = rng.choice([-1.0, 1.0], size=(1, 3, 4))
    a, b = tr.qk_means_align(cos, 16), tr.qk_means_align(cos * signs, 16)
    assert a.holds == b.holds and a.measured["aligned_share"] == b.measured["aligned_share"]


def test_direction_by_depth_is_a_test_against_isotropic_directions_not_a_sign():
    cos = np.array([[0.5, 0.4], [0.1, -0.1], [0.0, 0.1], [-0.3, -0.6]])
    r = tr.qk_direction_by_depth(cos, 16)
    assert r.holds and r.measured["layers_per_third"] == 1
    assert r.measured["p_first_third_positive"] < 0.05 and r.measured["p_last_third_negative"] < 0.05
    assert not tr.qk_direction_by_depth(-cos, 16).holds
    assert not tr.qk_direction_by_depth(np.abs(cos), 16).holds
    # The right signs, but within what unrelated directions give (std 1/sqrt(d_head) = 0.25 per head at d_head 16):
    # a sign rule held here; the test does not.
    weak = np.array([[0.05, 0.05], [0.0, 0.0], [0.0, 0.0], [-0.05, -0.05]])
    r = tr.qk_direction_by_depth(weak, 16)
    assert not r.holds and r.measured["p_first_third_positive"] == pytest.approx(
        1 - __import__("scipy.stats").stats.norm.cdf(0.05 * math.sqrt(2 * 16)))


def test_dot_grows_needs_a_significant_majority_of_heads_and_a_significant_trend():
    steps = np.arange(8) * 100
    dots = np.stack([np.full((2, 4), v) for v in np.linspace(0.1, 2.0, 8)])
    r = tr.qk_dot_grows(steps, -dots)  # magnitudes: negative dots count
    assert r.holds and r.measured["grown_share"] == 1 and r.measured["spearman_rho"] == pytest.approx(1)
    assert r.measured["p_value"] == pytest.approx(1 / math.factorial(8))
    assert not tr.qk_dot_grows(steps, dots[::-1]).holds
    # Four checkpoints: even a perfect trend has one-sided p = 1/24 < 0.05, but a shuffled one does not; with 4
    # points the test has little power, so a non-rejection is undecided, not a finding.
    few = np.stack([np.full((2, 4), v) for v in (0.1, 0.5, 0.3, 1.0)])
    r = tr.qk_dot_grows(steps[:4], few)
    assert not r.holds and r.undecided is not None and "power" in r.undecided


def test_a_positive_rho_that_is_not_significant_does_not_hold():
    """The old rule read the sign of rho: 9 checkpoints with rho = 0.24 > 0 held at p = 0.26. Now the test decides."""
    steps = np.arange(9.0)
    values = np.array([0.30, 0.33, 0.29, 0.31, 0.30, 0.28, 0.34, 0.32, 0.31])
    r = tr.grows_then_stabilises(steps, values)
    assert r.measured["spearman_rho"] > 0 and r.measured["p_value"] >= 0.05 and not r.holds


@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(0, 2**31 - 1))
def test_on_pure_noise_the_growth_rule_holds_at_most_at_its_level(seed):
    """Under no trend, grows_then_stabilises holds only where its one-sided test rejects (never on a sign)."""
    values = np.random.default_rng(seed).normal(size=9)
    r = tr.grows_then_stabilises(np.arange(9.0), values)
    assert not r.holds or r.measured["p_value"] < 0.05


def test_entropy_decays_in_every_layer_with_first_layers_sharper():
    steps = np.arange(6) * 100
    start = np.full((4, 4), 3.0)
    end = np.repeat(np.array([1.0, 1.5, 2.0, 2.5])[:, None], 4, axis=1) + np.arange(4) * 0.01
    series = np.stack([start + (end - start) * t for t in np.linspace(0, 1, 6)])
    r = tr.entropy_decays(steps, series)
    assert r.holds and r.measured["layers_decayed"] == 4
    assert r.measured["p_first_half_sharper"] < 0.05
    assert not tr.entropy_decays(steps, series[:, ::-1]).holds  # last layers sharper
    rising = series.copy()
    rising[:, 2] = np.linspace(3.0, 3.5, 6)[:, None]
    assert not tr.entropy_decays(steps, rising).holds  # one layer's entropy rose
    with pytest.raises(ValueError):
        tr.entropy_decays(steps[:2], series[:2])


def test_projections_grow_when_means_drift_along_the_first_direction():
    rng = np.random.default_rng(0)
    n_ckpt, d = 4, 6
    drift = np.eye(d)[0]
    q_mean = np.stack([np.tile(drift * (1 + 2 * s), (2, 3, 1)) for s in range(n_ckpt)])
    k_mean = -0.5 * q_mean
    q_mom = np.stack([np.einsum("lhi,lhj->lhij", q, q) + 0.01 * np.eye(d) for q in q_mean])
    k_mom = np.stack([np.einsum("lhi,lhj->lhij", k, k) + 0.01 * np.eye(d) for k in k_mean])
    r = tr.qk_projections_grow(q_mean, k_mean, q_mom, k_mom)
    assert r.holds and r.measured["share_qk"] == r.measured["share_k"] == r.measured["share_q"] == 1
    assert r.measured["p_qk"] == pytest.approx(0.5 ** 6)
    assert not tr.qk_projections_grow(q_mean[::-1], k_mean[::-1], q_mom[::-1], k_mom[::-1]).holds
    noise = rng.normal(size=q_mean.shape)
    assert tr.qk_projections_grow(q_mean + 0.01 * noise, k_mean, q_mom, k_mom).holds


def test_grows_then_stabilises():
    steps = np.array([0, 4, 8, 16, 32, 64, 128, 256, 512])
    saturating = 0.5 * (1 - np.exp(-steps / 30))
    r = tr.grows_then_stabilises(steps, saturating)
    assert r.holds and r.measured["range_last_third"] < r.measured["range_first_third"]
    assert not tr.grows_then_stabilises(steps, np.exp(steps / 200)).holds  # accelerating: no plateau
    assert not tr.grows_then_stabilises(steps, saturating[::-1]).holds  # falling


def test_rises_then_falls_by_welch_tests_over_the_batches():
    r = tr.rises_then_falls(np.array([10, 20, 30, 25, 20]), np.full(5, 1.0), 4)
    assert r.holds and r.measured["max_checkpoint"] == 2 and r.measured["drop"] == 10
    assert r.measured["p_fall"] < 0.05 and r.measured["p_rise"] < 0.05
    assert not tr.rises_then_falls(np.array([10, 20, 30, 25, 20]), np.full(5, 12.0), 4).holds  # within the noise
    assert not tr.rises_then_falls(np.array([10, 20, 30, 40, 50]), np.zeros(5), 4).holds  # peak at the end
    assert not tr.rises_then_falls(np.array([50, 40, 30, 20, 10]), np.zeros(5), 4).holds  # peak at the start
    # a drop of 1.1 batch stds held under the old one-std rule; over 4 batches it is not significant
    assert not tr.rises_then_falls(np.array([10, 20, 30, 29.0, 28.9]), np.full(5, 1.0), 4).holds
    with pytest.raises(ValueError):
        tr.rises_then_falls(np.array([1.0, 2.0]), np.zeros(2), 4)
    with pytest.raises(ValueError):
        tr.rises_then_falls(np.array([1.0, 2.0, 1.0]), np.zeros(3), 1)


@pytest.mark.parametrize("n, size", [(3, 2), (9, 3), (10, 3), (12, 4)])
def test_thirds(n, size):
    early, late = tr.thirds(n)
    assert early.stop - early.start == size and late.stop == n and late.stop - late.start == size


def _seeds(*codes: str) -> dict[str, tr.SeedResult]:
    """h: holds; n: decidedly does not hold; u: underpowered."""
    return {f"s{i}": tr.SeedResult(c == "h", {"x": i}, "too few points" if c == "u" else None)
            for i, c in enumerate(codes)}


def test_three_seeds_that_agree_cannot_decide_a_claim_over_seeds():
    holds, measured, undecided = tr.over_seeds(_seeds("h", "h", "h"))
    assert not holds and undecided is not None and "5 seeds" in undecided
    assert measured["sign_p_holds"] == pytest.approx(0.125) and measured["seeds_holding"] == 3
    assert tr.seeds_to_decide() == 5


def test_five_seeds_that_agree_decide_it_either_way_and_a_split_does_not():
    holds, measured, undecided = tr.over_seeds(_seeds(*"hhhhh"))
    assert holds and undecided is None and measured["sign_p_holds"] == pytest.approx(1 / 32)
    holds, measured, undecided = tr.over_seeds(_seeds(*"nnnnn"))
    assert not holds and undecided is None
    holds, _, undecided = tr.over_seeds(_seeds(*"hhhhn"))
    assert not holds and "neither side" in undecided
    # underpowered seeds count for neither side: four decided "not" and one underpowered are not five
    holds, measured, undecided = tr.over_seeds(_seeds(*"nnnnu"))
    assert not holds and undecided is not None and measured["seeds_underpowered"] == 1
    assert measured["per_seed"]["s4"]["underpowered"] and measured["per_seed"]["s0"]["x"] == 0
    with pytest.raises(ValueError):
        tr.over_seeds({})


@hsettings(max_examples=100, deadline=None)
@given(st.text("hnu", min_size=1, max_size=12))
def test_the_seeds_rule_is_the_one_sided_sign_test(codes):
    holds, measured, undecided = tr.over_seeds(_seeds(*codes))
    n, k_h, k_n = len(codes), codes.count("h"), codes.count("n")
    p_h, p_n = binom.sf(k_h - 1, n, 0.5), binom.sf(k_n - 1, n, 0.5)
    assert measured["sign_p_holds"] == pytest.approx(p_h) and measured["sign_p_does_not_hold"] == pytest.approx(p_n)
    assert holds == (p_h < 0.05)
    assert (undecided is None) == (p_h < 0.05 or p_n < 0.05)
    assert not (p_h < 0.05 and p_n < 0.05)  # both sides cannot be significant at once


def test_majority_test():
    assert tr.majority_test(16, 16) == pytest.approx(0.5 ** 16)
    assert tr.majority_test(12, 16) < 0.05 < tr.majority_test(11, 16)
    with pytest.raises(ValueError):
        tr.majority_test(0, 0)
