"""The training-dynamics operationalisations on arrays whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from aniso.judge import training_rules as tr


def _cos(first, last, shape=(4, 4)):
    return np.stack([np.full(shape, first), np.full(shape, (first + last) / 2), np.full(shape, last)])


def test_qk_means_align_in_common_or_opposite_direction():
    assert tr.qk_means_align(_cos(0.05, 0.6), 32)[0]
    assert tr.qk_means_align(_cos(0.05, -0.6), 32)[0]  # opposite directions align too
    holds, measured = tr.qk_means_align(_cos(0.05, 0.2), 32)  # grew, but not beyond q95(32) = 0.29
    assert not holds and measured["aligned_share"] == 0 and measured["q95_head_dim"] == pytest.approx(0.2913, abs=1e-3)
    cos = _cos(0.05, 0.6)
    cos[-1, :2] = 0.01  # 8 of 16 heads do not align
    holds, measured = tr.qk_means_align(cos, 32)
    assert not holds and measured["aligned_share"] == 0.5
    with pytest.raises(ValueError):
        tr.qk_means_align(np.zeros((1, 2, 2)), 32)


@hsettings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_alignment_ignores_the_sign_of_each_head(seed):
    rng = np.random.default_rng(seed)
    cos = rng.uniform(-1, 1, size=(3, 3, 4))
    signs = rng.choice([-1.0, 1.0], size=(1, 3, 4))
    a, b = tr.qk_means_align(cos, 16), tr.qk_means_align(cos * signs, 16)
    assert a[0] == b[0] and a[1]["aligned_share"] == b[1]["aligned_share"]


def test_direction_by_depth_needs_positive_first_and_negative_last_third():
    cos = np.array([[0.5, 0.4], [0.1, -0.1], [0.0, 0.1], [-0.3, -0.6]])
    holds, measured = tr.qk_direction_by_depth(cos)
    assert holds and measured["layers_per_third"] == 1
    assert not tr.qk_direction_by_depth(-cos)[0]
    assert not tr.qk_direction_by_depth(np.abs(cos))[0]


def test_dot_grows_needs_most_heads_and_a_positive_trend():
    steps = np.array([0, 10, 100, 1000])
    dots = np.stack([np.full((2, 2), v) for v in (0.1, 0.5, 1.0, 2.0)])
    holds, measured, p = tr.qk_dot_grows(steps, -dots)  # magnitudes: negative dots count
    assert holds and measured["grown_share"] == 1 and measured["spearman_rho"] == pytest.approx(1)
    assert not tr.qk_dot_grows(steps, dots[::-1])[0]


def test_entropy_decays_in_every_layer_with_first_layers_sharper():
    start = np.full((4, 2), 3.0)
    end = np.array([[1.0, 1.0], [1.5, 1.5], [2.0, 2.0], [2.5, 2.5]])
    holds, measured = tr.entropy_decays(np.stack([start, end]))
    assert holds and measured["layers_decayed"] == 4
    assert not tr.entropy_decays(np.stack([start, end[::-1]]))[0]  # last layers sharper
    end[2] = 3.5
    assert not tr.entropy_decays(np.stack([start, end]))[0]  # one layer's entropy rose


def test_projections_grow_when_means_drift_along_the_first_direction():
    rng = np.random.default_rng(0)
    n_ckpt, d = 4, 6
    drift = np.eye(d)[0]
    q_mean = np.stack([np.tile(drift * (1 + 2 * s), (2, 3, 1)) for s in range(n_ckpt)])
    k_mean = -0.5 * q_mean
    q_mom = np.stack([np.einsum("lhi,lhj->lhij", q, q) + 0.01 * np.eye(d) for q in q_mean])
    k_mom = np.stack([np.einsum("lhi,lhj->lhij", k, k) + 0.01 * np.eye(d) for k in k_mean])
    holds, measured = tr.qk_projections_grow(q_mean, k_mean, q_mom, k_mom)
    assert holds and measured["share_qk"] == measured["share_k"] == measured["share_q"] == 1
    holds, _ = tr.qk_projections_grow(q_mean[::-1], k_mean[::-1], q_mom[::-1], k_mom[::-1])
    assert not holds
    noise = rng.normal(size=q_mean.shape)
    assert tr.qk_projections_grow(q_mean + 0.01 * noise, k_mean, q_mom, k_mom)[0]


def test_grows_then_stabilises():
    steps = np.array([0, 4, 8, 16, 32, 64, 128, 256, 512])
    saturating = 0.5 * (1 - np.exp(-steps / 30))
    holds, measured, p = tr.grows_then_stabilises(steps, saturating)
    assert holds and measured["range_last_third"] < measured["range_first_third"]
    assert not tr.grows_then_stabilises(steps, np.exp(steps / 200))[0]  # accelerating: no plateau
    assert not tr.grows_then_stabilises(steps, saturating[::-1])[0]  # falling


def test_rises_then_falls_by_more_than_the_batch_std():
    holds, measured = tr.rises_then_falls(np.array([10, 20, 30, 25, 20]), np.full(5, 1.0))
    assert holds and measured["max_checkpoint"] == 2 and measured["drop"] == 10
    assert not tr.rises_then_falls(np.array([10, 20, 30, 25, 20]), np.full(5, 12.0))[0]  # within the noise
    assert not tr.rises_then_falls(np.array([10, 20, 30, 40, 50]), np.zeros(5))[0]  # peak at the end
    assert not tr.rises_then_falls(np.array([50, 40, 30, 20, 10]), np.zeros(5))[0]  # peak at the start
    with pytest.raises(ValueError):
        tr.rises_then_falls(np.array([1.0, 2.0]), np.zeros(2))


@pytest.mark.parametrize("n, size", [(3, 2), (9, 3), (10, 3), (12, 4)])
def test_thirds(n, size):
    early, late = tr.thirds(n)
    assert early.stop - early.start == size and late.stop == n and late.stop - late.start == size
