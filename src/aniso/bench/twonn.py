"""TwoNN intrinsic dimension: the suite against the matrix-product bound and the peers, on the same points, one run.

:func:`bench_twonn` times, on the points of :func:`make_points`:

- ``suite``: :func:`aniso.metrics.twonn_dimension` (exact: float32 blocks, float64 re-check of the candidates);
- ``bound``: :func:`gemm_top2_bound`, the n²·d work any exact TwoNN does: a float32 matrix product of the points
  against themselves in the suite's blocks of rows, with a top-2 per row (no estimate). ``ratio_to_bound`` =
  suite / bound is the number to read;
- the peers: ``dadapy`` (``Data.compute_id_2NN``) and ``scikit-dimension`` (``skdim.id.TwoNN``), each where it
  imports here, else in the virtual environment whose Python ``ANISO_PEER_PYTHON`` names (``python -m venv peer &&
  peer/bin/pip install "numpy<2" dadapy scikit-dimension``; neither is in the lock, and dadapy needs NumPy < 2):
  the points go to it as a ``.npy`` file and it reports its estimate and the time measured inside that process
  (without its start-up or imports). Peers get the same points in float64.
"""

from __future__ import annotations

import importlib.util
import math
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch

from aniso import metrics

DATA_KINDS = ("gaussian", "subspace", "massive")
#: Subspace dimension of ``data="subspace"``.
SUBSPACE_DIM = 10
#: ``data="massive"``: coordinate 0 of a random half of the rows is MASSIVE_VALUE·(1 + 0.01·g), g ~ N(0, 1).
MASSIVE_VALUE = 2000.0


def make_points(n: int, d: int, data: str = "gaussian", seed: int = 0) -> np.ndarray:
    """Points for the TwoNN benchmark, shape (n, d), float32, reproducible from ``seed``.

    - ``"gaussian"``: i.i.d. N(0, 1) coordinates (intrinsic dimension d);
    - ``"subspace"``: N(0, I₁₀) points on a random orthonormal 10-dimensional subspace of ℝ^d (dimension 10);
    - ``"massive"``: decoder-like: the Gaussian points, and on a random half of the rows (the tokens that carry
      a massive activation, as the first token and delimiters in SmolLM2 and large decoders) coordinate 0 is
      replaced by 2000·(1 + 0.01·g), g ~ N(0, 1): about 2·10³ times the other coordinates, varying by 1% across
      those rows. After centring that column is ±1000, so it dominates every row's norm.

    Raises
    ------
    ValueError for an unknown ``data``, n < 3 or d < 1 (``"subspace"`` needs d >= 10), a ``seed`` outside numpy's
    range (0 to 2**32 - 1, as the ``seed`` setting).
    """
    from ..common.settings import MAX_SEED

    if data not in DATA_KINDS:
        raise ValueError(f"data must be one of {DATA_KINDS}, got {data!r}")
    if n < 3 or d < 1:
        raise ValueError(f"TwoNN benchmark needs n >= 3 and d >= 1, got n={n}, d={d}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer from 0 to {MAX_SEED}, got {seed}")
    rng = np.random.default_rng(seed)
    if data == "subspace":
        if d < SUBSPACE_DIM:
            raise ValueError(f"data='subspace' needs d >= {SUBSPACE_DIM}, got d={d}")
        basis = np.linalg.qr(rng.standard_normal((d, SUBSPACE_DIM)))[0]
        return (rng.standard_normal((n, SUBSPACE_DIM)) @ basis.T).astype(np.float32)
    x = rng.standard_normal((n, d), dtype=np.float32)
    if data == "massive":
        rows = rng.permutation(n)[: n // 2]
        x[rows, 0] = MASSIVE_VALUE * (1 + 0.01 * rng.standard_normal(rows.size))
    return x


def gemm_top2_bound(points: torch.Tensor) -> None:
    """The lower bound of an exact TwoNN: float32 ``points @ points.T`` in blocks of the suite's rows
    (``metrics._NN_BLOCK``), a top-2 per row; on the device of ``points`` (shape (n, d)). Returns nothing."""
    x32 = points.float()
    for s in range(0, x32.shape[0], metrics._NN_BLOCK):
        torch.topk(x32[s : s + metrics._NN_BLOCK] @ x32.T, 2, dim=1)


def _timed(fn: Callable[[], object], device: str) -> tuple[float, object]:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
    t = time.perf_counter()
    out = fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
    return time.perf_counter() - t, out


def skdim_twonn(x: np.ndarray) -> float:
    """scikit-dimension's TwoNN (``skdim.id.TwoNN(discard_fraction=0.1)``) of ``x`` (n, d)."""
    import skdim

    return float(skdim.id.TwoNN(discard_fraction=0.1).fit(x).dimension_)


#: The peer process: argv = peer name, points (.npy); prints {"estimate", "seconds"} measured inside it.
_PEER = """
import json, sys, time
import numpy as np
x = np.load(sys.argv[2])
if sys.argv[1] == "dadapy":
    import dadapy
    run = lambda: dadapy.Data(x).compute_id_2NN(algorithm="base", mu_fraction=0.9, data_fraction=1)[0]
else:
    import skdim
    run = lambda: skdim.id.TwoNN(discard_fraction=0.1).fit(x).dimension_
t = time.perf_counter()
estimate = float(run())
print(json.dumps({"estimate": estimate, "seconds": time.perf_counter() - t}))
"""

#: Peer name -> its module.
_PEER_MODULES = {"dadapy": "dadapy", "scikit-dimension": "skdim"}


def dadapy_twonn(x: np.ndarray) -> float:
    """dadapy's TwoNN (``Data.compute_id_2NN``, 10% of the largest μ discarded) of ``x`` (n, d)."""
    import dadapy

    return float(dadapy.Data(x).compute_id_2NN(algorithm="base", mu_fraction=0.9, data_fraction=1)[0])


#: What to do about a Python ``ANISO_PEER_PYTHON`` names that cannot run the peers (then: how to leave them out).
PEER_REMEDY = ("point it at a Python that has dadapy and scikit-dimension (docs/performance.md: `python -m venv peer "
               "&& peer/bin/pip install \"numpy<2\" dadapy scikit-dimension`)")


class PeerFailed(RuntimeError):
    """A peer's process (``ANISO_PEER_PYTHON``) could not run or failed: one line naming the variable, its value and
    what went wrong (``problem``), then what to do (``bench_twonn``'s ``peers=False`` leaves the peers out; the
    command line says ``--no-peers``)."""

    def __init__(self, problem: str, way_out: str = "pass peers=False to leave the peers out"):
        super().__init__(f"{problem}; {PEER_REMEDY}, or {way_out}")
        self.problem = problem


def _error_line(stderr: str) -> str:
    """The line of a process's error output that says what went wrong: a Python traceback's last line (the
    exception), else the first line; empty when there is none."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def _run_peer_python(python: str, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """``python args`` run to its end, output captured; raises :class:`PeerFailed` (naming ``ANISO_PEER_PYTHON``)
    where it cannot start or exits with an error."""
    where = f"environment variable ANISO_PEER_PYTHON {python}"
    try:
        out = subprocess.run([python, *args], capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise PeerFailed(f"{where}: no such file") from None
    except PermissionError:
        raise PeerFailed(f"{where}: not an executable file") from None
    except OSError as exc:
        raise PeerFailed(f"{where}: cannot be run ({exc.strerror or exc})") from None
    except subprocess.TimeoutExpired:
        raise PeerFailed(f"{where}: did not finish in {timeout:.0f} s") from None
    if out.returncode != 0:
        line = _error_line(out.stderr)
        raise PeerFailed(f"{where}: exited {out.returncode}" + (f" ({line})" if line else " with no error output"))
    return out


def peer_python_problem(names: list[str] | None = None) -> str | None:
    """Why the Python ``ANISO_PEER_PYTHON`` names cannot run the peers ``names`` (default: those that do not import
    here), in words (no such file, not executable, or it exits with an error importing them, with the line of its
    error output that says why); None where it can, or where the variable is unset or no peer needs it."""
    python = os.environ.get("ANISO_PEER_PYTHON")
    if not python:
        return None
    names = [n for n in (_PEER_MODULES if names is None else names)
             if importlib.util.find_spec(_PEER_MODULES[n]) is None]
    if not names:
        return None
    modules = ", ".join(["numpy", *(_PEER_MODULES[n] for n in names)])
    try:
        _run_peer_python(python, ["-c", f"import {modules}"], timeout=600)
    except PeerFailed as exc:
        return str(exc)
    return None


def _in_peer_process(name: str, x: np.ndarray) -> tuple[float, float]:
    """(estimate, seconds measured inside the process) of peer ``name`` run by ``ANISO_PEER_PYTHON`` on ``x``.
    Raises :class:`PeerFailed` where that Python cannot run or the peer fails."""
    python = os.environ["ANISO_PEER_PYTHON"]
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/x.npy", x)
        out = _run_peer_python(python, ["-c", _PEER, name, f"{tmp}/x.npy"], timeout=3600)
    try:
        got = json.loads(out.stdout.strip().splitlines()[-1])
        return float(got["estimate"]), float(got["seconds"])
    except (ValueError, IndexError, KeyError, TypeError):
        raise PeerFailed(f"environment variable ANISO_PEER_PYTHON {python}: {name} printed no estimate "
                         f"({_error_line(out.stdout) or 'no output'})") from None


def available_peers() -> list[str]:
    """The peers that can run: each of ``dadapy`` and ``scikit-dimension`` that imports here, both when
    ``ANISO_PEER_PYTHON`` is set (they run in that Python where they do not import here)."""
    return [name for name, module in _PEER_MODULES.items()
            if importlib.util.find_spec(module) is not None or os.environ.get("ANISO_PEER_PYTHON")]


def missing_peers() -> list[str]:
    """The peers that cannot run: neither imports here nor ``ANISO_PEER_PYTHON`` is set (see
    :func:`available_peers`)."""
    return [name for name in _PEER_MODULES if name not in available_peers()]


def run_peer(name: str, x: np.ndarray) -> dict:
    """Run peer ``name`` (see :func:`available_peers`) on ``x``: ``{"s": seconds, "estimate": float}``, in this
    process where it imports, else in ``ANISO_PEER_PYTHON``'s (seconds measured there). Raises ValueError for an
    unknown name, :class:`PeerFailed` (a RuntimeError) when the peer's process cannot run or fails."""
    if name not in _PEER_MODULES:
        raise ValueError(f"unknown TwoNN peer {name!r}")
    if importlib.util.find_spec(_PEER_MODULES[name]) is None:
        estimate, inside = _in_peer_process(name, x)
        return {"s": inside, "estimate": estimate}
    seconds, estimate = _timed(lambda: (dadapy_twonn if name == "dadapy" else skdim_twonn)(x), "cpu")
    return {"s": seconds, "estimate": estimate}


def memory_parts(n: int, d: int, data: str = "gaussian", peers: bool = True) -> dict[str, int]:
    """The bytes :func:`bench_twonn` holds on the host for ``n`` points of ``d`` dimensions, counted together (a
    bound, not a peak), by what holds them: ``points`` (float32, with the float64 product ``data="subspace"``
    casts from), ``suite`` (the suite's float32 copy and its blocks of ``metrics._NN_BLOCK`` rows of products and
    top-k) and ``peers`` (the float64 copy the peers get and the peer's own, where ``peers`` and one runs here)."""
    parts = {"points": 4 * n * d + (8 * n * d if data == "subspace" else 0),
             "suite": 4 * n * d + 3 * 4 * metrics._NN_BLOCK * n}
    if peers and available_peers():
        parts["peers"] = 16 * n * d
    return parts


def memory_problem(n: int, d: int, data: str = "gaussian", peers: bool = True) -> str | None:
    """Why ``n`` points of ``d`` dimensions do not fit this machine's memory (:func:`memory_parts` against
    :func:`aniso.common.settings.physical_memory`), in words ("would take about 37.3 GiB (points 18.6 GiB, ...) and
    this machine has 23.0 GiB"), or None where they fit or the memory cannot be told. ``n`` >= 3, ``d`` >= 1."""
    from ..common.settings import _bytes, physical_memory

    memory = physical_memory()
    parts = memory_parts(n, d, data, peers)
    total = sum(parts.values())
    if not memory or total <= memory:
        return None
    return (f"would take about {_bytes(total)} ({', '.join(f'{k} {_bytes(v)}' for k, v in parts.items())}) and this "
            f"machine has {_bytes(memory)}")


#: The most pairs of points one exact nearest-neighbour pass of the benchmark compares (it compares all n², twice:
#: the suite and its bound), by kind of device. The time grows as n²: on the CPU 131,072 points (16,384 took about
#: 5 s a pass on two cores, so about 5 minutes a pass); elsewhere 1,048,576 (65,536 took 0.23 s on an H100,
#: docs/scale.md, so about a minute a pass).
MAX_PAIRS = {"cpu": 131_072 ** 2, "accelerator": 1_048_576 ** 2}


def work_problem(n: int, device: str = "cpu") -> str | None:
    """Why ``n`` points are more than :func:`bench_twonn` compares pairwise on ``device`` (:data:`MAX_PAIRS`), in
    words ("compares all 1.0e+12 pairs of its 1,000,000 points, more than the 131,072 points (1.7e+10 pairs) it
    takes on cpu"), or None where they are not."""
    kind = "cpu" if str(device).startswith("cpu") else "accelerator"
    if n * n <= MAX_PAIRS[kind]:
        return None
    most = math.isqrt(MAX_PAIRS[kind])
    return (f"compares all {float(n) * n:.1e} pairs of its {n:,} points (the time grows as n²), more than the "
            f"{most:,} points ({float(most) ** 2:.1e} pairs) it takes on {device}")


def bench_twonn(n: int = 16384, d: int = 768, data: str = "gaussian", seed: int = 0, device: str = "cpu",
                peers: bool = True) -> dict:
    """Time the suite's TwoNN, its matrix-product bound and the available peers on the same points, in one run.

    One timing each (wall clock, seconds; on CUDA synchronised). On ``device="cpu"`` the suite gets the NumPy
    points, as callers pass them; elsewhere a tensor on ``device`` (computed there). The bound always runs on
    ``device``; peers run on the CPU, on the same points in float64. A progress bar over the passes (bound, suite,
    each peer) goes to standard error where :func:`aniso.common.progress.enabled` (a terminal, ``CI`` unset).

    Returns
    -------
    ``{"n", "d", "data", "device", "suite_s", "bound_s", "ratio_to_bound", "estimate",
    "peers": {name: {"s": seconds, "estimate": float}}, "peers_not_run": [name, ...]}``; ``peers`` is empty when
    ``peers=False`` or none runs; ``peers_not_run`` names the peers left out because they cannot run here
    (:func:`missing_peers`; empty when ``peers=False``).

    Raises
    ------
    ValueError for bad ``n``, ``d``, ``data``, ``seed`` (see :func:`make_points`), ``n`` and ``d`` whose points and
    copies do not fit this machine's memory (:func:`memory_problem`; checked before anything is allocated), ``n``
    more than it compares pairwise on ``device`` in reasonable time (:func:`work_problem`) and a
    ``device`` that is not here (:func:`aniso.common.devices.check_device`, naming it); :class:`PeerFailed` (a
    RuntimeError) where ``ANISO_PEER_PYTHON`` cannot run the peers (checked before any point is made:
    :func:`peer_python_problem`). A peer that fails in its pass (after the suite's and the bound's) is named in
    ``"peers_failed": {name: what went wrong}`` (present only then), the timings made kept.
    """
    from ..common.devices import check_device
    from ..common.progress import bar

    check_device(device)
    problem = peer_python_problem() if peers else None
    if problem is not None:  # before any point is made: the peers come last, after minutes of the suite's passes
        raise PeerFailed(problem)
    problem = memory_problem(n, d, data, peers) if n >= 3 and d >= 1 and data in DATA_KINDS else None
    if problem is not None:
        raise ValueError(f"TwoNN benchmark of n={n} points in d={d} dimensions {problem}; take a smaller n or d")
    problem = work_problem(n, device)
    if problem is not None:
        raise ValueError(f"TwoNN benchmark of n={n} points {problem}; take a smaller n")
    x = make_points(n, d, data, seed)
    on_device = torch.from_numpy(x).to(device)
    suite_input = x if device == "cpu" else on_device
    gemm_top2_bound(on_device[: min(n, 256)])  # warm-up: first-call allocations and kernels out of both timings
    metrics.twonn_dimension(suite_input[: min(n, 256)])
    found: dict = {}
    failed: dict[str, str] = {}
    names = available_peers() if peers else []
    # one pass over all n² pairs each, minutes at the largest n on the CPU: a bar over the passes (on standard error,
    # quiet under CI and outside a terminal, as every progress bar of the suite) says which one runs and how long
    # the first took
    for step in bar(["bound", "suite", *names], desc=f"TwoNN benchmark, {n:,} x {d} points on {device}",
                    unit="pass"):
        if step == "bound":
            bound_s, _ = _timed(lambda: gemm_top2_bound(on_device), device)
        elif step == "suite":
            suite_s, estimate = _timed(lambda: metrics.twonn_dimension(suite_input), device)
        else:
            try:
                found[step] = run_peer(step, x.astype(np.float64))
            except PeerFailed as exc:  # after minutes of passes: the timings made are kept, the failure named
                failed[step] = exc.problem
    return {"n": n, "d": d, "data": data, "device": device, "suite_s": suite_s, "bound_s": bound_s,
            "ratio_to_bound": suite_s / bound_s, "estimate": estimate, "peers": found,
            "peers_not_run": missing_peers() if peers else []} | ({"peers_failed": failed} if failed else {})
