"""Streamed per-layer statistics of hidden states (their on-disk cache is :mod:`aniso.stats.cache`).

A :class:`LayerAccumulator` sees the vectors of one layer batch by batch and
keeps only fixed-size state (O(d²) plus a fixed reservoir and one SVD batch
buffer), so peak memory does not grow with the number of tokens processed.
Its :meth:`LayerAccumulator.summary` gives the per-layer metrics the claims read.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import torch

from .. import metrics
from ..common.devices import accumulation_dtype
from .parts.attention import AttentionSink, first_token_attention
from .parts.base import host as _host, running_max as _running_max
from .parts.inputs import _ONE_HOT_INPUTS, INPUT_GROUPS, InputGroups, input_group
from .parts.massive import kept_maxima as _kept_maxima, massive_rows
from .parts.reservoir import reservoir_update as _reservoir_update
from .parts.second_order import BatchProducts, batch_svd_anisotropy, centred_batch_products
from .results import LayerSummary

__all__ = ["LayerAccumulator", "InputGroups", "INPUT_GROUPS", "input_group", "AttentionSink", "first_token_attention",
           "ShuffledBatches", "BatchProducts", "batch_svd_anisotropy", "centred_batch_products", "massive_rows"]

log = logging.getLogger(__name__)


class LayerAccumulator:
    """Streamed statistics of one layer's vectors, kept on the device the vectors come from.

    State: count n, zero-vector count, Σ u_i (unit vectors), Σ x_i, Σ ‖x_i‖, Σ x_i x_iᵀ, the SVD anisotropy of each
    complete batch of ``svd_batch_size`` consecutive vectors (Razzhigaev et al. 2024 §2.3), and a uniform reservoir
    sample of ``reservoir_size`` vectors (Vitter's algorithm R, seeded) for TwoNN and sampled-pair estimators.
    Every statistic is independent of how the stream is split into updates.

    **Device and precision.** Every piece of state is a torch tensor on ``device`` (the model's: CPU stays CPU).
    Each batch, in whatever dtype the model produced it (bf16, fp16, fp32), is upcast once to
    :func:`accumulation_dtype` (float64 on CPU and CUDA; float32 on MPS) and summed there: every weighted row sum of a
    batch (Σ u, Σ x, the first tokens' sums, the per-input sums of up to 64 inputs as one-hot rows, the left-out
    sets' sums) in one GEMM against x and one against x∘x, a pass over the batch each (more inputs in one update:
    one segment sum, ``index_add_``, of the (m, 2d) rows [u | x] into their input's row); Σ x xᵀ by one
    float64 GEMM per SVD batch, whose Gram matrix also gives that batch's SVD anisotropy (λ_max / trace of the
    centred scatter, by :func:`aniso.metrics.largest_eigenvalue` of the smaller of the d × d and b × b Gram matrices:
    a Lanczos iteration, O(d²) per step, not a dense O(d³) solve). The float64
    sums agree with a float64 host computation to rounding (relative 1e-12 on the data sizes here; the reference
    test holds them to 1e-6). Only O(d²) summaries reach the host, once, when read (:meth:`state`,
    :meth:`summary` and the array properties). Torch's own thread pool does the work, so
    ``torch.set_num_threads`` bounds it.

    With ``second_order=False`` only the first-order state is kept (count, Σ u_i, Σ x_i, Σ ||x_i||, and the O(d)
    feature sums): O(d) memory, which is all avg cos, drift norm and mean norm need. This is the mode for flattened
    CNN feature maps (G §3.2), whose d (C·H·W, up to ~4·10⁵) rules out a d × d matrix; the SVD anisotropy, TwoNN and
    sampled-pair estimates are then NaN.

    Parameters
    ----------
    dim : int, the vector dimension d
    reservoir_size : int >= 0 (ignored, 0, without second order)
    svd_batch_size : int >= 2, vectors per batch for the batch-wise SVD anisotropy
    seed : int, seed of the reservoir's random stream (host numpy PCG64: one draw per vector past the fill)
    second_order : bool, keep Σ x xᵀ, the SVD batches and the reservoir
    per_input : bool, also keep Σ u_i, Σ x_i and the counts of each input (a paragraph, recording or image, as
        :meth:`update` labels its rows; the whole update when unlabelled), float32: what a bootstrap over the inputs
        resamples (:func:`aniso.stats.uncertainty.bootstrap_stats`). Kept in at most ``input_groups`` rows
        (:class:`InputGroups`): exactly per input up to that many inputs, in random groups of inputs beyond, so
        O(min(inputs, input_groups) · d) memory whatever the corpus
    input_groups : int >= 1, the most rows the per-input sums take (default :data:`INPUT_GROUPS`)
    group_seed : int, seed of the assignment of inputs to groups past ``input_groups`` (the same for every layer of
        a model, so that a resample weighs the same inputs in every layer)
    device : torch device of the state (where :meth:`update` expects its vectors; others are moved there)
    complements : names of subsets of rows that :meth:`update` may mark (``exclude``): for each, the statistics of
        the stream *without* those rows are available as :meth:`complement` (e.g. without the first token of each
        sequence, or without the tokens that carry massive activations). Their sums are those of the excluded rows,
        subtracted from the whole stream's, so a complement costs O(excluded rows · d²), not a second pass over
        every row; its batch-wise SVD anisotropy is that of each SVD batch without its excluded rows.

    Raises
    ------
    ValueError on a dimension < 1, a negative reservoir, an SVD batch < 2, fewer than one input group or a device
    that does not exist.
    """

    def __init__(self, dim: int, reservoir_size: int = 4096, svd_batch_size: int = 4096, seed: int = 0,
                 second_order: bool = True, per_input: bool = False, device: "torch.device | str" = "cpu",
                 complements: tuple[str, ...] = (), input_groups: int | None = None, group_seed: int = 0):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        if reservoir_size < 0:
            raise ValueError(f"reservoir_size must be >= 0, got {reservoir_size}")
        if svd_batch_size < 2:
            raise ValueError(f"svd_batch_size must be >= 2, got {svd_batch_size}")
        input_groups = INPUT_GROUPS if input_groups is None else int(input_groups)
        if input_groups < 1:
            raise ValueError(f"input_groups must be >= 1, got {input_groups}")
        self.dim = dim
        self.second_order = second_order
        if not second_order:
            reservoir_size = 0
        self.reservoir_size = reservoir_size
        self.svd_batch_size = svd_batch_size
        self.seed = seed
        self.per_input = per_input
        self.device = torch.device(device)
        self.dtype = accumulation_dtype(self.device)
        self.count = 0
        self._partial_lost = False  # rebuilt from a state without its partial SVD batch (cannot be merged)
        self._rng = np.random.Generator(np.random.PCG64(seed))
        self._cache: dict[str, Any] = {}
        zeros = self._zeros
        self._n_zero = torch.zeros((), dtype=torch.int64, device=self.device)
        self._unit_sum, self._vector_sum, self._norm_sum = zeros(dim), zeros(dim), zeros()
        # O(d) sums for rogue dimensions (Σ u∘u, Σ x∘x) and massive activations (per feature: max |x| and the
        # position in its sequence where it was seen; Σ x and Σ x∘x over the first token of each sequence).
        self._unit_sq_sum, self._sq_sum, self._abs_max = zeros(dim), zeros(dim), zeros(dim)
        self._abs_max_pos = torch.full((dim,), -1, dtype=torch.int64, device=self.device)
        self._first_sum, self._first_sq_sum = zeros(dim), zeros(dim)
        self._n_first = torch.zeros((), dtype=torch.int64, device=self.device)
        # Σxxᵀ of the vectors in complete SVD batches (each batch's Gram matrix serves its SVD anisotropy too); the
        # partial batch's is added when `gram` is read.
        self._gram_done = zeros(dim, dim) if second_order else None
        self._batch_svd: list[torch.Tensor] = []
        self._svd_buffer = torch.empty((svd_batch_size if second_order else 0, dim), dtype=torch.float32,
                                       device=self.device)
        self._svd_fill = 0
        self._reservoir = torch.empty((reservoir_size, dim), dtype=torch.float32, device=self.device)
        # Per input (per group of inputs past `input_groups` of them): Σ u (k, d), Σ x (k, d) float32 and (vectors,
        # non-zero vectors) (k, 2) int64.
        self._inputs = InputGroups(dim, self.device, input_groups, group_seed)
        # Named subsets of rows to leave out (e.g. the first token of each sequence): their sums, kept apart, are
        # subtracted from the whole stream's (see `complement`).
        self._complements = {name: _Complement(self) for name in complements}

    def _zeros(self, *shape: int) -> torch.Tensor:
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def _as_tensor(self, x, dtype=None) -> torch.Tensor:
        t = torch.from_numpy(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
        return t.to(device=self.device, dtype=dtype) if dtype is not None or t.device != self.device else t

    # -- streaming -----------------------------------------------------------
    def update(self, x, inputs=None, n_inputs: int | None = None, positions=None, exclude=None,
               wait: bool = True) -> torch.Tensor | None:
        """Add a batch of vectors ``x``, shape (m, d): a torch tensor (any float dtype; moved to this accumulator's
        device if elsewhere) or a numpy array.

        ``inputs`` (m,) int labels each row with the input it came from, 0 .. ``n_inputs`` - 1 (kept per input with
        ``per_input``; None: the whole batch is one input). ``positions`` (m,) int: each row's position in its
        sequence (0 = its first token; text only), for the massive-activation statistics. ``exclude``: {complement
        name: (m,) bool, the rows that complement leaves out} (a complement not named leaves out none of these rows).
        Raises ValueError on a bad shape, bad labels or non-finite values (naming how many rows are NaN or infinite).

        The values' finiteness and the labels' range are checked in one read from the device before anything is
        added. With ``wait`` False that read is left to the caller, who can read the checks of several updates at once
        (:func:`aniso.stats.pipeline.compute_stats`: once per batch for every layer): the update returns its check, a
        0-d bool tensor on the device, True where the batch was not finite or its labels out of range (the
        accumulator is then not to be used further; :meth:`update_error` says why); an update that completes an SVD
        batch still reads its check first. Returns None otherwise.
        """
        x = self._as_tensor(x)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected an array of shape (m, {self.dim}), got {tuple(x.shape)}")
        self._cache.clear()
        m = x.shape[0]
        if m == 0:
            if self.per_input and n_inputs:  # inputs with no vectors here still hold their place
                self._inputs.append(torch.zeros(n_inputs, self.dim, device=self.device),
                                    torch.zeros(n_inputs, self.dim, device=self.device),
                                    torch.zeros(n_inputs, 2, dtype=torch.int64, device=self.device))
            return
        x64 = x.to(self.dtype)
        sq = x64 * x64
        norms = sq.sum(1).sqrt_()
        labels, k, bad_labels = self._input_labels(inputs, n_inputs, m) if self.per_input else (None, 0, None)
        # The update's one wait for the device: are the values finite (a non-finite entry makes its row's norm
        # non-finite) and the labels in range? Nothing is added before it (unless the caller reads it later).
        failed = ~torch.isfinite(norms).all()
        if bad_labels is not None:
            failed = failed | bad_labels
        closes = self.second_order and self._svd_fill + m >= self.svd_batch_size
        if (wait or closes) and bool(failed):  # (an SVD batch is completed only from checked rows)
            raise self.update_error(x64, k)
        nonzero = norms > 0
        inverse = torch.where(nonzero, 1.0 / torch.where(nonzero, norms, 1.0), 0.0)
        pos = None if positions is None else self._as_tensor(positions, torch.int64).reshape(-1)
        first = None if pos is None else pos == 0
        masks = {}
        for name in self._complements:
            mask = (exclude or {}).get(name)
            mask = (torch.zeros(m, dtype=torch.bool, device=self.device) if mask is None
                    else self._as_tensor(mask, torch.bool).reshape(-1))
            if mask.shape[0] != m:
                raise ValueError(f"exclude[{name!r}] must mark {m} rows, got {mask.shape[0]}")
            masks[name] = mask
        # Every weighted row sum of this batch, in two GEMMs: the rows of `w_x` against x (Σ u, Σ x, Σ over first
        # tokens, per input, per left-out set) and the rows of `w_sq` against x∘x. One pass over the batch each,
        # instead of one per statistic.
        ones = torch.ones(m, dtype=self.dtype, device=self.device)
        first_w = first.to(self.dtype) if first is not None else torch.zeros_like(ones)
        w_x, w_sq = [inverse, ones, first_w], [ones, inverse * inverse, first_w]
        by_gemm = labels is not None and k <= _ONE_HOT_INPUTS
        if by_gemm:  # per-input sums as k one-hot rows of the same GEMM
            onehot = (labels.unsqueeze(0) == torch.arange(k, device=self.device).unsqueeze(1)).to(self.dtype)
            w_x += [onehot * inverse, onehot]
        for mask in masks.values():
            w = mask.to(self.dtype)
            w_x += [w * inverse, w, w * first_w]
            w_sq += [w, w * inverse * inverse, w * first_w]
        s_x = torch.cat([v.reshape(-1, m) for v in w_x]) @ x64
        s_sq = torch.cat([v.reshape(-1, m) for v in w_sq]) @ sq
        self._n_zero += m - nonzero.sum()
        self._unit_sum += s_x[0]  # Σ x_i / ‖x_i‖ over the non-zero vectors
        self._vector_sum += s_x[1]
        self._norm_sum += norms.sum()
        self._sq_sum += s_sq[0]
        self._unit_sq_sum += s_sq[1]
        ax = x.abs()  # in the batch's own dtype (exact)
        top, rows = ax.max(0)  # the first row reaching each maximum
        self._update_massive(top, rows, pos, first, s_x[2], s_sq[2])
        at = 3
        if labels is not None:
            # (vectors, non-zero vectors) per input: a segment sum, no count read back to the host
            counts = torch.zeros(k, 2, dtype=torch.int64, device=self.device).index_add_(
                0, labels, torch.stack([torch.ones_like(labels), nonzero.to(torch.int64)], 1))
            if by_gemm:
                unit, vector = s_x[at : at + k], s_x[at + k : at + 2 * k]
                at += 2 * k
            else:  # many inputs in one update: one segment sum of the (m, 2d) rows [u | x] into their input's row
                both = torch.zeros(k, 2 * self.dim, dtype=self.dtype, device=self.device).index_add_(
                    0, labels, torch.cat([x64 * inverse[:, None], x64], dim=1))
                unit, vector = both[:, : self.dim], both[:, self.dim :]
            self._inputs.append(unit, vector, counts)
        kept = _kept_maxima(ax, top, rows, list(masks.values()))  # (ax is overwritten)
        for i, (name, mask) in enumerate(masks.items()):
            self._complements[name].update(mask, s_x[at + 3 * i : at + 3 * i + 3], s_sq[3 + 3 * i : 6 + 3 * i],
                                           norms, *kept[i], pos, first)
        if self.second_order:
            if self.count == 0 and x.dtype == torch.float64:
                self._svd_buffer = self._svd_buffer.double()  # keep float64 inputs exact
            self._update_svd_batches(x, masks)
            self._update_reservoir(x)
        self.count += m
        return None if wait else failed

    def update_error(self, x, k: int | None = None) -> ValueError:
        """Why a batch ``x`` (m, d) failed :meth:`update`'s check: its rows with NaN or infinite values, counted, or
        else its input labels out of [0, ``k``)."""
        x64 = self._as_tensor(x).to(self.dtype)
        bad = ~torch.isfinite(x64).all(1)
        if bool(bad.any()):
            return ValueError(f"hidden states contain NaN or infinite values: {int(bad.sum())} of {x64.shape[0]} "
                              f"vectors ({int(torch.isnan(x64).any(1).sum())} with NaN)")
        return ValueError(f"input labels must be {x64.shape[0]} integers in [0, {k}), got values outside it")

    def _update_massive(self, top, rows, pos, first, first_sum, first_sq_sum) -> None:
        self._abs_max, self._abs_max_pos = _running_max(self._abs_max, self._abs_max_pos, top, rows, pos)
        if pos is None:
            return
        self._first_sum += first_sum
        self._first_sq_sum += first_sq_sum
        self._n_first += first.sum()

    def _input_labels(self, inputs, n_inputs, m: int) -> tuple[torch.Tensor, int, torch.Tensor | None]:
        """(labels (m,) int64 on the device, k inputs, a 0-d bool tensor on the device: whether some label is outside
        [0, k); None where that was checked on the host). Raises ValueError on labels of the wrong length, or labels
        given on the host that fall outside [0, k)."""
        if inputs is None:
            return torch.zeros(m, dtype=torch.int64, device=self.device), 1, None
        on_host = not isinstance(inputs, torch.Tensor)
        inputs = np.asarray(inputs, dtype=np.int64).reshape(-1) if on_host else inputs.reshape(-1)
        k = int(n_inputs) if n_inputs is not None else int(inputs.max()) + 1 if len(inputs) else 0
        if inputs.shape[0] != m or (on_host and m and (inputs.min() < 0 or inputs.max() >= k)):
            raise ValueError(f"input labels must be {m} integers in [0, {k}), got shape {tuple(inputs.shape)}")
        labels = self._as_tensor(inputs, torch.int64).reshape(-1)
        return labels, k, None if on_host else ((labels < 0) | (labels >= k)).any()

    def _update_svd_batches(self, x: torch.Tensor, masks: dict | None = None) -> None:
        start = 0
        while start < x.shape[0]:
            take = min(self.svd_batch_size - self._svd_fill, x.shape[0] - start)
            self._svd_buffer[self._svd_fill : self._svd_fill + take] = x[start : start + take]
            for name, mask in (masks or {}).items():
                self._complements[name].marked[self._svd_fill : self._svd_fill + take] = mask[start : start + take]
            self._svd_fill += take
            start += take
            if self._svd_fill == self.svd_batch_size:
                self._close_svd_batch()
                self._svd_fill = 0

    def _close_svd_batch(self) -> None:
        """The SVD buffer holds a complete batch: its share of Σxxᵀ and its SVD anisotropy, and each complement's
        (the batch without its marked rows), from one centred product (:func:`centred_batch_products`); the
        buffer is left centred (it is refilled next)."""
        comps = list(self._complements.values())
        moments = centred_batch_products(self._svd_buffer, [c.marked for c in comps], self.dtype)
        self._gram_done += moments.gram
        ratios = moments.anisotropies()
        self._batch_svd.append(ratios[0])
        for comp, marked, ratio in zip(comps, moments.marked, ratios[1:]):
            comp.close_batch(moments, marked, ratio)

    def _update_reservoir(self, x: torch.Tensor) -> None:
        if self.reservoir_size:
            _reservoir_update(self._reservoir, self.count, x, self._rng)

    def merge(self, other: "LayerAccumulator") -> None:
        """Add the vectors ``other`` has seen (another shard of the same stream), in place.

        Sums (count, Σ u, Σ x, Σ ‖x‖, Σ x xᵀ) add, so they equal a single pass up to float64 rounding. The
        batch-wise SVD anisotropy keeps both sides' complete batches and refills the partial one with ``other``'s
        partial batch (batches are consecutive within each shard). The reservoir becomes a uniform sample of the
        union (a hypergeometric split of its slots between the two sides, then a uniform choice within each, drawn
        from a stream seeded by both counts, so every rank merging the same states gets the same sample). Raises
        ValueError if the two were not made with the same dimension, reservoir, batch size and order.
        """
        mine = (self.dim, self.reservoir_size, self.svd_batch_size, self.second_order, self.per_input,
                self._inputs.groups, self._inputs.seed)
        theirs = (other.dim, other.reservoir_size, other.svd_batch_size, other.second_order, other.per_input,
                  other._inputs.groups, other._inputs.seed)
        if mine != theirs:
            raise ValueError(f"cannot merge accumulators of different settings: {mine} vs {theirs}")
        if self._partial_lost or other._partial_lost:
            raise ValueError("cannot merge an accumulator rebuilt from state() without its partial SVD batch; "
                             "merge transfer_state()s")
        if self._complements or other._complements:
            raise ValueError("cannot merge accumulators that keep complements (rows left out); their summaries are "
                             "per process")
        self._cache.clear()
        on = lambda t: t.to(device=self.device, dtype=self.dtype)  # noqa: E731
        if self.second_order:
            self._gram_done += on(other._gram_done)
            self._batch_svd.extend(t.to(self.device) for t in other._batch_svd)
            self._update_svd_batches(other._svd_buffer[: other._svd_fill].to(self.device))
            if self.reservoir_size:
                self._merge_reservoir(other)
        self._unit_sum += on(other._unit_sum)
        self._vector_sum += on(other._vector_sum)
        self._norm_sum += on(other._norm_sum)
        self._n_zero += other._n_zero.to(self.device)
        self.count += other.count
        self._unit_sq_sum += on(other._unit_sq_sum)
        self._sq_sum += on(other._sq_sum)
        theirs_max = on(other._abs_max)
        better = theirs_max > self._abs_max
        self._abs_max = torch.where(better, theirs_max, self._abs_max)
        self._abs_max_pos = torch.where(better, other._abs_max_pos.to(self.device), self._abs_max_pos)
        self._first_sum += on(other._first_sum)
        self._first_sq_sum += on(other._first_sq_sum)
        self._n_first += other._n_first.to(self.device)
        if self.per_input:
            self._inputs.append(*other._input_tensors(), n_inputs=other._inputs.n_inputs)

    def _merge_reservoir(self, other: "LayerAccumulator") -> None:
        k = self.reservoir_size
        a = self._reservoir[: min(self.count, k)].clone()
        b = other._reservoir[: min(other.count, k)].to(self.device)
        total = self.count + other.count
        if total <= k:
            self._reservoir[: a.shape[0]] = a
            self._reservoir[a.shape[0] : total] = b
            return
        rng = np.random.Generator(np.random.PCG64([self.seed, self.count, other.count]))
        from_a = int(rng.hypergeometric(self.count, other.count, k)) if self.count and other.count else \
            (k if self.count else 0)
        pick_a = torch.from_numpy(rng.choice(a.shape[0], from_a, replace=False)).to(self.device)
        pick_b = torch.from_numpy(rng.choice(b.shape[0], k - from_a, replace=False)).to(self.device)
        self._reservoir[:from_a] = a[pick_a]
        self._reservoir[from_a:k] = b[pick_b]

    def transfer_state(self) -> dict[str, np.ndarray]:
        """:meth:`state` plus the partial SVD batch, so that an unfinished accumulator can be rebuilt on another
        process and merged (:meth:`from_state`, :meth:`merge`)."""
        extra = {"svd_buffer": _host(self._svd_buffer[: self._svd_fill]).copy(),
                 "gram_done": _host(self._gram_done)} if self.second_order else {}
        return self.state() | extra

    # -- results ---------------------------------------------------------------
    def _cached(self, name: str, make):
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def gram_tensor(self) -> torch.Tensor | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) in :func:`accumulation_dtype`, on the device (shared: do not
        modify it in place); None without second order."""
        if not self.second_order:
            return None
        if self._svd_fill == 0:
            return self._gram_done
        # The partial batch's share as a complete batch's (centred float32 products, the complements' rows apart:
        # :func:`centred_batch_products`), formed once per state: the layer's summary and each complement read it.
        fill = self._svd_fill
        marks = [c.marked[:fill] for c in self._complements.values()]
        return self._cached("gram_tensor", lambda: self._gram_done + centred_batch_products(
            self._svd_buffer[:fill].clone(), marks, self.dtype).gram)

    @property
    def gram(self) -> np.ndarray | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) float64 on the host; None without second order."""
        if not self.second_order:
            return None
        return self._cached("gram", lambda: _host(self.gram_tensor()).astype(np.float64))

    @property
    def n_zero(self) -> int:
        """Vectors of norm 0 (left out of the cosine)."""
        return self._cached("n_zero", lambda: int(self._n_zero))

    @property
    def n_nonzero(self) -> int:
        return self.count - self.n_zero

    @property
    def n_first(self) -> int:
        """Rows seen at position 0 of their sequence."""
        return self._cached("n_first", lambda: int(self._n_first))

    @property
    def norm_sum(self) -> float:
        """Σ ‖x_i‖."""
        return self._cached("norm_sum", lambda: float(self._norm_sum))

    @property
    def batch_svd(self) -> list[float]:
        """SVD anisotropy of each complete batch, in stream order."""
        return self._cached("batch_svd", lambda: _host(torch.stack(self._batch_svd)).astype(np.float64).tolist()
                            if self._batch_svd else [])

    @property
    def reservoir(self) -> np.ndarray:
        """The reservoir's storage (reservoir_size, d) float32 on the host (see :meth:`reservoir_sample`)."""
        return self._cached("reservoir", lambda: _host(self._reservoir))

    def reservoir_sample(self) -> np.ndarray:
        """The reservoir's vectors, shape (min(count, reservoir_size), d), float32 on the host."""
        return self.reservoir[: min(self.count, self.reservoir_size)]

    @property
    def n_inputs(self) -> int:
        """Inputs whose sums :meth:`input_sums` holds (0 without ``per_input``)."""
        return self._inputs.n_inputs if self.per_input else 0

    @property
    def input_groups(self) -> int:
        """The most rows :meth:`input_sums` takes (:class:`InputGroups`)."""
        return self._inputs.groups

    def input_sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per input: Σ u (k, d), Σ x (k, d) float32 and (vectors, non-zero vectors) (k, 2) int64, in the order
        of the updates, on the host; past :attr:`input_groups` inputs, per random group of inputs (k =
        :attr:`input_groups`; :class:`InputGroups`). None without ``per_input``."""
        if not self.per_input:
            return None
        return self._cached("inputs", lambda: tuple(_host(t) for t in self._input_tensors()))

    def _input_tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self._inputs.tensors()

    def summary(self, seed: int = 0, n_pairs: int = 20_000) -> LayerSummary:
        """Per-layer metrics of everything seen so far (see :class:`LayerSummary`).

        The whole-set SVD anisotropy and IsoScore come from the centred Σ x xᵀ on the device (its λ_max, trace and
        Frobenius norm);
        TwoNN, sampled pairs and the standardised cosine from the reservoir."""
        n = self.count
        res = self.reservoir_sample()
        rng = np.random.Generator(np.random.PCG64(seed))
        twonn = [metrics.twonn_dimension(res)] if res.shape[0] >= 3 else []
        bs = np.asarray(self.batch_svd, dtype=np.float64)
        svd, iso = self._spectrum_metrics() if self.second_order else (math.nan, math.nan)
        return LayerSummary(
            dim=self.dim,
            count=n,
            n_zero=self.n_zero,
            mean_cosine=metrics.mean_cosine_from_unit_sum(self.unit_sum, self.n_nonzero),
            mean_cosine_sampled=metrics.mean_cosine_sampled(res, n_pairs, rng) if res.shape[0] >= 2 else math.nan,
            drift_norm=metrics.drift_norm_from_sum(self.vector_sum, n),
            mean_norm=self.norm_sum / n,
            svd_anisotropy=svd,
            svd_anisotropy_batch_mean=float(bs.mean()) if bs.size else math.nan,
            svd_anisotropy_batch_std=float(bs.std()) if bs.size else math.nan,
            n_svd_batches=int(bs.size),
            twonn=twonn[0] if twonn else math.nan,
            n_reservoir=int(res.shape[0]),
            q95=metrics.isotropic_cos_quantile(self.dim) if self.dim >= 2 else math.nan,
            isoscore=iso,
            **self._rogue(res), **self._massive(res),
        )

    def _spectrum_metrics(self) -> tuple[float, float]:
        """(SVD anisotropy, IsoScore) of every vector seen, from the centred scatter
        C = Σxxᵀ − n x̄x̄ᵀ (R §2.3; Rudman et al. 2022): λ_max / trace(C) (λ_max by
        :func:`aniso.metrics.largest_eigenvalue`), and IsoScore from tr C and ‖C‖²_F
        (:func:`aniso.metrics.isoscore_from_trace_and_frobenius`): no dense eigendecomposition of the d x d matrix."""
        n = self.count
        if n < 2:
            raise ValueError(f"SVD anisotropy needs at least 2 vectors, got {n}")
        s = self._vector_sum
        c = self.gram_tensor() - torch.outer(s, s) / n
        c = (c + c.T) / 2
        trace = float(torch.diagonal(c).sum())
        if trace <= 0:
            return math.nan, math.nan
        svd = float(min(1.0, max(0.0, float(metrics.largest_eigenvalue(c)) / trace)))
        frobenius_sq = float(torch.sum(c * c))
        iso = metrics.isoscore_from_trace_and_frobenius(trace, frobenius_sq, self.dim) if self.dim >= 2 else math.nan
        return svd, iso

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
        abs_max = self.abs_max
        f = int(np.argmax(abs_max))
        value = float(abs_max[f])
        median = float(np.median(np.abs(res))) if res.size else math.nan
        cv = math.nan
        if self.n_first >= 2:
            mean = self.first_sum[f] / self.n_first
            var = max(self.first_sq_sum[f] / self.n_first - mean * mean, 0.0)
            cv = math.sqrt(var) / abs(mean) if mean != 0 else math.inf
        return {"massive_value": value, "massive_feature": f, "massive_position": int(self.abs_max_pos[f]),
                "massive_ratio": value / median if median > 0 else math.nan, "massive_first_token_cv": cv}

    def complement(self, name: str) -> "LayerAccumulator":
        """The statistics of every row seen except those marked ``exclude[name]``, as a finished accumulator on the
        same device without reservoir (so its TwoNN, sampled-pair cosine, standardised cosine and massive ratio are
        NaN): sums are the whole stream's minus the excluded rows'; ``batch_svd`` is each complete SVD batch without
        its excluded rows. Raises KeyError for a name not given as a complement."""
        return self._complements[name].accumulator()

    def excluded_count(self, name: str) -> int:
        """Rows marked ``exclude[name]`` so far."""
        return int(self._complements[name].count)

    # -- persistence -----------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """The accumulated state as named host arrays (for the cache)."""
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
          | (dict(zip(("input_unit_sum", "input_vector_sum", "input_count"), self.input_sums()),
                  input_groups=np.array([self._inputs.groups, self._inputs.seed, self._inputs.placed,
                                         self._inputs.n_inputs], np.int64))
             if self.per_input else {})

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], device: "torch.device | str" = "cpu") -> "LayerAccumulator":
        """Rebuild an accumulator on ``device`` from :meth:`state` (a finished one: its SVD buffer is not kept) or
        from :meth:`transfer_state` (with its partial SVD batch)."""
        dim, k, b, seed, second = (int(v) for v in state["settings"])
        per_input = "input_count" in state
        # (groups, seed, rows appended, inputs); an entry from before the groups: one row per input
        rows = state["input_count"].shape[0] if per_input else 0
        groups, group_seed, placed, n_inputs = (int(v) for v in state["input_groups"]) if "input_groups" in state \
            else (max(INPUT_GROUPS, rows), 0, rows, rows)
        acc = cls(dim, k, b, seed, bool(second), per_input=per_input, device=device, input_groups=groups,
                  group_seed=group_seed)
        count, n_zero, acc._svd_fill = (int(v) for v in state["count"])
        acc.count = count
        t = lambda name, dtype=None: torch.as_tensor(np.ascontiguousarray(state[name]),  # noqa: E731
                                                     device=acc.device).to(dtype or acc.dtype)
        acc._n_zero = torch.tensor(n_zero, dtype=torch.int64, device=acc.device)
        if acc.per_input:
            acc._inputs.append(t("input_unit_sum", torch.float32), t("input_vector_sum", torch.float32),
                               t("input_count", torch.int64))
            acc._inputs.placed, acc._inputs.n_inputs = placed, n_inputs
        for name in ("unit_sum", "vector_sum", "unit_sq_sum", "sq_sum", "abs_max", "first_sum", "first_sq_sum"):
            setattr(acc, f"_{name}", t(name))
        acc._norm_sum = t("norm_sum")[0]
        acc._batch_svd = [v for v in t("batch_svd")]
        acc._abs_max_pos = t("abs_max_pos", torch.int64)
        acc._n_first = torch.tensor(int(state["n_first"][0]), dtype=torch.int64, device=acc.device)
        if acc.second_order:
            res = t("reservoir", torch.float32)
            acc._reservoir[: res.shape[0]] = res
            partial = state.get("svd_buffer")
            if partial is not None:
                acc._svd_buffer = acc._svd_buffer.to(torch.float64 if partial.dtype == np.float64 else torch.float32)
                acc._svd_buffer[: partial.shape[0]] = torch.as_tensor(partial, device=acc.device)
                acc._gram_done = t("gram_done")
            else:  # a finished accumulator (the cache): its partial batch is inside Σxxᵀ and not kept apart
                acc._partial_lost = acc._svd_fill > 0
                acc._svd_fill = 0
                acc._gram_done = t("gram")
        return acc


def _host_property(name: str, doc: str) -> property:
    def get(self: LayerAccumulator) -> np.ndarray:
        return self._cached(name, lambda: _host(getattr(self, f"_{name}")).copy())
    return property(get, doc=doc)


for _name, _doc in (("unit_sum", "Σ u_i over the non-zero vectors, (d,) float64 on the host."),
                    ("vector_sum", "Σ x_i, (d,) float64 on the host."),
                    ("unit_sq_sum", "Σ u_i∘u_i, (d,) float64 on the host."),
                    ("sq_sum", "Σ x_i∘x_i, (d,) float64 on the host."),
                    ("abs_max", "Per feature, max |x|, (d,) float64 on the host."),
                    ("abs_max_pos", "Per feature, the sequence position where max |x| was seen (-1 unknown), (d,)."),
                    ("first_sum", "Σ x over the first token of each sequence, (d,)."),
                    ("first_sq_sum", "Σ x∘x over the first token of each sequence, (d,).")):
    setattr(LayerAccumulator, _name, _host_property(_name, _doc))


class _Complement:
    """The sums of the rows a :class:`LayerAccumulator` was told to leave out under one name, on its device; with the
    whole stream's sums they give the statistics without those rows (:meth:`LayerAccumulator.complement`)."""

    def __init__(self, main: LayerAccumulator):
        self.main = main
        d, zeros = main.dim, main._zeros
        # (rows left out, of them of norm 0, of them first tokens)
        self.counts = torch.zeros(3, dtype=torch.int64, device=main.device)
        # The rows of ``x_sums``: Σ u, Σ x, Σ x over first tokens; of ``sq_sums``: Σ x∘x, Σ u∘u, Σ x∘x over first
        # tokens.
        self.x_sums, self.sq_sums = zeros(3, d), zeros(3, d)
        self.norm_sum = zeros()
        # Largest |x| per feature over the rows kept (a maximum does not subtract) and its position.
        self.abs_max = zeros(d)
        self.abs_max_pos = torch.full((d,), -1, dtype=torch.int64, device=main.device)
        self.marked = torch.zeros(main.svd_batch_size if main.second_order else 0, dtype=torch.bool,
                                  device=main.device)
        self.gram_done = zeros(d, d) if main.second_order else None
        self.batch_svd: list[torch.Tensor] = []

    def update(self, mask, s_x, s_sq, norms, top, rows, pos, first) -> None:
        """Add this batch's left-out rows ``mask`` (m,) bool, given the batch's weighted sums over them
        (``s_x`` (3, d): Σ u, Σ x, Σ x over first tokens; ``s_sq`` (3, d): Σ x∘x, Σ u∘u, Σ x∘x over first tokens),
        the rows' norms (m,), and the largest |x| per feature over the rows kept ``top`` (d,) at rows ``rows`` (d,)
        (:func:`_kept_maxima`)."""
        zero = norms == 0
        marks = torch.stack([mask, mask & zero, mask & first if first is not None else torch.zeros_like(mask)])
        self.counts += marks.sum(1)
        self.x_sums += s_x
        self.sq_sums += s_sq
        self.norm_sum += mask.to(self.main.dtype) @ norms
        self.abs_max, self.abs_max_pos = _running_max(self.abs_max, self.abs_max_pos, top, rows, pos)

    @property
    def count(self) -> torch.Tensor:
        """Rows left out so far (0-d int64 on the device)."""
        return self.counts[0]

    def close_batch(self, moments: "BatchProducts", marked: "_Marked", anisotropy: torch.Tensor) -> None:
        """The SVD batch is complete: its ``anisotropy`` without the marked rows (:meth:`BatchProducts.anisotropies`),
        and the marked rows' share of Σxxᵀ, from the batch's centred products and the marked rows alone."""
        if marked.n:
            self.gram_done += moments.uncentred(marked.scatter, marked.y_sum, marked.n)
        self.batch_svd.append(anisotropy)

    def gram(self) -> torch.Tensor:
        fill = self.main._svd_fill
        if fill == 0:
            return self.gram_done
        out = self.main._svd_buffer[:fill][self.marked[:fill]].to(self.main.dtype)
        return torch.addmm(self.gram_done, out.T, out)

    def accumulator(self) -> LayerAccumulator:
        main = self.main
        acc = LayerAccumulator(main.dim, 0, main.svd_batch_size, main.seed, main.second_order, device=main.device)
        count, n_zero, n_first = self.counts.unbind()
        acc.count = main.count - int(count)
        acc._n_zero = main._n_zero - n_zero
        for names, sums in ((("unit_sum", "vector_sum", "first_sum"), self.x_sums),
                            (("sq_sum", "unit_sq_sum", "first_sq_sum"), self.sq_sums)):
            for name, sub in zip(names, sums):
                setattr(acc, f"_{name}", getattr(main, f"_{name}") - sub)
        acc._norm_sum = main._norm_sum - self.norm_sum
        acc._abs_max, acc._abs_max_pos = self.abs_max.clone(), self.abs_max_pos.clone()
        acc._n_first = main._n_first - n_first
        if main.second_order:
            acc._gram_done = main.gram_tensor() - self.gram()
            acc._batch_svd = list(self.batch_svd)
        acc._partial_lost = main._svd_fill > 0
        return acc


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

    def __init__(self, dim: int, n_batches: int, batch_size: int, seed: int = 0, device: "torch.device | str" = "cpu"):
        if dim < 1 or n_batches < 1 or batch_size < 3:
            raise ValueError(f"need dim >= 1, n_batches >= 1 and batch_size >= 3, got {dim}, {n_batches}, {batch_size}")
        self.bins = torch.empty((n_batches, batch_size, dim), dtype=torch.float32, device=device)
        self.seen = np.zeros(n_batches, np.int64)
        # One stream for the bin of each vector, one per bin for its reservoir: one draw per vector in each, so the
        # batches do not depend on how the stream is split into updates.
        self._assign = np.random.Generator(np.random.PCG64(seed))
        self._draws = [np.random.Generator(np.random.PCG64([seed, b])) for b in range(n_batches)]

    def update(self, x) -> None:
        """Add vectors, shape (m, d): a torch tensor (moved to the bins' device if elsewhere) or a numpy array."""
        x = (x if isinstance(x, torch.Tensor) else torch.from_numpy(np.asarray(x))).to(self.bins.device)
        n_bins = self.bins.shape[0]
        which = np.minimum((self._assign.random(x.shape[0]) * n_bins).astype(np.int64), n_bins - 1)
        for b in range(n_bins):
            rows = np.flatnonzero(which == b)
            if rows.size:
                _reservoir_update(self.bins[b], int(self.seen[b]), x[torch.from_numpy(rows).to(x.device)],
                                  self._draws[b])
                self.seen[b] += rows.size

    def batches(self) -> list[np.ndarray]:
        """The full batches (bins that received at least ``batch_size`` vectors), on the host."""
        return [_host(self.bins[b]) for b in range(len(self.bins)) if self.seen[b] >= self.bins.shape[1]]

    def twonn(self) -> tuple[float, float, int]:
        """TwoNN dimension per full batch: (mean, std, number of batches); NaNs with 0 if no batch is full."""
        values = [metrics.twonn_dimension(b) for b in self.batches()]
        if not values:
            return math.nan, math.nan, 0
        return float(np.mean(values)), float(np.std(values)), len(values)
