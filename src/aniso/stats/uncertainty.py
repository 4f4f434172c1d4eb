"""Bootstrap confidence intervals of claims' deciding statistics over the inputs, and the "fragile" flag.

A verdict rests on one statistic compared with a threshold (a layer's avg cos against q95(d), a drift correlation's
p-value against 0.05, a profile's contrast against 0.2). Resampling the inputs (paragraphs, recordings, photographs)
with replacement and recomputing that statistic gives its sampling distribution at no extra forward pass: the
streamed accumulators keep their sums per input (:class:`aniso.stats.accumulators.LayerAccumulator`, ``per_input``), and the sums
of a resample are weighted sums of those. A verdict whose percentile interval straddles its threshold, or that flips
in more than ``(1 - level) / 2`` of the resamples, is *fragile*: it is not a finding.

Efron & Tibshirani 1993, *An Introduction to the Bootstrap*, ch. 13 (percentile interval); resampling whole inputs
rather than tokens is the cluster bootstrap, since the tokens of one paragraph are not independent.

The per-input sums are kept in a fixed number of rows (:class:`aniso.stats.accumulators.InputGroups`, 256 by
default), so memory does not grow with the corpus: up to that many inputs the bootstrap resamples the inputs
themselves; beyond, it resamples random groups of inputs, which is the random-group method (Mahalanobis 1946; Wolter
2007, *Introduction to Variance Estimation*, ch. 2) with the groups as the cluster bootstrap's units (Davison &
Hinkley 1997, §3.8): inputs assigned to groups independently of their content make the groups' sums independent
units of the same estimator, so the resampled statistic has the per-input bootstrap's distribution up to the
coarser resampling (``tests/stats/test_uncertainty.py`` checks its intervals' coverage on synthetic data).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .results import LayerSummary, ModelStats

__all__ = ["Resamples", "bootstrap_stats", "Interval", "interval", "COMPARISONS"]

#: How a statistic is compared with its threshold for the claim to hold.
COMPARISONS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, ">=": operator.ge, "<": operator.lt,
                                                           "<=": operator.le}


@dataclass
class Resamples:
    """Bootstrap resamples of one model's statistics.

    ``replicates``: one :class:`~aniso.stats.results.ModelStats` per resample, whose summaries have the first-order metrics
    (avg cos, drift norm) recomputed from resampled inputs (avg cos over the pairs of the resample that are pairs of
    the data: two copies of one input are not paired, which would bias avg cos upwards by about 1/inputs) and the batch-wise SVD anisotropy from resampled SVD
    batches, as are the profiles without the first token and without the massive-activation tokens that ``meta``
    holds (the same batch picks); metrics that cannot be resampled this way (exact SVD anisotropy, TwoNN, sampled
    pairs) are NaN.
    ``unit``: what was resampled (``"input"``: paragraph, recording or image; ``"input group"``: random groups of
    inputs, past :data:`aniso.stats.accumulators.INPUT_GROUPS` inputs; else batches of inputs);
    ``n_units``: how many there were; ``n_inputs``: the inputs they hold (``n_units`` unless grouped); ``fixed_layers``: layers without per-input sums (wider than
    :data:`aniso.stats.pipeline.PER_INPUT_MAX_DIM`), held at their measured value in every resample; ``n_svd_batches``:
    the SVD batches resampled per layer (0: the batch-wise SVD anisotropy is NaN in the resamples).
    """

    replicates: list[ModelStats]
    unit: str
    n_units: int
    fixed_layers: list[str]
    n_svd_batches: int
    n_inputs: int = 0


def bootstrap_stats(stats: ModelStats, n_boot: int, seed: int) -> Resamples | None:
    """``n_boot`` bootstrap resamples of ``stats`` over its inputs (see :class:`Resamples`), seeded by ``seed``.

    The same multinomial weights over the inputs apply to every layer, so a resample is a coherent model run on a
    resampled input set. Past the accumulators' ``input_groups`` inputs, the units are random groups of inputs
    (see the module docstring); up to it, the resamples are those of a bootstrap over the inputs themselves. Returns
    None when no layer kept per-input sums (a cache entry from before they were kept,
    or only layers wider than the per-input limit). Raises ValueError if ``n_boot`` < 1.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    sums = [acc.input_sums() if acc.per_input else None for acc in stats.layers]
    sizes = {s[2].shape[0] for s in sums if s is not None}
    if not sizes:
        return None
    if len(sizes) > 1:
        raise ValueError(f"{stats.model_id}: layers hold per-input sums of different numbers of inputs {sorted(sizes)}")
    k = sizes.pop()
    if k < 2:
        return None
    n_inputs = max(acc.n_inputs for acc, s in zip(stats.layers, sums) if s is not None)
    rng = np.random.Generator(np.random.PCG64(seed))
    weights = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(np.float64)  # (B, k)
    full = stats.summaries()
    cos = np.empty((n_boot, len(full)))
    drift = np.empty((n_boot, len(full)))
    fixed = []
    for i, (s, layer_sums) in enumerate(zip(full, sums)):
        if layer_sums is None:
            cos[:, i], drift[:, i] = s.mean_cosine, s.drift_norm
            fixed.append(str(stats.layer_names[i]))
            continue
        units, vectors, counts = layer_sums
        u64 = units.astype(np.float64)
        nz = counts[:, 1].astype(np.float64)
        own = np.einsum("kd,kd->k", u64, u64)  # |S_a|²: Σ over the pairs of input a's own vectors, self-pairs included
        su = weights @ u64
        squared = weights * weights
        # Pairs between different inputs, weighted by their multiplicities, plus each input's own pairs of distinct
        # vectors once per copy; pairs between two copies of one input are left out (they are no pairs of the data).
        numerator = np.einsum("bd,bd->b", su, su) - squared @ own + weights @ (own - nz)
        denominator = (weights @ nz) ** 2 - squared @ (nz * nz) + weights @ (nz * (nz - 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            cos[:, i] = numerator / denominator
            drift[:, i] = np.linalg.norm(weights @ vectors.astype(np.float64), axis=1) / (weights @ counts[:, 0])
    n_batches = {s.n_svd_batches for s in full}
    batch_means = None
    if len(n_batches) == 1 and (b := n_batches.pop()) >= 2 and all(len(acc.batch_svd) == b for acc in stats.layers):
        picks = rng.integers(0, b, size=(n_boot, b))
        values = np.array([acc.batch_svd for acc in stats.layers])  # (layers, b)
        batch_means = values[:, picks].mean(axis=2).T  # (B, layers)
    else:
        b = 0
    metas = _complement_metas(stats.meta, picks, n_boot) if b else [stats.meta] * n_boot
    replicates = []
    for r in range(n_boot):
        layers = [dataclasses.replace(
            s, mean_cosine=float(cos[r, i]), drift_norm=float(drift[r, i]), mean_cosine_sampled=math.nan,
            svd_anisotropy=math.nan, twonn=math.nan,
            svd_anisotropy_batch_mean=float(batch_means[r, i]) if batch_means is not None else math.nan)
            for i, s in enumerate(full)]
        rep = ModelStats(stats.model_id, stats.layer_names, [], metas[r])
        rep._summaries = layers
        replicates.append(rep)
    unit = stats.meta.get("bootstrap_unit", "batch") if n_inputs <= k else "input group"
    return Resamples(replicates, unit, k, fixed, b, n_inputs)


def _complement_metas(meta: dict, picks: np.ndarray, n_boot: int) -> list[dict]:
    """``meta`` per resample, with the profiles without the first token (``first_token_excluded``) and without the
    massive-activation tokens (``massive_excluded``) resampled over the same SVD batches as the whole stream
    (``picks``, shape (n_boot, b)): each layer's ``svd_anisotropy_batch_mean`` becomes the resample's mean of its
    ``batch_svd`` and the exact ``svd_anisotropy`` is dropped. A profile whose layers did not keep ``batch_svd`` for
    the same b batches (a cache entry from before they were kept) stays at its measured value."""
    b = picks.shape[1]

    def resampled(layers):
        if not layers or any(len(s.get("batch_svd") or ()) != b for s in layers):
            return None
        values = np.array([s["batch_svd"] for s in layers], dtype=np.float64)  # (layers, b)
        means = values[:, picks].mean(axis=2).T  # (n_boot, layers)
        return [[{k: v for k, v in s.items() if k != "batch_svd"} | {"svd_anisotropy_batch_mean": float(m),
                                                                    "svd_anisotropy": None}
                 for s, m in zip(layers, row)] for row in means]

    first = resampled(meta.get("first_token_excluded"))
    massive_meta = meta.get("massive_excluded") or {}
    massive = resampled(massive_meta.get("layers"))
    if first is None and massive is None:
        return [meta] * n_boot
    out = []
    for r in range(n_boot):
        m = dict(meta)
        if first is not None:
            m["first_token_excluded"] = first[r]
        if massive is not None:
            m["massive_excluded"] = dict(massive_meta, layers=massive[r])
        out.append(m)
    return out


@dataclass(frozen=True)
class Interval:
    """A deciding statistic with its bootstrap percentile interval.

    ``value`` the statistic on all inputs; ``low``/``high`` the interval's ends at ``level``; ``threshold`` and
    ``holds_if`` (one of :data:`COMPARISONS`) the claim's rule on it; ``holds_share`` the share of resamples in
    which the whole verdict holds; ``fragile`` whether the interval straddles the threshold or the verdict flips in
    more than (1 - level) / 2 of the resamples; ``n_boot`` resamples with a finite statistic.
    """

    value: float
    low: float
    high: float
    threshold: float
    holds_if: str
    holds_share: float
    fragile: bool
    n_boot: int
    level: float


def interval(value: float, replicate_values, replicate_holds, threshold: float, holds_if: str,
             level: float = 0.95) -> Interval:
    """The percentile interval of ``replicate_values`` (shape (B,)) around ``value`` and whether the verdict is
    fragile (see :class:`Interval`). ``replicate_holds`` (B,) bool: the verdict in each resample.

    Raises ValueError for an unknown ``holds_if``, a ``level`` outside (0, 1), or no finite replicate value.
    """
    if holds_if not in COMPARISONS:
        raise ValueError(f"holds_if must be one of {sorted(COMPARISONS)}, got {holds_if!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    v = np.asarray(replicate_values, dtype=np.float64)
    h = np.asarray(replicate_holds, dtype=bool)
    finite = np.isfinite(v)
    if not finite.any():
        raise ValueError("no resample gave a finite value of the statistic")
    tail = (1 - level) / 2
    low, high = (float(q) for q in np.quantile(v[finite], [tail, 1 - tail]))
    share = float(h[finite].mean())
    fragile = bool(low < threshold < high or tail < share < 1 - tail)
    return Interval(float(value), low, high, float(threshold), holds_if, share, fragile, int(finite.sum()), level)
