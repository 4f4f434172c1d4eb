"""Throughput of the streamed accumulator against the one-shot metrics on the same data (same run).

Run: ``pytest benchmarks/ --benchmark-only``. Compare the ``streamed`` and
``one_shot`` rows: the ratio is what matters, not the absolute times.
"""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics
from aniso.stats.accumulators import LayerAccumulator

D, N, BATCH = 384, 16_384, 1024


@pytest.fixture(scope="module")
def hidden_states():
    return np.random.default_rng(0).standard_normal((N, D)).astype(np.float32) + 0.3


def _streamed(x):
    acc = LayerAccumulator(D, reservoir_size=4096, svd_batch_size=4096, seed=0)
    for s in range(0, len(x), BATCH):
        acc.update(x[s : s + BATCH])
    return acc


def _one_shot(x):
    x64 = x.astype(np.float64)
    return metrics.mean_cosine(x64), metrics.drift_norm(x64), metrics.svd_anisotropy(x64)


@pytest.mark.benchmark(group="layer-statistics")
def test_streamed(benchmark, hidden_states):
    acc = benchmark(_streamed, hidden_states)
    assert acc.count == N


@pytest.mark.benchmark(group="layer-statistics")
def test_one_shot(benchmark, hidden_states):
    cos, _, _ = benchmark(_one_shot, hidden_states)
    assert 0 < cos < 1


# -- CNN feature maps: first-order statistics of flattened C·H·W maps, one vector per image ---------------------

D_MAP, N_IMAGES = 32 * 112 * 112, 64  # EfficientNet-Lite0's stem output


@pytest.fixture(scope="module")
def feature_maps():
    return np.maximum(np.random.default_rng(0).standard_normal((N_IMAGES, D_MAP)).astype(np.float32), 0)


def _first_order(x):
    acc = LayerAccumulator(D_MAP, second_order=False)
    for s in range(0, len(x), 16):
        acc.update(x[s : s + 16])
    return acc


def _pairwise(x):
    """Baseline: the exact avg cos from the full Gram matrix of the normalised maps."""
    u = x.astype(np.float64) / np.linalg.norm(x, axis=1, keepdims=True)
    g = u @ u.T
    n = len(u)
    return (g.sum() - n) / (n * (n - 1))


@pytest.mark.benchmark(group="cnn-maps")
def test_first_order_maps(benchmark, feature_maps):
    acc = benchmark(_first_order, feature_maps)
    assert np.isclose(acc.summary().mean_cosine, _pairwise(feature_maps), rtol=1e-9)


@pytest.mark.benchmark(group="cnn-maps")
def test_pairwise_maps(benchmark, feature_maps):
    assert 0 < benchmark(_pairwise, feature_maps) < 1
