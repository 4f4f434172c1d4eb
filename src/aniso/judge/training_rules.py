"""Operationalisations of the training-dynamics claims (``docs/claims.md``, "G — queries and keys along training"
and "R — anisotropy profiles and intrinsic dimension"), as pure functions of per-checkpoint arrays.

Arrays are indexed (checkpoint s, attention layer l, head h, ...), checkpoints oldest first. Each function returns
``(holds, measured)`` where ``measured`` is JSON-friendly and names what decided the verdict.
"""

from __future__ import annotations

import numpy as np

from .. import metrics
from ..stats.dynamics import first_directions, projections

__all__ = ["qk_means_align", "ALIGN_RULE", "ALIGN_SHARE", "qk_direction_by_depth", "DEPTH_RULE", "qk_dot_grows",
           "DOT_RULE", "entropy_decays", "ENTROPY_RULE", "qk_projections_grow", "PROJECTION_RULE", "PROJECTION_SHARE",
           "grows_then_stabilises", "GROWS_RULE", "rises_then_falls", "RISE_FALL_RULE", "thirds"]

#: G §5 Fig. 13: share of heads that must align.
ALIGN_SHARE = 0.75
ALIGN_RULE = (f"for >= {ALIGN_SHARE:.0%} of heads, |cos(Q̄, K̄)| at the last checkpoint > at step 0 and > "
              "q95(d_head)")


def _r(a) -> list:
    return np.round(np.asarray(a, dtype=np.float64), 4).tolist()


def qk_means_align(cos: np.ndarray, head_dim: int) -> tuple[bool, dict]:
    """G §5, Fig. 13: mean queries and keys align (in a common or opposite direction) along training.

    ``cos``: (n_checkpoints, L, H) cos(Q̄_s, K̄_s), first checkpoint = step 0. A head aligns when |cos| at the last
    checkpoint exceeds both its |cos| at step 0 and q95(d_head), the 95th percentile of the cosine of two isotropic
    Gaussian vectors in d_head dimensions (:func:`aniso.metrics.isotropic_cos_quantile`). Holds when the share of
    aligned heads is >= :data:`ALIGN_SHARE`. Raises ValueError for fewer than 2 checkpoints.
    """
    c = np.abs(np.asarray(cos, dtype=np.float64))
    if c.ndim != 3 or c.shape[0] < 2:
        raise ValueError(f"need (n_checkpoints >= 2, layers, heads) cosines, got shape {c.shape}")
    q95 = metrics.isotropic_cos_quantile(head_dim)
    aligned = (c[-1] > c[0]) & (c[-1] > q95)
    share = float(aligned.mean())
    return share >= ALIGN_SHARE, {
        "aligned_share": share, "aligned_heads": int(aligned.sum()), "n_heads": int(aligned.size),
        "q95_head_dim": q95, "head_dim": head_dim, "mean_abs_cos_first": float(c[0].mean()),
        "mean_abs_cos_last": float(c[-1].mean()), "cos_last_per_layer_head": _r(np.asarray(cos)[-1])}


DEPTH_RULE = "mean head cos(Q̄, K̄) at the last checkpoint > 0 over the first third of layers and < 0 over the last third"


def qk_direction_by_depth(cos_last: np.ndarray) -> tuple[bool, dict]:
    """G §5, Fig. 13: first layers drift in a common direction (cos > 0), last layers in opposite ones (cos < 0).

    ``cos_last``: (L, H) cos(Q̄, K̄) at the last checkpoint, L >= 3. The first and last thirds are the first and
    last max(1, L // 3) attention layers. Raises ValueError for fewer than 3 layers.
    """
    c = np.asarray(cos_last, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] < 3:
        raise ValueError(f"need (layers >= 3, heads) cosines, got shape {c.shape}")
    per_layer = c.mean(1)
    n = max(1, c.shape[0] // 3)
    first, last = float(per_layer[:n].mean()), float(per_layer[-n:].mean())
    return first > 0 > last, {"mean_cos_first_third": first, "mean_cos_last_third": last,
                              "layers_per_third": n, "mean_cos_per_layer": _r(per_layer)}


DOT_RULE = ("|Q̄·K̄| at the last checkpoint > at step 0 for most heads (> 50%), and Spearman rho(step, mean over "
            "heads of |Q̄·K̄|) > 0")


def qk_dot_grows(steps: np.ndarray, dots: np.ndarray, seed: int = 0) -> tuple[bool, dict, float]:
    """G §5, Fig. 14: the magnitude of Q̄_s·K̄_s grows along training.

    ``steps`` (n_checkpoints,), ``dots`` (n_checkpoints, L, H). Returns ``(holds, measured, p_value)``: the
    Spearman test's one-sided ("greater": it grows) permutation p-value over the checkpoints, exact up to
    :data:`aniso.metrics.EXACT_MAX_N` checkpoints, else Monte Carlo seeded by ``seed``; reported beside the rule,
    which reads the sign of rho. Raises ValueError for fewer than 3 checkpoints.
    """
    d = np.abs(np.asarray(dots, dtype=np.float64))
    mean = d.reshape(d.shape[0], -1).mean(1)
    trend = metrics.monotonic_trend(np.asarray(steps, dtype=np.float64), mean, "greater", seed=seed)
    share = float((d[-1] > d[0]).mean())
    return share > 0.5 and trend.coefficient > 0, {
        "grown_share": share, "spearman_rho": trend.coefficient, "p_value": trend.p_value,
        "alternative": trend.alternative, "p_method": trend.p_method, "p_value_asymptotic": trend.p_value_asymptotic,
        "mean_abs_dot_first": float(mean[0]), "mean_abs_dot_last": float(mean[-1]),
        "mean_abs_dot_per_checkpoint": _r(mean)}, trend.p_value


ENTROPY_RULE = ("every layer's mean attention entropy at the last checkpoint < at step 0, and at the last checkpoint "
                "the first half of layers has a lower mean entropy than the last half")


def entropy_decays(entropy: np.ndarray) -> tuple[bool, dict]:
    """G §5, Fig. 15: attention entropy decays in every layer; the first layers stay sharper than the last.

    ``entropy``: (n_checkpoints, L, H) mean attention entropy (nats) of real query tokens, L >= 2. With an odd L
    the middle layer belongs to neither half. Raises ValueError for fewer than 2 checkpoints or layers.
    """
    e = np.asarray(entropy, dtype=np.float64)
    if e.ndim != 3 or e.shape[0] < 2 or e.shape[1] < 2:
        raise ValueError(f"need (n_checkpoints >= 2, layers >= 2, heads) entropies, got shape {e.shape}")
    per_layer = e.mean(2)
    half = e.shape[1] // 2
    decayed = per_layer[-1] < per_layer[0]
    first, last = float(per_layer[-1, :half].mean()), float(per_layer[-1, -half:].mean())
    return bool(decayed.all()) and first < last, {
        "layers_decayed": int(decayed.sum()), "n_layers": int(decayed.size), "entropy_first_half_last": first,
        "entropy_last_half_last": last, "entropy_per_layer_first": _r(per_layer[0]),
        "entropy_per_layer_last": _r(per_layer[-1])}


#: G §5 / App. C: share of heads whose mean queries and keys must move away from the origin, per projection.
PROJECTION_SHARE = 0.5
PROJECTION_RULE = (f"for each SVD basis (Q∪K, K only, Q only), > {PROJECTION_SHARE:.0%} of heads have both |Q̄| "
                   "and |K̄| projected on the first singular direction larger at the last checkpoint than at the "
                   "first")


def qk_projections_grow(q_mean, k_mean, q_moment, k_moment) -> tuple[bool, dict]:
    """G §5 Fig. 11-12 and App. C Fig. 19-22: projected on the first singular direction of the union over
    checkpoints of Q_s ∪ K_s (and of K_s only, Q_s only), Q̄_s and K̄_s drift away from the origin.

    ``q_mean``, ``k_mean``: (n_checkpoints, L, H, d_h); ``q_moment``, ``k_moment``: (n_checkpoints, L, H, d_h,
    d_h) uncentred second moments. The figures show a few heads; the test asks it of most heads (> 50%) for every
    basis. Returns per basis the share of heads and the mean |projection| of Q̄ and K̄ at the first and last
    checkpoint.
    """
    out, holds = {}, True
    for basis in ("qk", "k", "q"):
        direction = first_directions(q_moment, k_moment, basis)
        pq = np.abs(projections(q_mean, direction)[..., 0])
        pk = np.abs(projections(k_mean, direction)[..., 0])
        away = (pq[-1] > pq[0]) & (pk[-1] > pk[0])
        share = float(away.mean())
        holds &= share > PROJECTION_SHARE
        out[f"share_{basis}"] = share
        out[f"proj_q_{basis}_first_last"] = [float(pq[0].mean()), float(pq[-1].mean())]
        out[f"proj_k_{basis}_first_last"] = [float(pk[0].mean()), float(pk[-1].mean())]
    return bool(holds), out


def thirds(n: int) -> tuple[slice, slice]:
    """The first and last third of ``n`` checkpoints, each of max(2, round(n / 3)) checkpoints (n >= 3)."""
    k = max(2, round(n / 3))
    return slice(0, k), slice(n - k, n)


GROWS_RULE = ("mean-over-layers SVD anisotropy: Spearman rho(step, value) > 0 over checkpoints, and its range over "
              "the last third of checkpoints < over the first third")


def grows_then_stabilises(steps: np.ndarray, values: np.ndarray, seed: int = 0) -> tuple[bool, dict, float]:
    """R §4.2, Fig. 3-4: anisotropy grows as training proceeds, then stabilises.

    ``steps``, ``values``: (n_checkpoints,), n >= 3 (values: mean over layers of the batch-wise SVD anisotropy).
    "Changes less" is compared on the range (max - min) within each third (:func:`thirds`). Returns ``(holds,
    measured, p_value)``: the p-value is Spearman's one-sided ("greater") permutation p-value over the checkpoints
    (exact up to :data:`aniso.metrics.EXACT_MAX_N`, else Monte Carlo seeded by ``seed``), reported beside the rule,
    which reads the sign of rho.
    """
    v = np.asarray(values, dtype=np.float64)
    trend = metrics.monotonic_trend(np.asarray(steps, dtype=np.float64), v, "greater", seed=seed)
    early, late = thirds(v.size)
    first_range, last_range = float(np.ptp(v[early])), float(np.ptp(v[late]))
    return trend.coefficient > 0 and last_range < first_range, {
        "spearman_rho": trend.coefficient, "p_value": trend.p_value, "alternative": trend.alternative,
        "p_method": trend.p_method, "p_value_asymptotic": trend.p_value_asymptotic, "range_first_third": first_range,
        "range_last_third": last_range, "value_first": float(v[0]), "value_last": float(v[-1]),
        "value_per_checkpoint": _r(v)}, trend.p_value


RISE_FALL_RULE = ("mean-over-layers TwoNN: maximum at a checkpoint strictly inside the series, and the last value "
                  "below the maximum by more than the batch std (the larger of the two checkpoints' std)")


def rises_then_falls(values: np.ndarray, stds: np.ndarray) -> tuple[bool, dict]:
    """R §4.3, Fig. 2: intrinsic dimension rises early in training, then falls.

    ``values``: (n_checkpoints,) mean over layers of the batch-wise TwoNN; ``stds``: (n_checkpoints,) mean over
    layers of its batch std. Raises ValueError for fewer than 3 checkpoints or mismatched shapes.
    """
    v, s = np.asarray(values, dtype=np.float64), np.asarray(stds, dtype=np.float64)
    if v.ndim != 1 or v.shape != s.shape or v.size < 3:
        raise ValueError(f"need two equal 1-D series of >= 3 checkpoints, got {v.shape} and {s.shape}")
    k = int(np.argmax(v))
    std = float(max(s[k], s[-1]))
    drop = float(v[k] - v[-1])
    return 0 < k < v.size - 1 and drop > std, {
        "max_checkpoint": k, "max": float(v[k]), "first": float(v[0]), "last": float(v[-1]), "drop": drop,
        "batch_std": std, "value_per_checkpoint": _r(v)}
