"""Metrics of representation geometry, as small pure functions.

Every function takes plain NumPy arrays (rows are vectors) or the streamed sums
that :mod:`aniso.stats` accumulates, and returns floats. Definitions follow the
metric table of the claims catalogue (``CLAIMS.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import linalg as _linalg
from scipy import stats as _stats

__all__ = [
    "unit_rows",
    "mean_cosine",
    "mean_cosine_from_unit_sum",
    "mean_cosine_sampled",
    "drift_norm",
    "drift_norm_from_sum",
    "svd_anisotropy",
    "svd_anisotropy_from_moments",
    "twonn_dimension",
    "two_nearest_neighbours",
    "unique_rows",
    "isotropic_cos_quantile",
    "isotropic_cos_std",
    "isoscore",
    "isoscore_from_eigenvalues",
    "isoscore_from_moments",
    "dimension_contributions",
    "partition_isotropy",
    "Correlation",
    "drift_correlation",
]


def _as_matrix(x: np.ndarray, name: str = "x") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n, d), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def unit_rows(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Normalise the rows of ``x`` to unit Euclidean norm, dropping zero rows.

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    u : array of shape (n - n_zero, d), float64, each row of norm 1
    n_zero : int, the number of all-zero rows dropped (they have no direction)
    """
    x = _as_matrix(x)
    norms = np.linalg.norm(x, axis=1)
    keep = norms > 0
    return x[keep] / norms[keep, None], int((~keep).sum())


def mean_cosine_from_unit_sum(unit_sum: np.ndarray, n: int) -> float:
    """Exact mean cosine similarity over all ordered pairs i != j, from Σ u_i.

    With u_i = x_i / ||x_i|| and s = Σ_i u_i, Σ_{i≠j} cos(x_i, x_j) = ||s||² − n,
    so avg cos = (||s||² − n) / (n (n − 1)).  (Claims catalogue, metric table;
    Godey et al. 2024 §3 use the sampled-pairs estimate of the same quantity.)

    Parameters
    ----------
    unit_sum : array of shape (d,), the sum of the n unit vectors
    n : int, the number of (non-zero) vectors summed, n >= 2

    Returns
    -------
    float in [−1/(n−1), 1], dimensionless

    Raises
    ------
    ValueError if n < 2.
    """
    if n < 2:
        raise ValueError(f"mean cosine needs at least 2 non-zero vectors, got {n}")
    s = np.asarray(unit_sum, dtype=np.float64)
    value = (float(s @ s) - n) / (n * (n - 1))
    # Rounding can push the value a hair outside its mathematical range.
    return float(min(1.0, max(-1.0 / (n - 1), value)))


def mean_cosine(x: np.ndarray) -> float:
    """Exact mean cosine similarity of the rows of ``x`` over all ordered pairs i != j.

    Zero rows are excluded (see :func:`unit_rows`).

    Parameters
    ----------
    x : array of shape (n, d)

    Returns
    -------
    float in [−1/(n−1), 1]

    Raises
    ------
    ValueError if fewer than 2 non-zero rows, or non-finite values.
    """
    u, _ = unit_rows(x)
    return mean_cosine_from_unit_sum(u.sum(axis=0), u.shape[0])


def mean_cosine_sampled(x: np.ndarray, n_pairs: int, rng: np.random.Generator) -> float:
    """Mean cosine similarity over ``n_pairs`` uniformly sampled pairs i != j.

    The estimator of Godey et al. 2024 §3.1–3.2 ("we uniformly sample pairs of
    vectors"). Unbiased for :func:`mean_cosine`.

    Parameters
    ----------
    x : array of shape (n, d), n >= 2 non-zero rows
    n_pairs : int >= 1
    rng : numpy Generator (explicit seed)

    Returns
    -------
    float in [−1, 1]
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    u, _ = unit_rows(x)
    n = u.shape[0]
    if n < 2:
        raise ValueError(f"mean cosine needs at least 2 non-zero vectors, got {n}")
    i = rng.integers(0, n, size=n_pairs)
    j = rng.integers(0, n - 1, size=n_pairs)
    j = j + (j >= i)  # uniform over j != i
    total = 0.0
    for s in range(0, n_pairs, 8192):  # chunks keep the gathered pairs small
        total += float(np.einsum("pd,pd->", u[i[s : s + 8192]], u[j[s : s + 8192]]))
    return total / n_pairs


def drift_norm_from_sum(vector_sum: np.ndarray, n: int) -> float:
    """Drift norm ||x̄||₂ from Σ x_i and n (Godey et al. 2024 §3.3).

    Returns a float in the units of the hidden states. Raises ValueError if n < 1.
    """
    if n < 1:
        raise ValueError(f"drift norm needs at least 1 vector, got {n}")
    return float(np.linalg.norm(np.asarray(vector_sum, dtype=np.float64) / n))


def drift_norm(x: np.ndarray) -> float:
    """Drift norm ||x̄||₂, the norm of the mean of the rows of ``x`` (shape (n, d)).

    Godey et al. 2024 §3.3. Same units as ``x``.
    """
    x = _as_matrix(x)
    return drift_norm_from_sum(x.sum(axis=0), x.shape[0])


def svd_anisotropy_from_moments(vector_sum: np.ndarray, gram: np.ndarray, n: int) -> float:
    """SVD anisotropy σ₁² / Σσᵢ² of the centred set, from Σx (d,), Σxxᵀ (d, d) and n.

    The centred scatter matrix is C = Σxxᵀ − n x̄x̄ᵀ; its eigenvalues are the
    squared singular values of the centred data matrix, so the ratio is
    λ_max(C) / trace(C) (Razzhigaev et al. 2024 §2.3).

    Returns
    -------
    float in [1/r, 1] where r is the rank of the centred data; NaN if all the
    vectors are identical (trace 0: no direction of variance).

    Raises
    ------
    ValueError if n < 2 or shapes disagree.
    """
    if n < 2:
        raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {n}")
    s = np.asarray(vector_sum, dtype=np.float64)
    g = np.asarray(gram, dtype=np.float64)
    if g.shape != (s.shape[0], s.shape[0]):
        raise ValueError(f"gram must have shape ({s.shape[0]}, {s.shape[0]}), got {g.shape}")
    c = g - np.outer(s, s) / n
    c = (c + c.T) / 2
    trace = float(np.trace(c))
    if trace <= 0:
        return float("nan")
    lam_max = float(_linalg.eigh(c, eigvals_only=True, subset_by_index=[c.shape[0] - 1, c.shape[0] - 1])[0])
    return float(min(1.0, max(0.0, lam_max / trace)))


def svd_anisotropy(x: np.ndarray) -> float:
    """SVD anisotropy σ₁² / Σσᵢ² of the centred rows of ``x`` (shape (n, d)).

    Razzhigaev et al. 2024 §2.3. Computed from singular values of the centred
    matrix directly (the one-shot reference for :func:`svd_anisotropy_from_moments`).
    NaN when all rows are identical.
    """
    x = _as_matrix(x)
    if x.shape[0] < 2:
        raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {x.shape[0]}")
    xc = x - x.mean(axis=0)
    sv = torch.linalg.svdvals(torch.from_numpy(xc)).numpy()
    total = float(np.sum(sv**2))
    if total <= 0 or total < 1e-24 * max(1.0, float(np.sum(x**2))):
        return float("nan")
    return float(sv[0] ** 2 / total)


#: Rows of the float32 distance block of :func:`two_nearest_neighbours` (bounds its memory: rows × n floats).
_NN_BLOCK = 1024
#: Candidates kept per row from the float32 block before the exact float64 re-check.
_NN_CANDIDATES = 4
_F64_UNIT_ROUNDOFF = 2.0**-53
_F32_UNIT_ROUNDOFF = 2.0 ** -24


def unique_rows(x: np.ndarray) -> np.ndarray:
    """The distinct rows of ``x`` (shape (n, d)), each once, in order of first appearance.

    Rows are compared by their bytes (hashing, not sorting), so this costs O(n·d); ``-0.0`` and ``0.0``
    count as different, NaN rows as equal to themselves (callers reject NaN first).
    """
    x = np.ascontiguousarray(x)
    first = dict.fromkeys(row.tobytes() for row in x)
    if len(first) == x.shape[0]:
        return x
    seen: set[bytes] = set()
    keep = [i for i, row in enumerate(x) if not ((b := row.tobytes()) in seen or seen.add(b))]
    return x[keep]


def two_nearest_neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact Euclidean distances of every point to its first and second nearest other point.

    The search is a blocked float32 matrix product (‖a − b‖² = ‖a‖² + ‖b‖² − 2a·b on the centred points) that
    keeps 4 candidates per row; the candidates' distances are then recomputed in float64 and the two smallest taken.
    A row is exact when no point outside its candidates can be nearer than its second: the float32 squared
    distance of every excluded point is at least that of the 4th candidate, and differs from the true one by at most
    ε = (d + 4)·u·(‖a‖ + max‖b‖)² (u = 2⁻²⁴, the worst-case rounding of a length-d dot product in any summation
    order), so a row is exact if the 4th candidate's value − ε exceeds its exact second distance². Rows that fail
    the test (near-ties over many points) are recomputed against every point in float64. The result is therefore
    the exact one, at float32 matrix-product speed.

    Parameters
    ----------
    x : array of shape (n, d), float64, n >= 3, rows distinct and finite

    Returns
    -------
    (r1, r2) : two arrays of shape (n,), float64, r1 <= r2, in the units of ``x``

    Raises
    ------
    ValueError if fewer than 3 points.
    """
    x = _as_matrix(x)
    n, d = x.shape
    if n < 3:
        raise ValueError(f"two nearest neighbours need at least 3 points, got {n}")
    centred = x - x.mean(axis=0)
    x64 = torch.from_numpy(centred)
    x32 = x64.float()
    sq = (x32.double() ** 2).sum(1).float()  # ‖b‖² of the float32 points
    norm = np.linalg.norm(centred, axis=1)
    slack = (d + 4) * _F32_UNIT_ROUNDOFF * (norm + norm.max()) ** 2 * 1.01
    k = min(_NN_CANDIDATES, n - 1)
    r = np.empty((n, 2))
    recheck: list[np.ndarray] = []
    for s in range(0, n, _NN_BLOCK):
        rows = torch.arange(s, min(s + _NN_BLOCK, n))
        # ‖b‖² − 2a·b ranks the row like the distance (‖a‖² is the same along the row): one BLAS call.
        part = torch.addmm(sq.unsqueeze(0), x32[rows], x32.T, beta=1.0, alpha=-2.0)
        part[torch.arange(len(rows)), rows] = float("inf")
        values, idx = torch.topk(part, k, dim=1, largest=False, sorted=True)
        diff = x64[idx] - x64[rows].unsqueeze(1)
        exact = torch.einsum("rkd,rkd->rk", diff, diff)  # (rows, k) float64 squared distances
        two = torch.topk(exact, 2, dim=1, largest=False, sorted=True).values
        r[s : s + len(rows)] = two.numpy()
        if k < n - 1:
            floor = values[:, -1].double() + sq[rows].double() - torch.from_numpy(slack[s : s + len(rows)])
            unsure = (floor <= two[:, 1]).numpy()
            recheck.append(rows.numpy()[unsure])
    # Rows whose float32 ranking cannot be trusted (large norms, e.g. massive activations, widen the bound): rank
    # them again in float64, blocked, with a bound 2^29 times tighter; the few that remain unsure get every distance.
    last = _recheck(np.concatenate(recheck) if recheck else np.zeros(0, np.int64), x64, slack, k, r)
    for i in last:
        dist = ((centred - centred[i]) ** 2).sum(1)
        dist[i] = np.inf
        r[i] = np.partition(dist, 1)[:2]
    r = np.sqrt(r)
    return r[:, 0], r[:, 1]


def _recheck(rows_all: np.ndarray, x64: torch.Tensor, slack32: np.ndarray, k: int, r: np.ndarray) -> np.ndarray:
    """Two nearest neighbours of ``rows_all`` from float64 candidates (exact distances recomputed), written into
    ``r``; returns the rows whose float64 bound still cannot separate the candidates from the rest."""
    if rows_all.size == 0:
        return rows_all
    sq64 = (x64 ** 2).sum(1)
    slack = slack32 * (_F64_UNIT_ROUNDOFF / _F32_UNIT_ROUNDOFF)
    left = []
    for s in range(0, rows_all.size, _NN_BLOCK):
        rows = torch.from_numpy(rows_all[s : s + _NN_BLOCK])
        part = torch.addmm(sq64.unsqueeze(0), x64[rows], x64.T, beta=1.0, alpha=-2.0)
        part[torch.arange(len(rows)), rows] = float("inf")
        values, idx = torch.topk(part, k, dim=1, largest=False, sorted=True)
        diff = x64[idx] - x64[rows].unsqueeze(1)
        two = torch.topk(torch.einsum("rkd,rkd->rk", diff, diff), 2, dim=1, largest=False, sorted=True).values
        r[rows.numpy()] = two.numpy()
        floor = values[:, -1] + sq64[rows] - torch.from_numpy(slack[rows.numpy()])
        left.append(rows.numpy()[(floor <= two[:, 1]).numpy()])
    return np.concatenate(left)


def twonn_dimension(x: np.ndarray, discard_fraction: float = 0.1) -> float:
    """TwoNN intrinsic dimension (Facco et al. 2017, Sci. Rep. 7:12140).

    For every point, μ = r₂ / r₁ (distances to its first and second nearest
    neighbours). With F_emp the empirical CDF of μ, the points
    (log μ, −log(1 − F_emp(μ))) lie on a line through the origin of slope d;
    the largest ``discard_fraction`` of μ are dropped and d is fitted by least
    squares through the origin (Razzhigaev et al. 2024 §2.4, where "1 − F" is a
    typo for −log(1 − F)).

    Duplicate points (r₁ = 0) are removed before the fit: they carry no
    information on the local dimension and would give μ = ∞. The neighbours
    are exact (:func:`two_nearest_neighbours`).

    Parameters
    ----------
    x : array of shape (n, d); needs at least 3 distinct points
    discard_fraction : float in [0, 1), share of the largest μ discarded

    Returns
    -------
    float > 0, the estimated intrinsic dimension (dimensionless)

    Raises
    ------
    ValueError if fewer than 3 distinct points or a bad ``discard_fraction``.
    """
    if not 0 <= discard_fraction < 1:
        raise ValueError(f"discard_fraction must be in [0, 1), got {discard_fraction}")
    x = unique_rows(_as_matrix(x))
    n = x.shape[0]
    if n < 3:
        raise ValueError(f"TwoNN needs at least 3 distinct points, got {n}")
    r1, r2 = two_nearest_neighbours(x)
    mu = np.sort(r2 / r1)
    f_emp = np.arange(1, n + 1) / n
    keep = int(math.floor(n * (1 - discard_fraction)))
    keep = min(keep, n - 1)  # F_emp = 1 at the last point gives log(0)
    log_mu = np.log(mu[:keep])
    y = -np.log1p(-f_emp[:keep])
    denom = float(log_mu @ log_mu)
    if denom <= 0:
        raise ValueError("TwoNN: all neighbour ratios are 1 (degenerate point set)")
    return float(log_mu @ y / denom)


def isotropic_cos_quantile(d: int, q: float = 0.95) -> float:
    """Quantile of the cosine of two independent isotropic Gaussian vectors in ℝ^d.

    (cos + 1) / 2 ~ Beta((d−1)/2, (d−1)/2) (Godey et al. 2024 App. B,
    Fig. 17–18). q95(d) = isotropic_cos_quantile(d, 0.95) is the "significant
    anisotropy" yardstick of the claims catalogue.

    Raises ValueError if d < 2 or q outside (0, 1).
    """
    if d < 2:
        raise ValueError(f"dimension must be >= 2, got {d}")
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    a = (d - 1) / 2
    return float(2 * _stats.beta.ppf(q, a, a) - 1)


def isotropic_cos_std(d: int) -> float:
    """Standard deviation of that cosine: exactly 1/√d (Godey et al. 2024 App. B).

    From Var of 2·Beta(a, a) − 1 with a = (d−1)/2: 4·a²/((2a)²(2a+1)) = 1/d.
    """
    if d < 2:
        raise ValueError(f"dimension must be >= 2, got {d}")
    a = (d - 1) / 2
    return float(2 * math.sqrt(_stats.beta.var(a, a)))


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its two-sided p-value and method name."""

    method: str
    coefficient: float
    p_value: float
    n: int


def _paired_series(x: np.ndarray, y: np.ndarray, too_short: str) -> tuple[np.ndarray, np.ndarray]:
    """Two equal-length 1-D float64 arrays of at least 3 values; ValueError otherwise (``too_short`` formats n)."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    if a.shape[0] < 3:
        raise ValueError(too_short.format(n=a.shape[0]))
    return a, b


def drift_correlation(drift_norms: np.ndarray, mean_cosines: np.ndarray, method: str = "spearman") -> Correlation:
    """Correlation across layers between drift norm and avg cos of one model.

    Godey et al. 2024 §3.3, Fig. 5 (Spearman) and App. A, Fig. 16 (Pearson),
    computed with :func:`scipy.stats.spearmanr` / :func:`scipy.stats.pearsonr`.

    Parameters
    ----------
    drift_norms, mean_cosines : arrays of shape (n_layers,), n_layers >= 3
    method : "spearman" or "pearson"

    Raises
    ------
    ValueError for an unknown method, mismatched lengths or fewer than 3 layers.
    """
    a, b = _paired_series(drift_norms, mean_cosines, "a correlation across layers needs at least 3 layers, got {n}")
    if method == "spearman":
        res = _stats.spearmanr(a, b)
    elif method == "pearson":
        res = _stats.pearsonr(a, b)
    else:
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    return Correlation(method, float(res.statistic), float(res.pvalue), int(a.shape[0]))


def monotonic_trend(along: np.ndarray, values: np.ndarray) -> Correlation:
    """Spearman rank correlation of ``values`` with ``along`` (e.g. a quantity against the bias norm N).

    Used for the "grows / decreases with N" claims of Godey et al. 2024 §4.3–4.4
    (Fig. 7–10), with :func:`scipy.stats.spearmanr` (two-sided p-value). A
    constant series has no rank order: coefficient 0 and p-value 1.

    Parameters
    ----------
    along, values : arrays of shape (n,), n >= 3, finite

    Raises
    ------
    ValueError for mismatched shapes, fewer than 3 points or non-finite values.
    """
    a, b = _paired_series(along, values, "a trend needs at least 3 points, got {n}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a trend needs finite values")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation("spearman", 0.0, 1.0, int(a.shape[0]))
    res = _stats.spearmanr(a, b)
    return Correlation("spearman", float(res.statistic), float(res.pvalue), int(a.shape[0]))


def isoscore_from_eigenvalues(eigenvalues: np.ndarray) -> float:
    """IsoScore of a point cloud from the eigenvalues of its covariance matrix (Rudman et al. 2022, Alg. 1).

    With n the dimension and λ the eigenvalues (the variances along the principal axes): λ̂ = √n λ / ‖λ‖, the
    isotropy defect δ = ‖λ̂ − 1‖ / √(2(n − √n)), and IsoScore = ((n − δ²(n − √n))² − n) / (n(n − 1)), which is 1 for
    equal variance in every direction and (k − 1)/(n − 1) when k of the n directions carry equal variance and the
    rest none. Scale-free: multiplying the points by c leaves it unchanged.

    Parameters
    ----------
    eigenvalues : array of shape (n,), n >= 2, >= 0 (tiny negative rounding is clipped)

    Returns
    -------
    float in [0, 1]; NaN if every eigenvalue is 0 (all points equal).

    Raises
    ------
    ValueError if fewer than 2 eigenvalues are given.
    """
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64).reshape(-1), 0.0, None)
    n = lam.size
    if n < 2:
        raise ValueError(f"IsoScore needs a dimension >= 2, got {n}")
    norm = float(np.linalg.norm(lam))
    if norm == 0:
        return float("nan")
    root = math.sqrt(n)
    defect = float(np.linalg.norm(lam * root / norm - 1.0)) / math.sqrt(2 * (n - root))
    score = ((n - defect**2 * (n - root)) ** 2 - n) / (n * (n - 1))
    return float(min(1.0, max(0.0, score)))


def isoscore(x: np.ndarray) -> float:
    """IsoScore of the rows of ``x`` (shape (m, n), m >= 2 points in ℝⁿ): :func:`isoscore_from_eigenvalues` of their
    covariance (Rudman et al. 2022). Rows are points (the ``IsoScore`` package 2.x takes the same layout)."""
    x = _as_matrix(x)
    if x.shape[0] < 2:
        raise ValueError(f"IsoScore needs at least 2 points, got {x.shape[0]}")
    return isoscore_from_eigenvalues(np.linalg.eigvalsh(np.cov(x, rowvar=False).reshape(x.shape[1], x.shape[1])))


def isoscore_from_moments(vector_sum: np.ndarray, gram: np.ndarray, n: int) -> float:
    """IsoScore from streamed Σx (d,), Σxxᵀ (d, d) and the count n >= 2 (the covariance up to a factor, which
    IsoScore ignores). See :func:`isoscore_from_eigenvalues`."""
    if n < 2:
        raise ValueError(f"IsoScore needs at least 2 vectors, got {n}")
    s = np.asarray(vector_sum, dtype=np.float64)
    c = np.asarray(gram, dtype=np.float64) - np.outer(s, s) / n
    return isoscore_from_eigenvalues(np.linalg.eigvalsh((c + c.T) / 2))


def dimension_contributions(unit_sum: np.ndarray, unit_square_sum: np.ndarray, n: int) -> np.ndarray:
    """Each dimension's contribution to avg cos, exactly, from Σu (d,) and Σu∘u (d,) of n non-zero vectors.

    avg cos = Σ_k c_k with c_k = ((Σu)_k² − (Σu∘u)_k) / (n(n − 1)) = E_{i≠j}[u_ik u_jk], the mean over pairs of
    the k-th term of the cosine (Timkey & van Schijndel 2021, §3, "contribution of dimension i to cosine
    similarity"). Returns an array of shape (d,) summing to the exact avg cos. Raises ValueError if n < 2.
    """
    if n < 2:
        raise ValueError(f"contributions need at least 2 non-zero vectors, got {n}")
    s = np.asarray(unit_sum, dtype=np.float64)
    return (s * s - np.asarray(unit_square_sum, dtype=np.float64)) / (n * (n - 1))


def partition_isotropy(w: np.ndarray, centre: bool = False, chunk: int = 8192) -> float:
    """Partition-function isotropy I(W) = min_v Z(v) / max_v Z(v) of the rows of ``w`` (Arora et al. 2016;
    Mu & Viswanath 2018; Machina & Mercer 2024, §3), with Z(v) = Σᵢ exp(wᵢ·v) and v over the unit eigenvectors of
    WᵀW and their negatives (an eigenvector's sign is arbitrary; taking both makes I(W) well defined and invariant
    to rotations of W), in float64 with log-sum-exp.

    Parameters
    ----------
    w : array of shape (V, d), e.g. an embedding matrix (V words, d dimensions), V >= 1, d >= 1
    centre : subtract the mean row first (and take the eigenvectors of the centred matrix)
    chunk : rows per block of the log-sum-exp (memory only)

    Returns
    -------
    float in (0, 1]: 1 when Z is the same in every principal direction. It depends on the scale of W (Z grows with
    ‖w‖), so report the mean row norm beside it.

    Raises
    ------
    ValueError for a non-2-D or non-finite matrix.
    """
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] < 1 or w.shape[1] < 1:
        raise ValueError(f"W must have shape (V, d) with V, d >= 1, got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("W contains NaN or infinite values")
    if centre:
        w = w - w.mean(axis=0)
    _, vectors = np.linalg.eigh(w.T @ w)  # columns: unit eigenvectors of WᵀW
    vectors = np.concatenate([vectors, -vectors], axis=1)  # an eigenvector's sign is arbitrary: take both
    log_z = np.full(vectors.shape[1], -np.inf)
    for start in range(0, w.shape[0], chunk):
        block = w[start : start + chunk] @ vectors  # (rows, d): wᵢ·v for every eigenvector v
        log_z = np.logaddexp(log_z, _lse_columns(block))
    return float(math.exp(float(log_z.min() - log_z.max())))


def _lse_columns(a: np.ndarray) -> np.ndarray:
    top = a.max(axis=0)
    return top + np.log(np.exp(a - top).sum(axis=0))
