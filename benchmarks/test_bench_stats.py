"""Throughput of the streamed accumulator against the one-shot metrics on the same data (same run).

Run: ``pytest benchmarks/ --benchmark-only``. Compare the ``streamed`` and
``one_shot`` rows: the ratio is what matters, not the absolute times.
"""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics
from aniso.stats import LayerAccumulator

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
