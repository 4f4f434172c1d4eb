"""Avg cos: the suite's exact one-pass estimator against the O(n²) pairwise mean and the pair-sampling estimator.

Run: ``pytest benchmarks/test_bench_mean_cosine.py --benchmark-only`` (``ANISO_BENCH_LARGE=1`` adds n = 10⁶). Each
group is one (n, d) of anisotropic Gaussian vectors (mean shifted by 0.3 per coordinate); its rows:

- ``one-pass``: :class:`aniso.stats.accumulators.LayerAccumulator` (first order) over batches of 4,096, then
  :func:`aniso.metrics.mean_cosine_from_unit_sum` — exact: avg cos = (‖Σu‖² − n) / (n(n − 1));
- ``pairwise``: the mean of the n(n − 1) off-diagonal cosines from blocked Gram matrices (exact; run up to
  n = 16,384, beyond which its O(n²·d) work is not run);
- ``sampled``: :func:`aniso.metrics.mean_cosine_sampled` with 20,000 seeded pairs (G's estimator); ``extra_info``
  gives its error against the exact value.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from aniso import metrics
from aniso.stats.accumulators import LayerAccumulator

SIZES = [1_000, 10_000, 100_000] + ([1_000_000] if os.environ.get("ANISO_BENCH_LARGE") else [])
DIMS = [384, 768]
PAIRWISE_MAX = 16_384
_EXACT: dict[tuple[int, int], float] = {}


@pytest.fixture(scope="module", params=[(n, d) for n in SIZES for d in DIMS], ids=lambda p: f"n{p[0]}-d{p[1]}")
def vectors(request):
    n, d = request.param
    return request.param, np.random.default_rng(0).standard_normal((n, d), dtype=np.float32) + 0.3


def _one_pass(x):
    acc = LayerAccumulator(x.shape[1], second_order=False)
    for s in range(0, len(x), 4096):
        acc.update(x[s : s + 4096])
    return metrics.mean_cosine_from_unit_sum(acc.unit_sum, acc.n_nonzero)


def _pairwise(x):
    u = torch.from_numpy(metrics.unit_rows(x)[0])
    total = 0.0
    for s in range(0, len(u), 2048):
        total += float((u[s : s + 2048] @ u.T).sum())
    n = len(u)
    return (total - n) / (n * (n - 1))


def _sampled(x):
    return metrics.mean_cosine_sampled(x, 20_000, np.random.Generator(np.random.PCG64(0)))


@pytest.mark.parametrize("row", ["one-pass", "pairwise", "sampled"])
def test_mean_cosine(benchmark, vectors, row):
    (n, d), x = vectors
    benchmark.group = f"avg cos n={n} d={d}"
    if row == "pairwise" and n > PAIRWISE_MAX:
        pytest.skip(f"O(n²·d) pairwise mean not run beyond n = {PAIRWISE_MAX}")
    value = benchmark.pedantic({"one-pass": _one_pass, "pairwise": _pairwise, "sampled": _sampled}[row], args=(x,),
                               rounds=1 if n >= 100_000 else 3, iterations=1)
    benchmark.extra_info["avg_cos"] = value
    if row == "one-pass":
        _EXACT[(n, d)] = value
    elif (n, d) in _EXACT:
        exact = _EXACT[(n, d)]
        benchmark.extra_info["error_vs_exact"] = value - exact
        if row == "pairwise":
            assert value == pytest.approx(exact, rel=1e-9)
        else:
            assert abs(value - exact) < 0.01  # 20,000 pairs: standard error ~ 0.001 here
