"""The numpy float64 host accumulator that :class:`aniso.stats.accumulators.LayerAccumulator` replaced, kept verbatim as the
reference implementation the device-resident engine is checked against (``tests/stats/test_stats_engine.py``).

Not part of the package: it moves every batch to the host and accumulates in numpy, which is what the engine avoids.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from aniso import metrics
from aniso.common.settings import TWONN_MIN_POINTS
from aniso.stats.accumulators import INPUT_GROUPS, input_group
from aniso.stats.results import LayerSummary


class ReferenceLayerAccumulator:
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
        bootstrap over the inputs resamples (:func:`aniso.stats.uncertainty.bootstrap_stats`); read back
        (:meth:`input_sums`) per group of inputs past ``input_groups`` inputs, as the engine keeps them
    input_groups, group_seed : the engine's (:class:`aniso.stats.accumulators.InputGroups`)
    """

    def __init__(self, dim: int, reservoir_size: int = 4096, svd_batch_size: int = 4096, seed: int = 0,
                 second_order: bool = True, per_input: bool = False, input_groups: int = INPUT_GROUPS,
                 group_seed: int = 0):
        self.input_groups, self.group_seed = input_groups, group_seed
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
        units, vectors, counts = self._inputs[0]
        if units.shape[0] <= self.input_groups:
            return self._inputs[0]
        # Past `input_groups` inputs: the sums of each group of inputs (in float64, then rounded once)
        group = input_group(np.arange(units.shape[0]), self.input_groups, self.group_seed)
        out = [np.zeros((self.input_groups, a.shape[1]), np.float64 if a.dtype != np.int64 else np.int64)
               for a in (units, vectors, counts)]
        for into, a in zip(out, (units, vectors, counts)):
            np.add.at(into, group, a)
        return out[0].astype(np.float32), out[1].astype(np.float32), out[2]

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

    def merge(self, other: "ReferenceLayerAccumulator") -> None:
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

    def _merge_reservoir(self, other: "ReferenceLayerAccumulator") -> None:
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
        n_distinct = int(np.unique(res, axis=0).shape[0]) if res.shape[0] else 0
        twonn = [metrics.twonn_dimension(res)] if n_distinct >= TWONN_MIN_POINTS else []
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
            n_distinct=n_distinct,
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
    def from_state(cls, state: dict[str, np.ndarray]) -> "ReferenceLayerAccumulator":
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
    cost, and whose Gram matrix is the batch's share of the layer's Σxxᵀ. The scatter is formed from the rows centred
    on their mean (not from the moments Σx, Σxxᵀ, which a common offset far above the spread, a massive activation
    on a batch of few rows, leaves to rounding: :func:`aniso.metrics.svd_anisotropy_from_moments` refuses those)."""
    b = torch.from_numpy(np.ascontiguousarray(batch, dtype=np.float64))
    gram = (b.T @ b).numpy()
    if not np.ptp(batch, axis=0).any():  # identical rows: no direction of variance (NaN, as the SVD gives)
        return math.nan, gram
    centred = b.numpy() - b.numpy().mean(0)
    eigenvalues = np.linalg.eigvalsh(centred.T @ centred)
    return float(eigenvalues[-1] / eigenvalues.sum()), gram


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


