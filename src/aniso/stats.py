"""Streamed per-layer statistics of hidden states, and their on-disk cache.

A :class:`LayerAccumulator` sees the vectors of one layer batch by batch and
keeps only fixed-size state (O(d²) plus a fixed reservoir and one SVD batch
buffer), so peak memory does not grow with the number of tokens processed.
Its :meth:`LayerAccumulator.summary` gives the per-layer metrics the claims read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import metrics
from .files import atomic_write, sha256_file

log = logging.getLogger(__name__)

#: Bump when the accumulated state or its meaning changes: old cache entries are then ignored.
STATS_FORMAT_VERSION = 3


class LayerAccumulator:
    """Streamed statistics of one layer's vectors.

    State: count n, zero-vector count, Σ u_i (unit vectors), Σ x_i, Σ x_i x_iᵀ
    (float64), the SVD anisotropy of each complete batch of ``svd_batch_size``
    consecutive vectors (Razzhigaev et al. 2024 §2.3), and a uniform reservoir
    sample of ``reservoir_size`` vectors (Vitter's algorithm R, seeded) for
    TwoNN and sampled-pair estimators.

    Every statistic is independent of how the stream is split into updates.

    With ``second_order=False`` only the first-order state is kept (count,
    Σ u_i, Σ x_i, Σ ||x_i||): O(d) memory, which is all avg cos, drift norm and
    mean norm need. This is the mode for flattened CNN feature maps (G §3.2),
    whose d (C·H·W, up to ~4·10⁵) rules out a d × d matrix; the SVD
    anisotropy, TwoNN and sampled-pair estimates are then NaN.

    Parameters
    ----------
    dim : int, the vector dimension d
    reservoir_size : int >= 0 (ignored, 0, without second order)
    svd_batch_size : int >= 2, vectors per batch for the batch-wise SVD anisotropy
    seed : int, seed of the reservoir's random stream
    second_order : bool, keep Σ x xᵀ, the SVD batches and the reservoir
    per_input : bool, also keep Σ u_i, Σ x_i and the counts of each input (a paragraph, recording or image, as
        :meth:`update` labels its rows; the whole update when unlabelled), float32, O(inputs · d) memory: what a
        bootstrap over the inputs resamples (:func:`aniso.uncertainty.bootstrap_stats`)
    """

    def __init__(self, dim: int, reservoir_size: int = 4096, svd_batch_size: int = 4096, seed: int = 0,
                 second_order: bool = True, per_input: bool = False):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if reservoir_size < 0:
            raise ValueError(f"reservoir_size must be >= 0, got {reservoir_size}")
        if svd_batch_size < 2:
            raise ValueError(f"svd_batch_size must be >= 2, got {svd_batch_size}")
        self.dim = dim
        self.second_order = second_order
        if not second_order:
            reservoir_size = 0
        self.reservoir_size = reservoir_size
        self.svd_batch_size = svd_batch_size
        self.seed = seed
        self.count = 0
        self.n_zero = 0
        self.unit_sum = np.zeros(dim, np.float64)
        self.vector_sum = np.zeros(dim, np.float64)
        # Σxxᵀ of the vectors in complete SVD batches (each batch's Gram matrix serves its SVD anisotropy too); the
        # partial batch's is added when `gram` is read.
        self._gram_done = np.zeros((dim, dim), np.float64) if second_order else None
        self.norm_sum = 0.0
        self.batch_svd: list[float] = []
        self._svd_buffer = np.empty((svd_batch_size if second_order else 0, dim), np.float32)
        self._svd_fill = 0
        self._partial_lost = False  # rebuilt from a state without its partial SVD batch (cannot be merged)
        self.reservoir = np.empty((reservoir_size, dim), np.float32)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self.per_input = per_input
        # O(d) sums for rogue dimensions (Σ u∘u, Σ x∘x) and massive activations (per feature: max |x| and the
        # position in its sequence where it was seen; Σ x and Σ x∘x over the first token of each sequence).
        self.unit_sq_sum = np.zeros(dim, np.float64)
        self.sq_sum = np.zeros(dim, np.float64)
        self.abs_max = np.zeros(dim, np.float64)
        self.abs_max_pos = np.full(dim, -1, np.int64)
        self.first_sum = np.zeros(dim, np.float64)
        self.first_sq_sum = np.zeros(dim, np.float64)
        self.n_first = 0
        # Per input: Σ u (k, d), Σ x (k, d) float32 and (vectors, non-zero vectors) (k, 2) int64, one array per update.
        self._inputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    # -- streaming -----------------------------------------------------------
    def update(self, x: np.ndarray, inputs: np.ndarray | None = None, n_inputs: int | None = None,
               positions: np.ndarray | None = None) -> None:
        """Add a batch of vectors, shape (m, d).

        ``inputs`` (m,) int labels each row with the input it came from, 0 .. ``n_inputs`` - 1 (kept per input with
        ``per_input``; None: the whole batch is one input). ``positions`` (m,) int: each row's position in its
        sequence (0 = its first token; text only), for the massive-activation statistics. Raises ValueError on a
        bad shape, bad labels or non-finite values (naming how many rows are NaN or infinite).
        """
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected an array of shape (m, {self.dim}), got {x.shape}")
        if x.shape[0] == 0:
            if self.per_input and n_inputs:  # inputs with no vectors here still hold their place
                self._inputs.append((np.zeros((n_inputs, self.dim), np.float32),
                                     np.zeros((n_inputs, self.dim), np.float32), np.zeros((n_inputs, 2), np.int64)))
            return
        x64 = np.ascontiguousarray(x, dtype=np.float64)
        finite = np.isfinite(x64)
        if not finite.all():
            bad = ~finite.all(axis=1)
            raise ValueError(f"hidden states contain NaN or infinite values: {int(bad.sum())} of {x.shape[0]} "
                             f"vectors ({int(np.isnan(x64).any(axis=1).sum())} with NaN)")
        norms = np.sqrt(np.einsum("ij,ij->i", x64, x64))
        nonzero = norms > 0
        self.n_zero += int((~nonzero).sum())
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=nonzero)
        self.unit_sum += inverse @ x64  # Σ x_i / ‖x_i‖ over the non-zero vectors
        self.vector_sum += x64.sum(axis=0)
        self._update_features(x64, inverse, positions)
        if self.per_input:
            self._update_inputs(x64, inverse, nonzero, inputs, n_inputs)
        self.norm_sum += float(norms.sum())
        if self.second_order:
            if self.count == 0 and x.dtype == np.float64:
                self._svd_buffer = self._svd_buffer.astype(np.float64)  # keep float64 inputs exact
            self._update_svd_batches(x)
            self._update_reservoir(x)
        self.count += x.shape[0]

    def _update_features(self, x64: np.ndarray, inverse: np.ndarray, positions) -> None:
        sq = x64 * x64
        self.sq_sum += sq.sum(axis=0)
        self.unit_sq_sum += (inverse * inverse) @ sq
        a = np.abs(x64)
        rows = a.argmax(axis=0)
        top = a[rows, np.arange(self.dim)]
        better = top > self.abs_max
        self.abs_max[better] = top[better]
        if positions is None:
            self.abs_max_pos[better] = -1
            return
        pos = np.asarray(positions, np.int64).reshape(-1)
        self.abs_max_pos[better] = pos[rows[better]]
        first = pos == 0
        if first.any():
            self.first_sum += x64[first].sum(axis=0)
            self.first_sq_sum += sq[first].sum(axis=0)
            self.n_first += int(first.sum())

    def _update_inputs(self, x64: np.ndarray, inverse: np.ndarray, nonzero: np.ndarray, inputs, n_inputs) -> None:
        m = x64.shape[0]
        labels = np.zeros(m, np.int64) if inputs is None else np.asarray(inputs, np.int64).reshape(-1)
        k = 1 if inputs is None else (int(n_inputs) if n_inputs is not None else int(labels.max(initial=-1)) + 1)
        if labels.shape[0] != m or (m and (labels.min() < 0 or labels.max() >= k)):
            raise ValueError(f"input labels must be {m} integers in [0, {k}), got shape {labels.shape}")
        idx = torch.from_numpy(labels)
        xt = torch.from_numpy(x64)
        units = torch.zeros(k, self.dim, dtype=torch.float64).index_add_(0, idx, xt * torch.from_numpy(inverse)[:, None])
        vectors = torch.zeros(k, self.dim, dtype=torch.float64).index_add_(0, idx, xt)
        counts = np.stack([np.bincount(labels, minlength=k), np.bincount(labels, weights=nonzero, minlength=k)], 1)
        self._inputs.append((units.numpy().astype(np.float32), vectors.numpy().astype(np.float32),
                             counts.astype(np.int64)))

    def input_sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per input: Σ u (k, d), Σ x (k, d) float32 and (vectors, non-zero vectors) (k, 2) int64, in the order
        of the updates; None without ``per_input``."""
        if not self.per_input:
            return None
        if not self._inputs:
            return (np.zeros((0, self.dim), np.float32), np.zeros((0, self.dim), np.float32),
                    np.zeros((0, 2), np.int64))
        if len(self._inputs) > 1:
            self._inputs = [tuple(np.concatenate(parts) for parts in zip(*self._inputs))]
        return self._inputs[0]

    def _update_svd_batches(self, x: np.ndarray) -> None:
        start = 0
        while start < x.shape[0]:
            take = min(self.svd_batch_size - self._svd_fill, x.shape[0] - start)
            self._svd_buffer[self._svd_fill : self._svd_fill + take] = x[start : start + take]
            self._svd_fill += take
            start += take
            if self._svd_fill == self.svd_batch_size:
                anisotropy, gram = _batch_svd_anisotropy(self._svd_buffer)
                self.batch_svd.append(anisotropy)
                self._gram_done += gram
                self._svd_fill = 0

    def _update_reservoir(self, x: np.ndarray) -> None:
        if self.reservoir_size:
            _reservoir_update(self.reservoir, self.count, x, self._rng)

    def merge(self, other: "LayerAccumulator") -> None:
        """Add the vectors ``other`` has seen (another shard of the same stream), in place.

        Sums (count, Σ u, Σ x, Σ ‖x‖, Σ x xᵀ) add, so they equal a single pass up to float64 rounding. The
        batch-wise SVD anisotropy keeps both sides' complete batches and refills the partial one with ``other``'s
        partial batch (batches are consecutive within each shard). The reservoir becomes a uniform sample of the
        union (a hypergeometric split of its slots between the two sides, then a uniform choice within each, drawn
        from a stream seeded by both counts, so every rank merging the same states gets the same sample). Raises
        ValueError if the two were not made with the same dimension, reservoir, batch size and order.
        """
        mine = (self.dim, self.reservoir_size, self.svd_batch_size, self.second_order, self.per_input)
        theirs = (other.dim, other.reservoir_size, other.svd_batch_size, other.second_order, other.per_input)
        if mine != theirs:
            raise ValueError(f"cannot merge accumulators of different settings: {mine} vs {theirs}")
        if self._partial_lost or other._partial_lost:
            raise ValueError("cannot merge an accumulator rebuilt from state() without its partial SVD batch; "
                             "merge transfer_state()s")
        if self.second_order:
            self._gram_done += other._gram_done
            self.batch_svd.extend(other.batch_svd)
            self._update_svd_batches(other._svd_buffer[: other._svd_fill])
            if self.reservoir_size:
                self._merge_reservoir(other)
        self.unit_sum += other.unit_sum
        self.vector_sum += other.vector_sum
        self.norm_sum += other.norm_sum
        self.n_zero += other.n_zero
        self.count += other.count
        self.unit_sq_sum += other.unit_sq_sum
        self.sq_sum += other.sq_sum
        better = other.abs_max > self.abs_max
        self.abs_max[better] = other.abs_max[better]
        self.abs_max_pos[better] = other.abs_max_pos[better]
        self.first_sum += other.first_sum
        self.first_sq_sum += other.first_sq_sum
        self.n_first += other.n_first
        if self.per_input:
            self._inputs.append(other.input_sums())

    def _merge_reservoir(self, other: "LayerAccumulator") -> None:
        k = self.reservoir_size
        a, b = self.reservoir_sample().copy(), other.reservoir_sample()
        total = self.count + other.count
        if total <= k:
            self.reservoir[: a.shape[0]] = a
            self.reservoir[a.shape[0] : total] = b
            return
        rng = np.random.Generator(np.random.PCG64([self.seed, self.count, other.count]))
        from_a = int(rng.hypergeometric(self.count, other.count, k)) if self.count and other.count else \
            (k if self.count else 0)
        self.reservoir[:from_a] = a[rng.choice(a.shape[0], from_a, replace=False)]
        self.reservoir[from_a:k] = b[rng.choice(b.shape[0], k - from_a, replace=False)]

    def transfer_state(self) -> dict[str, np.ndarray]:
        """:meth:`state` plus the partial SVD batch, so that an unfinished accumulator can be rebuilt on another
        process and merged (:meth:`from_state`, :meth:`merge`)."""
        extra = {"svd_buffer": self._svd_buffer[: self._svd_fill].copy(), "gram_done": self._gram_done} \
            if self.second_order else {}
        return self.state() | extra

    # -- results ---------------------------------------------------------------
    @property
    def gram(self) -> np.ndarray | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) float64; None without second order."""
        if not self.second_order:
            return None
        if self._svd_fill == 0:
            return self._gram_done
        partial = torch.from_numpy(np.ascontiguousarray(self._svd_buffer[: self._svd_fill], dtype=np.float64))
        return self._gram_done + (partial.T @ partial).numpy()

    @property
    def n_nonzero(self) -> int:
        return self.count - self.n_zero

    def reservoir_sample(self) -> np.ndarray:
        """The reservoir's vectors, shape (min(count, reservoir_size), d)."""
        return self.reservoir[: min(self.count, self.reservoir_size)]

    def summary(self, seed: int = 0, n_pairs: int = 20_000) -> "LayerSummary":
        """Per-layer metrics of everything seen so far (see :class:`LayerSummary`)."""
        n = self.count
        res = self.reservoir_sample()
        rng = np.random.Generator(np.random.PCG64(seed))
        twonn = [metrics.twonn_dimension(res)] if res.shape[0] >= 3 else []
        bs = np.asarray(self.batch_svd, dtype=np.float64)
        gram = self.gram if self.second_order else None  # Σxxᵀ: read once (the partial batch is added on reading)
        return LayerSummary(
            dim=self.dim,
            count=n,
            n_zero=self.n_zero,
            mean_cosine=metrics.mean_cosine_from_unit_sum(self.unit_sum, self.n_nonzero),
            mean_cosine_sampled=metrics.mean_cosine_sampled(res, n_pairs, rng) if res.shape[0] >= 2 else math.nan,
            drift_norm=metrics.drift_norm_from_sum(self.vector_sum, n),
            mean_norm=self.norm_sum / n,
            svd_anisotropy=(metrics.svd_anisotropy_from_moments(self.vector_sum, gram, n)
                            if self.second_order else math.nan),
            svd_anisotropy_batch_mean=float(bs.mean()) if bs.size else math.nan,
            svd_anisotropy_batch_std=float(bs.std()) if bs.size else math.nan,
            n_svd_batches=int(bs.size),
            twonn=twonn[0] if twonn else math.nan,
            n_reservoir=int(res.shape[0]),
            q95=metrics.isotropic_cos_quantile(self.dim) if self.dim >= 2 else math.nan,
            isoscore=(metrics.isoscore_from_moments(self.vector_sum, gram, n)
                      if self.second_order and n >= 2 and self.dim >= 2 else math.nan),
            **self._rogue(res), **self._massive(res),
        )

    def _rogue(self, res: np.ndarray) -> dict:
        """Rogue dimensions (Timkey & van Schijndel 2021): the three largest per-dimension contributions to avg cos,
        their share of it, and avg cos after standardising each dimension (exact μ and σ, on the reservoir)."""
        out = {"rogue_dims": [], "rogue_top3_share": math.nan, "mean_cosine_standardised": math.nan}
        if self.n_nonzero < 2:
            return out
        c = metrics.dimension_contributions(self.unit_sum, self.unit_sq_sum, self.n_nonzero)
        top = np.argsort(c)[::-1][:3]
        total = float(c.sum())
        out["rogue_dims"] = [int(i) for i in top]
        out["rogue_top3_share"] = float(c[top].sum() / total) if total > 0 else math.nan
        if res.shape[0] >= 2:
            mean = self.vector_sum / self.count
            std = np.sqrt(np.clip(self.sq_sum / self.count - mean * mean, 0.0, None))
            keep = std > 0
            z = (res[:, keep].astype(np.float64) - mean[keep]) / std[keep]
            z = z[np.linalg.norm(z, axis=1) > 0]
            if z.shape[0] >= 2:
                out["mean_cosine_standardised"] = metrics.mean_cosine(z)
        return out

    def _massive(self, res: np.ndarray) -> dict:
        """Massive activations (Sun et al. 2024): the largest |activation|, its feature and its position in the
        sequence, its ratio to the median |activation| (of the reservoir), and how constant that feature is on the
        first token of each sequence (std / |mean| over sequences)."""
        f = int(np.argmax(self.abs_max))
        value = float(self.abs_max[f])
        median = float(np.median(np.abs(res))) if res.size else math.nan
        cv = math.nan
        if self.n_first >= 2:
            mean = self.first_sum[f] / self.n_first
            var = max(self.first_sq_sum[f] / self.n_first - mean * mean, 0.0)
            cv = math.sqrt(var) / abs(mean) if mean != 0 else math.inf
        return {"massive_value": value, "massive_feature": f, "massive_position": int(self.abs_max_pos[f]),
                "massive_ratio": value / median if median > 0 else math.nan, "massive_first_token_cv": cv}

    # -- persistence -----------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """The accumulated state as named arrays (for the cache)."""
        return {
            "count": np.array([self.count, self.n_zero, self._svd_fill], np.int64),
            "settings": np.array([self.dim, self.reservoir_size, self.svd_batch_size, self.seed,
                                  int(self.second_order)], np.int64),
            "unit_sum": self.unit_sum,
            "vector_sum": self.vector_sum,
            "norm_sum": np.array([self.norm_sum], np.float64),
            "batch_svd": np.asarray(self.batch_svd, np.float64),
            "unit_sq_sum": self.unit_sq_sum, "sq_sum": self.sq_sum, "abs_max": self.abs_max,
            "abs_max_pos": self.abs_max_pos, "first_sum": self.first_sum, "first_sq_sum": self.first_sq_sum,
            "n_first": np.array([self.n_first], np.int64),
        } | ({"gram": self.gram, "reservoir": self.reservoir_sample().copy()} if self.second_order else {}) \
          | (dict(zip(("input_unit_sum", "input_vector_sum", "input_count"), self.input_sums()))
             if self.per_input else {})

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray]) -> "LayerAccumulator":
        """Rebuild an accumulator from :meth:`state` (a finished one: its SVD buffer is not kept) or from
        :meth:`transfer_state` (with its partial SVD batch)."""
        dim, k, b, seed, second = (int(v) for v in state["settings"])
        acc = cls(dim, k, b, seed, bool(second), per_input="input_count" in state)
        acc.count, acc.n_zero, acc._svd_fill = (int(v) for v in state["count"])
        if acc.per_input:
            acc._inputs = [(state["input_unit_sum"].astype(np.float32), state["input_vector_sum"].astype(np.float32),
                            state["input_count"].astype(np.int64))]
        acc.unit_sum = state["unit_sum"].astype(np.float64)
        acc.vector_sum = state["vector_sum"].astype(np.float64)
        acc.norm_sum = float(state["norm_sum"][0])
        acc.batch_svd = [float(v) for v in state["batch_svd"]]
        for name in ("unit_sq_sum", "sq_sum", "abs_max", "first_sum", "first_sq_sum"):
            setattr(acc, name, state[name].astype(np.float64))
        acc.abs_max_pos = state["abs_max_pos"].astype(np.int64)
        acc.n_first = int(state["n_first"][0])
        if acc.second_order:
            res = state["reservoir"]
            acc.reservoir[: res.shape[0]] = res
            partial = state.get("svd_buffer")
            if partial is not None:
                acc._svd_buffer = acc._svd_buffer.astype(partial.dtype)
                acc._svd_buffer[: partial.shape[0]] = partial
                acc._gram_done = state["gram_done"].astype(np.float64)
            else:  # a finished accumulator (the cache): its partial batch is inside Σxxᵀ and not kept apart
                acc._partial_lost = acc._svd_fill > 0
                acc._svd_fill = 0
                acc._gram_done = state["gram"].astype(np.float64)
        return acc


def _batch_svd_anisotropy(batch: np.ndarray) -> tuple[float, np.ndarray]:
    """SVD anisotropy of one batch (shape (b, d)) and its Gram matrix Σxxᵀ ((d, d) float64): λ_max / trace of the
    centred scatter, which equals σ₁² / Σσᵢ² of :func:`aniso.metrics.svd_anisotropy` (R §2.3) at about half its
    cost, and whose Gram matrix is the batch's share of the layer's Σxxᵀ."""
    b = torch.from_numpy(np.ascontiguousarray(batch, dtype=np.float64))
    gram = (b.T @ b).numpy()
    if not np.ptp(batch, axis=0).any():  # identical rows: no direction of variance (NaN, as the SVD gives)
        return math.nan, gram
    return metrics.svd_anisotropy_from_moments(b.sum(0).numpy(), gram, b.shape[0]), gram


def _reservoir_update(reservoir: np.ndarray, count: int, x: np.ndarray, rng: np.random.Generator) -> None:
    """Vitter's algorithm R over the rows of ``x`` in place: ``reservoir`` (k, d) holds a uniform sample of the
    ``count`` rows seen before. One uniform draw per row past the fill, so the sample does not depend on how the
    stream is split into updates."""
    k = reservoir.shape[0]
    m = x.shape[0]
    seen = count + np.arange(m)  # items seen before each new one
    fill = seen < k
    if fill.any():
        reservoir[seen[fill]] = x[fill]
    rest = np.flatnonzero(~fill)
    if rest.size:
        u = rng.random(rest.size)
        slot = np.floor(u * (seen[rest] + 1)).astype(np.int64)
        hit = slot < k
        slots, items = slot[hit], rest[hit]
        # Later items overwrite earlier ones in the same slot: keep the last.
        rev_slots = slots[::-1]
        _, first_in_rev = np.unique(rev_slots, return_index=True)
        last = len(slots) - 1 - first_in_rev
        reservoir[slots[last]] = x[items[last]]


class ShuffledBatches:
    """Disjoint uniformly random batches of a stream of vectors, kept in bounded memory: R §2.4's "shuffle, then
    split into batches of >= 4096 vectors" without holding the stream.

    Each incoming vector is sent to one of ``n_batches`` bins at random, and each bin keeps a uniform reservoir of
    ``batch_size`` of the vectors sent to it (Vitter's algorithm R). Once every bin is full, the bins are disjoint
    uniform random subsets of the stream, as consecutive batches of a shuffled stream are. Memory: ``n_batches`` x
    ``batch_size`` x d float32, whatever the stream's length.

    Parameters
    ----------
    dim : vector dimension d; n_batches >= 1; batch_size >= 3; seed : the random stream
    """

    def __init__(self, dim: int, n_batches: int, batch_size: int, seed: int = 0):
        if dim < 1 or n_batches < 1 or batch_size < 3:
            raise ValueError(f"need dim >= 1, n_batches >= 1 and batch_size >= 3, got {dim}, {n_batches}, {batch_size}")
        self.bins = np.empty((n_batches, batch_size, dim), np.float32)
        self.seen = np.zeros(n_batches, np.int64)
        # One stream for the bin of each vector, one per bin for its reservoir: one draw per vector in each, so the
        # batches do not depend on how the stream is split into updates.
        self._assign = np.random.Generator(np.random.PCG64(seed))
        self._draws = [np.random.Generator(np.random.PCG64([seed, b])) for b in range(n_batches)]

    def update(self, x: np.ndarray) -> None:
        """Add vectors, shape (m, d)."""
        n_bins = self.bins.shape[0]
        which = np.minimum((self._assign.random(x.shape[0]) * n_bins).astype(np.int64), n_bins - 1)
        for b in range(n_bins):
            rows = x[which == b]
            if rows.shape[0]:
                _reservoir_update(self.bins[b], int(self.seen[b]), rows, self._draws[b])
                self.seen[b] += rows.shape[0]

    def batches(self) -> list[np.ndarray]:
        """The full batches (bins that received at least ``batch_size`` vectors)."""
        return [self.bins[b] for b in range(len(self.bins)) if self.seen[b] >= self.bins.shape[1]]

    def twonn(self) -> tuple[float, float, int]:
        """TwoNN dimension per full batch: (mean, std, number of batches); NaNs with 0 if no batch is full."""
        values = [metrics.twonn_dimension(b) for b in self.batches()]
        if not values:
            return math.nan, math.nan, 0
        return float(np.mean(values)), float(np.std(values)), len(values)


def first_token_attention(probs: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    """Per head, the attention paid to each sequence's first real token, summed over the real query rows:
    ``probs`` (b, H, t, t), ``mask`` (b, t) bool; returns (H,) float64 (Gu et al. 2025, §3)."""
    rows = mask.bool()
    first = rows.float().argmax(dim=1)  # (b,) index of each sequence's first real token
    on_first = probs.double()[torch.arange(rows.shape[0]), :, :, first]  # (b, H, t)
    return on_first.permute(0, 2, 1)[rows].sum(0).numpy()


class AttentionSink:
    """Streamed mean attention paid to the first real token of each sequence, per attention layer and head.

    For head h of layer l: α = mean over every real query position t of A[t, first] (Gu et al. 2025, §3, with
    their ε = 0.3 to call a head a sink). ``heads[l]`` is layer l's number of heads.
    """

    def __init__(self, heads: list[int]):
        self.sums = [np.zeros(h, np.float64) for h in heads]
        self.rows = 0

    def update(self, attentions: list[torch.Tensor], mask: torch.Tensor) -> None:
        """Add one batch: ``attentions[l]`` (b, H_l, t, t) probabilities, ``mask`` (b, t) bool of real tokens.
        Raises ValueError if the layers' head counts or shapes do not match."""
        if len(attentions) != len(self.sums):
            raise ValueError(f"expected {len(self.sums)} attention layers, got {len(attentions)}")
        m = mask.bool()
        for acc, a in zip(self.sums, attentions):
            if a.shape[1] != acc.shape[0] or a.shape[-1] != m.shape[1]:
                raise ValueError(f"attention shape {tuple(a.shape)} does not match {acc.shape[0]} heads and mask "
                                 f"{tuple(m.shape)}")
            acc += first_token_attention(a, m)
        self.rows += int(m.sum())

    def result(self, eps: float = 0.3) -> dict:
        """``per_head``: per layer, each head's mean attention on the first token; ``share_per_layer``: the share of
        heads above ``eps``; ``share``: the share over every (layer, head); ``eps``; ``rows``: query rows seen."""
        per_head = [(s / max(self.rows, 1)).round(6).tolist() for s in self.sums]
        flat = np.concatenate([np.asarray(h) for h in per_head]) if per_head else np.zeros(0)
        return {"per_head": per_head, "share_per_layer": [float(np.mean(np.asarray(h) > eps)) for h in per_head],
                "share": float(np.mean(flat > eps)) if flat.size else float("nan"), "eps": eps, "rows": self.rows}


@dataclass(frozen=True)
class LayerSummary:
    """Per-layer metrics of one model on one corpus.

    Attributes: ``dim`` d; ``count`` vectors seen; ``n_zero`` zero vectors
    excluded from the cosine; ``mean_cosine`` exact avg cos over all pairs;
    ``mean_cosine_sampled`` the same from sampled pairs of the reservoir;
    ``drift_norm`` ||x̄||; ``mean_norm`` E||x||; ``svd_anisotropy`` exact, of the
    whole centred set; ``svd_anisotropy_batch_mean``/``_std`` over complete
    batches (``n_svd_batches``); ``twonn`` TwoNN dimension of the reservoir
    (``n_reservoir`` points); ``q95`` the isotropic q95(d); ``isoscore`` the IsoScore of the covariance (Rudman
    et al. 2022; second order only); ``rogue_dims`` the three dimensions contributing most to avg cos and
    ``rogue_top3_share`` their share of it, ``mean_cosine_standardised`` avg cos after per-dimension
    standardisation, on the reservoir (Timkey & van Schijndel 2021); ``massive_value`` the largest |activation|,
    ``massive_feature`` and ``massive_position`` (in its sequence, -1 unknown) where it is, ``massive_ratio`` its
    ratio to the median |activation| of the reservoir, ``massive_first_token_cv`` std/|mean| of that feature on the
    first token of each sequence (Sun et al. 2024).
    """

    dim: int
    count: int
    n_zero: int
    mean_cosine: float
    mean_cosine_sampled: float
    drift_norm: float
    mean_norm: float
    svd_anisotropy: float
    svd_anisotropy_batch_mean: float
    svd_anisotropy_batch_std: float
    n_svd_batches: int
    twonn: float
    n_reservoir: int
    q95: float
    isoscore: float = math.nan
    rogue_dims: list = field(default_factory=list)
    rogue_top3_share: float = math.nan
    mean_cosine_standardised: float = math.nan
    massive_value: float = math.nan
    massive_feature: int = -1
    massive_position: int = -1
    massive_ratio: float = math.nan
    massive_first_token_cv: float = math.nan


@dataclass
class ModelStats:
    """Streamed statistics of every layer of one model on one corpus.

    ``layers[i]`` is layer i (0 = embedding output; encoder–decoder models list
    encoder layers then decoder layers, ``layer_names`` tells which).
    """

    model_id: str
    layer_names: list[str]
    layers: list[LayerAccumulator]
    meta: dict = field(default_factory=dict)
    _summaries: list[LayerSummary] | None = field(default=None, init=False, repr=False, compare=False)

    def summaries(self) -> list[LayerSummary]:
        """Per-layer :class:`LayerSummary`, computed once."""
        if self._summaries is None:
            out = []
            for name, acc in zip(self.layer_names, self.layers):
                try:
                    out.append(acc.summary())
                except ValueError as exc:  # e.g. a layer of all-zero vectors: name the model and the layer
                    raise ValueError(f"{self.model_id}: layer {name}: {exc} ({acc.n_zero} of {acc.count} vectors "
                                     "are all zero)") from None
            self._summaries = out
        return self._summaries

    def series(self, name: str) -> np.ndarray:
        """One metric across layers, shape (n_layers,)."""
        return np.array([getattr(s, name) for s in self.summaries()], dtype=np.float64)


# -- cache ----------------------------------------------------------------------


def cache_key(parts: dict) -> str:
    """A stable hex key for the JSON-serialisable ``parts`` (model, revision, corpus fingerprint, settings).

    The key also covers the cache format and the versions of the libraries that change numbers
    (:func:`aniso.versions.library_versions`), so an entry written under other versions is not reused.
    """
    from .versions import library_versions

    payload = json.dumps({"format": STATS_FORMAT_VERSION, "versions": library_versions(), **parts},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


class StatsCache:
    """Per-model statistics on disk, keyed by :func:`cache_key`.

    Each entry is a safetensors file (no pickle) plus a JSON sidecar holding its
    SHA-256 and the metadata; both are written atomically. An entry whose
    checksum or contents do not verify is reported with a warning and treated
    as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.safetensors", self.root / f"{key}.json"

    def load(self, key: str) -> ModelStats | None:
        """The cached :class:`ModelStats` for ``key``, or None if absent or corrupt (with a warning)."""
        from safetensors.numpy import load_file

        data_path, meta_path = self._paths(key)
        if not data_path.exists() and not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            if meta.get("sha256") != sha256_file(data_path):
                raise ValueError("checksum mismatch")
            arrays = load_file(str(data_path))
            layers = []
            for i in range(len(meta["layer_names"])):
                state = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"layer{i}/")}
                layers.append(LayerAccumulator.from_state(state))
            stats = ModelStats(meta["model_id"], list(meta["layer_names"]), layers, meta.get("meta", {}))
            if meta.get("summaries") is not None:
                stats._summaries = [
                    LayerSummary(**{k: (math.nan if v is None else v) for k, v in s.items()}) for s in meta["summaries"]
                ]
            return stats
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            warnings.warn(
                f"statistics cache entry {data_path} is corrupt or truncated ({exc}); recomputing it",
                RuntimeWarning,
                stacklevel=2,
            )
            return None

    def save(self, key: str, stats: ModelStats) -> None:
        """Write ``stats`` under ``key`` atomically (data first, then the sidecar that validates it)."""
        from safetensors.numpy import save_file

        data_path, meta_path = self._paths(key)
        tensors = {}
        for i, acc in enumerate(stats.layers):
            for name, arr in acc.state().items():
                tensors[f"layer{i}/{name}"] = np.ascontiguousarray(arr)
        atomic_write(data_path, lambda p: save_file(tensors, str(p)))
        meta = {
            "format": STATS_FORMAT_VERSION,
            "model_id": stats.model_id,
            "layer_names": stats.layer_names,
            "meta": stats.meta,
            "summaries": [summary_dict(s) for s in stats.summaries()],
            "sha256": sha256_file(data_path),
        }
        atomic_write(meta_path, lambda p: p.write_text(json.dumps(meta, indent=1, default=str)))


class JsonCache:
    """Small JSON results (e.g. an untrained-block sweep) on disk, keyed by :func:`cache_key`.

    Each entry is one file ``<root>/<key>.json`` holding the payload and its
    SHA-256, written atomically; an entry that does not verify is reported with
    a warning and treated as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    @staticmethod
    def _digest(payload: Any) -> str:
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def load(self, key: str) -> Any | None:
        """The cached payload for ``key``, or None if absent or corrupt (with a warning)."""
        path = self._path(key)
        if not path.exists():
            return None
        try:
            doc = json.loads(path.read_text())
            if doc.get("sha256") != self._digest(doc["payload"]):
                raise ValueError("checksum mismatch")
            return doc["payload"]
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            warnings.warn(f"cache entry {path} is corrupt or truncated ({exc}); recomputing it",
                          RuntimeWarning, stacklevel=2)
            return None

    def save(self, key: str, payload: Any) -> None:
        """Write ``payload`` (JSON-serialisable) under ``key`` atomically."""
        doc = {"payload": payload, "sha256": self._digest(payload)}
        atomic_write(self._path(key), lambda p: p.write_text(json.dumps(doc)))


def summary_dict(summary: LayerSummary) -> dict:
    """A JSON-friendly dict of a :class:`LayerSummary` (NaN becomes None)."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(summary).items()}
