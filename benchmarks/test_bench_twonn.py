"""TwoNN intrinsic dimension: the suite against the matrix-product bound and the peers, on the same points, same run.

Run: ``pytest benchmarks/test_bench_twonn.py --benchmark-only`` (``ANISO_BENCH_LARGE=1`` adds n = 65,536, about
two minutes a row on 2 cores). Each group is one (data, n, d); its rows:

- ``suite``: :func:`aniso.metrics.twonn_dimension` (exact: float32 blocks, float64 re-check of the candidates);
- ``bound``: the n²·d work any exact TwoNN does, a blocked float32 matrix product with a top-2 per row in torch
  (no estimate); the suite's time divided by this row's is the number to read;
- ``scikit-dimension`` (``skdim.id.TwoNN``) and ``dadapy`` (``Data.compute_id_2NN``), when installed. Neither is
  in the lock. scikit-dimension installs beside the suite (``pip install --no-deps scikit-dimension numba
  llvmlite``); dadapy needs NumPy < 2, so it runs in a virtual environment of its own whose Python
  ``ANISO_PEER_PYTHON`` names (``python -m venv peer && peer/bin/pip install "numpy<2" dadapy``): the benchmark
  hands it the points as a ``.npy`` file and reads back the estimate and the time measured inside that process
  (``extra_info["seconds_inside_peer"]``, without its start-up). A peer that cannot be run is reported as skipped.

Each row stores its estimate in ``extra_info``; the suite's must agree with every peer's within 2%.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from aniso import metrics

SIZES = [4096, 16_384] + ([65_536] if os.environ.get("ANISO_BENCH_LARGE") else [])
DIMS = [384, 768]
DATA = ["gaussian", "subspace-10"]
_ESTIMATES: dict[tuple, dict[str, float]] = {}


def _points(data: str, n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if data == "gaussian":
        return rng.standard_normal((n, d))
    basis = np.linalg.qr(rng.standard_normal((d, 10)))[0]  # an orthonormal 10-dimensional subspace of R^d
    return rng.standard_normal((n, 10)) @ basis.T


@pytest.fixture(scope="module", params=[(a, n, d) for a in DATA for n in SIZES for d in DIMS],
                ids=lambda p: f"{p[0]}-n{p[1]}-d{p[2]}")
def case(request):
    data, n, d = request.param
    return request.param, _points(data, n, d)


def _bound(x: np.ndarray) -> None:
    x32 = torch.from_numpy(x).float()
    for s in range(0, len(x32), 1024):
        torch.topk(x32[s : s + 1024] @ x32.T, 2, dim=1)


def _skdim(x: np.ndarray) -> float:
    import skdim

    return float(skdim.id.TwoNN(discard_fraction=0.1).fit(x).dimension_)


_DADAPY = """
import json, sys, time
import numpy as np
import dadapy
x = np.load(sys.argv[1])
t = time.perf_counter()
estimate = float(dadapy.Data(x).compute_id_2NN(algorithm="base", mu_fraction=0.9, data_fraction=1)[0])
print(json.dumps({"estimate": estimate, "seconds": time.perf_counter() - t}))
"""


def _dadapy(x: np.ndarray) -> float:
    try:
        import dadapy
    except ImportError:
        return _in_peer_python(x)
    return float(dadapy.Data(x).compute_id_2NN(algorithm="base", mu_fraction=0.9, data_fraction=1)[0])


def _in_peer_python(x: np.ndarray) -> float:
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", x)
        out = subprocess.run([os.environ["ANISO_PEER_PYTHON"], "-c", _DADAPY, f"{tmp}/x.npy"], capture_output=True,
                             text=True, check=True, timeout=3600)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    _PEER_SECONDS.append(got["seconds"])
    return got["estimate"]


_PEER_SECONDS: list[float] = []


def _peer_available(row: str) -> bool:
    import importlib.util

    if importlib.util.find_spec(PEER_MODULES[row]) is not None:
        return True
    return row == "dadapy" and bool(os.environ.get("ANISO_PEER_PYTHON"))


ROWS = {"suite": metrics.twonn_dimension, "bound": _bound, "scikit-dimension": _skdim, "dadapy": _dadapy}
PEER_MODULES = {"scikit-dimension": "skdim", "dadapy": "dadapy"}


@pytest.mark.parametrize("row", list(ROWS))
def test_twonn(benchmark, case, row):
    key, x = case
    if row in PEER_MODULES and not _peer_available(row):
        pytest.skip(f"{row} is not installed (a peer, not in the lock; see this module's docstring)")
    benchmark.group = f"twonn {key[0]} n={key[1]} d={key[2]}"
    estimate = benchmark.pedantic(ROWS[row], args=(x,), rounds=1, iterations=1, warmup_rounds=0)
    if row == "bound":
        return
    benchmark.extra_info["estimate"] = estimate
    if row == "dadapy" and _PEER_SECONDS:
        benchmark.extra_info["seconds_inside_peer"] = _PEER_SECONDS.pop()
    found = _ESTIMATES.setdefault(key, {})
    found[row] = estimate
    if row != "suite" and "suite" in found:
        assert abs(found["suite"] - estimate) <= 0.02 * estimate, found
    if key[0] == "subspace-10":
        assert 8 <= estimate <= 12  # points on a 10-dimensional subspace
