"""The spectrum summaries of a centred scatter matrix: the dense symmetric eigensolver against what the suite uses.

Run: ``pytest benchmarks/test_bench_spectrum.py --benchmark-only``. Each group is one (device, d): the centred
scatter C (d, d, float64) of 4,096 anisotropic Gaussian rows (a common direction and feature scales over two orders
of magnitude, as hidden states have), on the CPU and, where present, on CUDA. Rows:

- ``eigvalsh``: ``torch.linalg.eigvalsh(C)``, the dense O(d³) solve the suite used for every SVD batch and every
  layer's whole-set summary (baseline);
- ``largest-eigenvalue``: :func:`aniso.metrics.largest_eigenvalue` (Lanczos), what the SVD anisotropy reads now;
  ``extra_info`` gives its relative difference from ``eigvalsh``'s λ_max;
- ``isoscore-trace-frobenius``: tr C and ‖C‖²_F then :func:`aniso.metrics.isoscore_from_trace_and_frobenius`,
  what IsoScore reads now (against IsoScore from ``eigvalsh``'s eigenvalues, in ``extra_info``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aniso import metrics

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DIMS = [384, 1024, 2048] + ([4096] if torch.cuda.is_available() else [])


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


@pytest.fixture(scope="module", params=[(dev, d) for dev in DEVICES for d in DIMS], ids=lambda p: f"{p[0]}-d{p[1]}")
def scatter(request):
    device, d = request.param
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, d)) * np.exp(rng.normal(size=d)) + 3 * rng.standard_normal((1, d))
    xc = x - x.mean(0)
    c = torch.from_numpy(xc.T @ xc).to(device)
    return device, (c + c.T) / 2


def _run(benchmark, device, fn):
    def call():
        out = fn()
        _sync(device)
        return out

    return benchmark.pedantic(call, rounds=5, warmup_rounds=1)


@pytest.mark.parametrize("row", ["eigvalsh", "largest-eigenvalue", "isoscore-trace-frobenius"])
def test_spectrum(benchmark, scatter, row):
    device, c = scatter
    benchmark.group = f"spectrum {device} d={c.shape[0]}"
    dense = torch.linalg.eigvalsh(c)
    if row == "eigvalsh":
        _run(benchmark, device, lambda: torch.linalg.eigvalsh(c))
    elif row == "largest-eigenvalue":
        lam = _run(benchmark, device, lambda: metrics.largest_eigenvalue(c))
        rel = abs(float(lam) - float(dense[-1])) / float(dense[-1])
        benchmark.extra_info["relative_difference"] = rel
        assert rel < 1e-9
    else:
        d = c.shape[0]
        iso = _run(benchmark, device, lambda: metrics.isoscore_from_trace_and_frobenius(
            float(torch.diagonal(c).sum()), float(torch.sum(c * c)), d))
        want = metrics.isoscore_from_eigenvalues(dense.cpu().numpy())
        benchmark.extra_info["isoscore"] = iso
        assert iso == pytest.approx(want, rel=1e-9)
