"""TwoNN intrinsic dimension: the suite against the matrix-product bound and the peers, on the same points, same run.

Run: ``pytest benchmarks/test_bench_twonn.py --benchmark-only`` (``ANISO_BENCH_LARGE=1`` adds n = 65,536, about
two minutes a row on 2 cores). The points, the bound and the peers are those of ``aniso bench twonn``
(:mod:`aniso.bench.twonn`), so the command and this file measure the same thing. Each group is one (data, n, d);
its rows:

- ``suite``: :func:`aniso.metrics.twonn_dimension` (exact: float32 blocks, float64 re-check of the candidates);
- ``bound``: :func:`aniso.bench.twonn.gemm_top2_bound`, the n²·d work any exact TwoNN does; the suite's time
  divided by this row's is the number to read;
- ``scikit-dimension`` and ``dadapy`` when they can run here (:func:`aniso.bench.twonn.available_peers`; neither is
  in the lock, see that module). A peer that cannot be run is reported as skipped.

Each row stores its estimate in ``extra_info``; the suite's must agree with every peer's within 2%.
"""

from __future__ import annotations

import os

import pytest

from aniso import metrics
from aniso.bench.twonn import DATA_KINDS, available_peers, gemm_top2_bound, make_points, run_peer

SIZES = [4096, 16_384] + ([65_536] if os.environ.get("ANISO_BENCH_LARGE") else [])
DIMS = [384, 768]
_ESTIMATES: dict[tuple, dict[str, float]] = {}


@pytest.fixture(scope="module", params=[(a, n, d) for a in DATA_KINDS for n in SIZES for d in DIMS],
                ids=lambda p: f"{p[0]}-n{p[1]}-d{p[2]}")
def case(request):
    data, n, d = request.param
    return request.param, make_points(n, d, data, seed=0)


@pytest.mark.parametrize("row", ["suite", "bound", "scikit-dimension", "dadapy"])
def test_twonn(benchmark, case, row):
    import torch

    key, x = case
    if row not in ("suite", "bound") and row not in available_peers():
        pytest.skip(f"{row} is not installed (a peer, not in the lock; see aniso.bench.twonn)")
    benchmark.group = f"twonn {key[0]} n={key[1]} d={key[2]}"
    if row == "bound":
        benchmark.pedantic(gemm_top2_bound, args=(torch.from_numpy(x),), rounds=1, iterations=1)
        return
    if row == "suite":
        estimate = benchmark.pedantic(metrics.twonn_dimension, args=(x,), rounds=1, iterations=1)
    else:
        got = benchmark.pedantic(run_peer, args=(row, x.astype("float64")), rounds=1, iterations=1)
        estimate = got["estimate"]
        benchmark.extra_info["seconds_inside_peer"] = got["s"]
    benchmark.extra_info["estimate"] = estimate
    found = _ESTIMATES.setdefault(key, {})
    found[row] = estimate
    if row != "suite" and "suite" in found:
        assert abs(found["suite"] - estimate) <= 0.02 * estimate, found
    if key[0] == "subspace":
        assert 8 <= estimate <= 12  # points on a 10-dimensional subspace
