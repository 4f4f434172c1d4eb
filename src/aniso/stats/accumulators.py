"""Streamed per-layer statistics of hidden states (their on-disk cache is :mod:`aniso.stats.cache`).

A :class:`LayerAccumulator` sees the vectors of one layer batch by batch and
keeps only fixed-size state (O(d²) plus a fixed reservoir and one SVD batch
buffer), so peak memory does not grow with the number of tokens processed.
Its :meth:`LayerAccumulator.summary` gives the per-layer metrics the claims read.
"""

from __future__ import annotations

import functools
import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import metrics
from ..common.devices import accumulation_dtype
from ..extract.hidden import first_token_attention_sums
from .results import LayerSummary

log = logging.getLogger(__name__)


def _host(t: torch.Tensor) -> np.ndarray:
    """One explicit device-to-host copy of a summary tensor (O(d) or O(d²), never per token)."""
    return t.detach().to("cpu").numpy()


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


#: Rows the per-input sums of one layer take at most (:class:`InputGroups`): exactly one per input up to this many
#: inputs (every input set of the ``quick`` and ``study`` profiles: 256 paragraphs, 32 recordings, 192 photographs),
#: random groups of inputs beyond (the ``paper`` profile's paragraphs). 256 rows of 2·d float32: 8 MiB per layer at d = 4,096.
INPUT_GROUPS = 256


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (Steele, Lea & Flood 2014) on uint64 ``z``, wrapping: a counter-based hash."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def input_group(index, groups: int, seed: int = 0) -> np.ndarray:
    """The group of input number ``index`` (array of ints >= 0, in the order the inputs were seen) among ``groups``:
    the input itself (``index``) below ``groups``, so the first ``groups`` inputs are one group each; beyond, a
    uniform pseudo-random group, SplitMix64 of (``seed``, ``index``) modulo ``groups``: independent of the input's
    content, of the other inputs and of how the stream was split into updates. Returns int64 of ``index``'s shape."""
    index = np.asarray(index, dtype=np.int64)
    hashed = _splitmix64(_splitmix64(index.astype(np.uint64)) ^ np.uint64(seed % 2**64))
    return np.where(index < groups, index, (hashed % np.uint64(groups)).astype(np.int64))


class InputGroups:
    """Per-input sums of one layer in a fixed budget of ``groups`` rows: Σ u (rows, d), Σ x (rows, d) float32 and
    (vectors, non-zero vectors) (rows, 2) int64, on ``device``.

    The i-th input seen goes to row :func:`input_group` (i): its own row for the first ``groups`` inputs, so up to
    ``groups`` inputs the rows are the inputs' own sums, in order, as a per-input bootstrap reads them; past them, a
    uniformly random row (seeded, the same for every layer), so each row is the sum of a random group of inputs.
    Rows are allocated as they fill (doubling, at least 16), up to ``groups``: memory is
    O(min(inputs, groups) · d), whatever the number of inputs. :meth:`append` takes rows that stand for more than one
    input (another shard's groups, in a merge): each is then placed as one input.

    What a bootstrap over the groups estimates is the random-group method of variance estimation (Mahalanobis 1946;
    Wolter 2007, *Introduction to Variance Estimation*, 2nd ed., ch. 2): inputs assigned to groups at random,
    independently of their content, make the groups' sums independent units of the same estimator, so resampling
    the groups (the cluster bootstrap, Davison & Hinkley 1997 §3.8) estimates its sampling distribution with
    ``groups`` units instead of one per input (:func:`aniso.stats.uncertainty.bootstrap_stats`).
    """

    def __init__(self, dim: int, device: torch.device, groups: int = INPUT_GROUPS, seed: int = 0):
        self.dim, self.device, self.groups, self.seed = dim, device, int(groups), int(seed)
        self.unit = torch.zeros(0, dim, device=device)
        self.vector = torch.zeros(0, dim, device=device)
        self.counts = torch.zeros(0, 2, dtype=torch.int64, device=device)
        self.placed = 0  # rows appended so far (inputs, or another shard's groups)
        self.n_inputs = 0  # inputs they stand for

    @property
    def rows(self) -> int:
        """Rows in use: min(rows appended, groups)."""
        return min(self.placed, self.groups)

    def _reserve(self, rows: int) -> None:
        if rows <= self.unit.shape[0]:
            return
        cap = min(self.groups, max(16, 2 * rows))
        for name in ("unit", "vector", "counts"):
            old = getattr(self, name)
            new = old.new_zeros((cap, *old.shape[1:]))
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def append(self, unit: torch.Tensor, vector: torch.Tensor, counts: torch.Tensor, n_inputs: int | None = None) -> None:
        """Add k rows (``unit``, ``vector`` (k, d), any float dtype, rounded to float32; ``counts`` (k, 2) int64),
        standing for ``n_inputs`` inputs (default k), to their groups."""
        k = unit.shape[0]
        if k == 0:
            return
        start = self.placed
        self._reserve(min(start + k, self.groups))
        parts = zip((self.unit, self.vector, self.counts), (unit, vector, counts))
        if start + k <= self.groups:  # one row each, in order: the inputs' own sums
            for into, part in parts:
                into[start : start + k] += part.to(into.dtype)
        else:
            index = torch.from_numpy(input_group(np.arange(start, start + k), self.groups, self.seed)).to(self.device)
            for into, part in parts:
                into.index_add_(0, index, part.to(into.dtype))
        self.placed += k
        self.n_inputs += k if n_inputs is None else int(n_inputs)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The rows in use, (rows, d), (rows, d), (rows, 2): views, in input order up to ``groups`` inputs."""
        r = self.rows
        return self.unit[:r], self.vector[:r], self.counts[:r]


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


def _kept_maxima(ax: torch.Tensor, top: torch.Tensor, rows: torch.Tensor, masks: list[torch.Tensor],
                 wait_free: bool | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per mask of ``masks`` (each (m,) bool: the rows a complement leaves out), the largest |x| per feature over the
    rows it keeps (d,) and the first row reaching it (d,); -1 at row 0 where the mask marks every row.

    ``ax`` (m, d) is |x| of the batch, ``top`` and ``rows`` its per-feature maximum and the first row reaching it
    (``ax.max(0)``). Where no mask marks a row holding a maximum, that maximum is every mask's. Otherwise one
    reduction over the rows that no mask marks (``ax`` is overwritten: -1 on the marked rows), then, per mask, the
    marked rows it keeps (a few) against it, a tie going to the earlier row. That reads which rows are marked back to
    the host; with ``wait_free`` (default: off the CPU, where such a read waits for the device) each mask's maximum
    is one masked reduction over the batch instead (more passes over the batch, no wait; the same values and rows).
    """
    if not masks:
        return []
    if wait_free is None:
        wait_free = ax.device.type != "cpu"
    if wait_free:  # one masked reduction per mask, nothing read back to the host
        return [ax.masked_fill(m[:, None], -1.0).max(0) for m in masks]
    marked = functools.reduce(torch.logical_or, masks)
    if not bool(marked[rows].any()):
        return [(top, rows)] * len(masks)
    idx = marked.nonzero().squeeze(1)  # the rows some mask marks (a few)
    marked_rows = ax[idx]
    free_top, free_rows = ax.index_fill_(0, idx, -1.0).max(0)
    out = []
    for m in masks:
        keep = ~m[idx]
        t, r = free_top, free_rows
        if bool(keep.any()):
            other_top, at = marked_rows[keep].max(0)
            other_rows = idx[keep][at]
            better = (other_top > t) | ((other_top == t) & (other_rows < r))
            t, r = torch.where(better, other_top, t), torch.where(better, other_rows, r)
        out.append((t, r))
    return out


def _running_max(abs_max: torch.Tensor, abs_max_pos: torch.Tensor, top: torch.Tensor, rows: torch.Tensor,
                 pos: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per feature, the running max |x| (d,) and its sequence position (d,) after a batch whose max is ``top`` (d,)
    at rows ``rows`` (d,); ``pos`` (m,) the rows' positions, None: unknown (-1). A tie keeps the earlier batch."""
    top = top.to(abs_max.dtype)
    better = top > abs_max
    return torch.where(better, top, abs_max), torch.where(better, -1 if pos is None else pos[rows], abs_max_pos)


#: Up to this many inputs in one update, the per-input sums are one-hot rows of the update's GEMM (k·m weights);
#: beyond it, a segment sum (``index_add_``), so a caller passing many inputs at once never builds a k × m matrix.
_ONE_HOT_INPUTS = 64


def batch_svd_anisotropy(batch: torch.Tensor, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """SVD anisotropy of one batch and its Gram matrix, on the batch's device.

    ``batch`` (b, d) -> (σ₁² / Σσᵢ² of the centred rows as a 0-d tensor, Σxxᵀ (d, d) in ``dtype``): λ_max / trace of
    the centred scatter (Razzhigaev et al. 2024 §2.3; equal to :func:`aniso.metrics.svd_anisotropy`), as
    :meth:`BatchProducts.anisotropies` gives it. NaN when every row is identical (no direction of variance, as the
    SVD gives).
    """
    moments = centred_batch_products(batch.clone(), [], dtype)
    return moments.anisotropies()[0], moments.gram


@dataclass
class _Marked:
    """The ``n`` rows of an SVD batch that one complement leaves out (``mask`` (b,) bool), with y = x − c (from
    exact copies of the rows, taken before the batch is centred, in the accumulation dtype): Σy (d,), Σyyᵀ (d, d)."""

    mask: torch.Tensor
    n: int
    y_sum: torch.Tensor
    scatter: torch.Tensor


@dataclass
class BatchProducts:
    """Second-order moments of one SVD batch of ``n`` rows about a centre ``c`` (d,): ``y_sum`` = Σ(x − c) (d,),
    ``products`` = Σ(x − c)(x − c)ᵀ (d, d), ``gram`` = Σxxᵀ (d, d), all in the accumulation dtype; ``marked``: one
    :class:`_Marked` per complement; ``work``: the dtype the products were formed in; ``rows``: the centred rows
    (b, d), in that dtype (the batch's buffer, centred in place); ``marked_index`` (r,) and ``marked_rows`` (r, d):
    the rows some complement marks and their centred values in the accumulation dtype (not rounded to ``work``:
    those rows can lie far from the centre), or None."""

    n: int
    centre: torch.Tensor
    y_sum: torch.Tensor
    products: torch.Tensor
    gram: torch.Tensor
    marked: list
    work: torch.dtype
    rows: torch.Tensor
    marked_index: torch.Tensor | None = None
    marked_rows: torch.Tensor | None = None

    def uncentred(self, products: torch.Tensor, y_sum: torch.Tensor, n: int) -> torch.Tensor:
        """Σxxᵀ of n rows from their products about the centre c: Σ(x − c)(x − c)ᵀ + c·Σ(x − c)ᵀ + Σ(x − c)·cᵀ +
        n·c cᵀ (``y_sum`` = Σ(x − c)), in two rank-one updates."""
        half = y_sum + (n / 2) * self.centre
        return torch.addr(torch.addr(products, self.centre, half), half, self.centre)

    def scatter(self, without: _Marked | None = None) -> torch.Tensor:
        """The centred scatter Σ(x − x̄)(x − x̄)ᵀ of the batch, or of the batch without the rows ``without``:
        Σ(x − c)(x − c)ᵀ − n (x̄ − c)(x̄ − c)ᵀ over the rows kept (a product about any centre, corrected to the
        mean)."""
        products, y_sum, n = self.products, self.y_sum, self.n
        if without is not None:
            products, y_sum, n = products - without.scatter, y_sum - without.y_sum, n - without.n
        c = torch.addr(products, y_sum, y_sum, alpha=-1.0 / max(n, 1))
        return (c + c.T) / 2

    def anisotropies(self) -> list[torch.Tensor]:
        """λ_max / trace of the centred scatter of the batch, then of the batch without each complement's rows
        (:attr:`marked`), as 0-d tensors: the SVD anisotropy of each set of rows, to float64 rounding.

        The float32 products only *find* the top direction v of each set (:func:`aniso.metrics.largest_eigenpair`
        of its scatter, or of the b × b Gram matrix of the centred rows where the batch is wider than it is long).
        The value is then computed in float64 from the rows themselves, in one pass over the batch for every set:
        the Rayleigh quotient vᵀCv = Σ(y·v)² − (Σy·v)²/n and the trace Σ‖y‖² − ‖Σy‖²/n over the set's rows y (the
        centred rows as the buffer holds them). A Rayleigh quotient is at most λ_max and falls short of it by at
        most (λ_max − λ_min)·sin²θ, θ the angle between v and the top eigenvector, itself at most ‖E‖/(λ₁ − λ₂)
        for a perturbation E of the scatter (Davis–Kahan): the float32 products' error enters squared (about 10⁻¹⁴
        with the bound of :func:`centred_batch_products`, unless the two top eigenvalues are within about 10⁻⁶ of
        each other, where λ_max itself barely moves when v does). What remains is the rows' own float32 rounding
        (x − c rounded once, relative 2⁻²⁴ per entry and unbiased): the values agree with the float64 SVD of the
        rows to about 10⁻⁹ (``tests/stats/test_float32_products.py``).

        The rows a complement marks (a few per batch, possibly far from the centre: massive activations, or every
        row of a batch whose rows are all marked) enter in their exact centred values (:attr:`marked_rows`), not as
        the buffer rounded them.

        NaN for fewer than two rows, and where the trace is not above what rounding the rows could leave,
        b·u·Σ‖y‖² (u the unit roundoff of the rows' dtype; of the accumulation dtype for the marked rows): no
        direction of variance (identical rows are centred exactly to 0).
        """
        sets = [None, *(m if m.n else None for m in self.marked)]  # a complement that leaves out no row: the batch
        vectors = []
        for i, without in enumerate(sets):
            if i > 0 and without is None:
                vectors.append(vectors[0])
            elif i == 0 and self.n < self.rows.shape[1]:  # wide batch: the b × b Gram matrix is the smaller one
                r = self.rows.to(self.products.dtype)
                r = r - r.mean(0)
                small = r @ r.T
                u = metrics.largest_eigenpair((small + small.T) / 2)[1]
                v = r.T @ u
                vectors.append(v / torch.linalg.vector_norm(v).clamp_min(torch.finfo(v.dtype).tiny))
            else:
                vectors.append(metrics.largest_eigenpair(torch.nan_to_num(self.scatter(without)))[1])
        v = torch.stack(vectors, 1)  # (d, sets)
        dtype = self.products.dtype
        proj = torch.empty((self.n, v.shape[1]), dtype=dtype, device=v.device)
        norms = torch.empty(self.n, dtype=dtype, device=v.device)
        total = torch.zeros(v.shape[0], dtype=dtype, device=v.device)
        for s in range(0, self.n, _ROWS_PER_PASS):  # float64 blocks of the float32 rows: no float64 copy of the batch
            y = self.rows[s : s + _ROWS_PER_PASS].to(dtype)
            proj[s : s + _ROWS_PER_PASS] = y @ v
            norms[s : s + _ROWS_PER_PASS] = torch.linalg.vecdot(y, y)
            total += y.sum(0)
        marked_sum = None
        if self.marked_index is not None:  # the marked rows from their exact centred values
            y, at = self.marked_rows.to(dtype), self.marked_index
            total += y.sum(0) - self.rows[at].to(dtype).sum(0)
            proj[at], norms[at] = y @ v, torch.linalg.vecdot(y, y)
            marked_sum = lambda mask: y[mask[at]].sum(0)  # noqa: E731  (a set's left-out rows are marked rows)
        # What rounding the rows could leave of the trace: b·u·‖y‖² per row, u the unit roundoff of the dtype it was
        # rounded to (the rows' own; the accumulation dtype's for the marked rows, which are kept exact).
        eps = torch.finfo(self.work).eps / 2
        noise = norms * eps
        if self.marked_index is not None:
            noise[self.marked_index] *= torch.finfo(dtype).eps / 2 / eps
        out = []
        for i, without in enumerate(sets):
            if i > 0 and without is None:  # leaves out no row: the batch's own value
                out.append(out[0])
                continue
            keep = None if without is None else ~without.mask
            n = self.n if keep is None else int(keep.sum())
            if n < 2:
                out.append(torch.tensor(math.nan, dtype=dtype, device=v.device))
                continue
            w = proj[:, i] if keep is None else proj[keep, i]
            sq = norms.sum() if keep is None else norms[keep].sum()
            floor = self.n * (noise.sum() if keep is None else noise[keep].sum())
            y_sum = total if keep is None else total - marked_sum(without.mask)
            quotient = (w * w).sum() - w.sum() ** 2 / n
            trace = sq - (y_sum @ y_sum) / n
            out.append(torch.where(trace > floor, (quotient / trace).clamp(0.0, 1.0), torch.nan))
        return out


#: Rows of an SVD batch per float32 product of :func:`centred_batch_products` (the blocks' products are summed in
#: float64: the rounding of a product's sums grows with its length).
_PRODUCT_ROWS = 1024

#: Rows of an SVD batch per float64 block of :meth:`BatchProducts.anisotropies` (bounds its transient memory).
_ROWS_PER_PASS = 1024


def centred_batch_products(batch: torch.Tensor, marks: list[torch.Tensor], dtype: torch.dtype) -> BatchProducts:
    """One SVD batch's second-order products, in float32 where the batch is float32, merged into ``dtype``.

    ``batch`` (b, d), float32 or float64, is centred **in place** at c = the mean of the rows that no mask of
    ``marks`` (each (b,) bool: the rows a complement leaves out) marks (all rows' mean when every row is marked):
    c is rounded to the batch's dtype, so x − c is exact up to one rounding of the result. Those rows' products
    Σ(x − c)(x − c)ᵀ come from products in the batch's dtype (:func:`_add_upper_gram`) over blocks of 1,024 rows
    (float32: TF32 and reduced-precision products off on GPUs), summed in ``dtype`` (float64 on CPU and CUDA); the
    marked rows' (a few per batch: first tokens, massive-activation rows) are computed apart in ``dtype`` from exact
    copies of their rows (:func:`_marked_products`), and added. Then, in ``dtype``:
    Σxxᵀ = Σ(x − c)(x − c)ᵀ + c·Σ(x − c)ᵀ + Σ(x − c)·cᵀ + b·c cᵀ (exact algebra), and the centred scatter of the
    batch, or of the batch without one complement's rows, is the product about c corrected to the mean
    (:meth:`BatchProducts.scatter`).

    **Error bound.** With u = 2⁻²⁴ and Y the centred unmarked rows, the float32 product obeys, entry by entry,
    |Δ(YᵀY)| ≤ (γ_b + 2u + u²)·|Y|ᵀ|Y|, γ_b = b·u / (1 − b·u), b = 1,024 the rows of a block (the rounding of
    x − c, then any summation order of a length-b dot product; the float64 sum of the blocks adds nothing at this
    scale; Higham, *Accuracy and Stability of Numerical Algorithms*, §3.5). So the trace of the
    scatter is off by at most that factor of tr(YᵀY), and λ_max by at most that factor of tr(YᵀY) (‖ΔS‖₂ ≤
    ‖ΔS‖_F ≤ ‖|Y|ᵀ|Y|‖_F·… ≤ tr(YᵀY)). Centring is what keeps tr(YᵀY) the batch's own variance rather than its
    squared mean: a float32 Gram matrix of uncentred rows would carry errors of u·‖x̄‖² per entry, and a massive
    activation (10³–10⁴ times the other features) would swamp the variances. The worst case (γ_b ≈ 6·10⁻⁵) is far
    from what rounding does: the errors of a long dot product behave like a random walk, √b·u ≈ 2·10⁻⁶ of
    |Y|ᵀ|Y| per entry with high probability (Higham & Mary 2019, SIAM J. Sci. Comput. 41(5)), and the statistics
    read from the whole set's scatter (λ_max / trace, trace and Frobenius norm) average many entries: they agree
    with the float64 computation to about 10⁻⁸ on MiniLM's and SmolLM2's hidden states, and to at most 2·10⁻⁷ on
    synthetic rows whose feature scales span three decades, with an offset mean and massive activations (4·10⁻⁷
    with one block of 4,096 rows, hence the blocks); ``tests/stats/test_float32_products.py`` holds them within
    10⁻⁶ relative (Hypothesis). Each batch's own anisotropy is computed further, in float64
    (:meth:`BatchProducts.anisotropies`). A float64 batch takes the same path in float64.
    """
    n, d = batch.shape
    work = batch.dtype
    total = torch.zeros(d, dtype=dtype, device=batch.device)
    for s in range(0, n, _PRODUCT_ROWS):  # in blocks: a sum with a dtype converts its whole input first
        total += batch[s : s + _PRODUCT_ROWS].sum(0, dtype=dtype)
    marks = [m.to(device=batch.device, dtype=torch.bool) for m in marks]
    any_mark = functools.reduce(torch.logical_or, marks) if marks else None
    rows = any_mark.nonzero().squeeze(1) if any_mark is not None else None  # the rows some mask marks (a few)
    if rows is not None and rows.numel():
        x_any = batch[rows].to(dtype)
        n_free = n - rows.numel()
        centre = ((total - x_any.sum(0)) / n_free) if n_free else total / n
    else:
        x_any = None
        centre = total / n
    c = centre.to(work)  # a centre the batch's dtype holds exactly: x − c is then exact up to one rounding
    cc = c.to(dtype)
    y_any = None if x_any is None else x_any - cc
    if y_any is not None:
        products_any, marked = _marked_products(y_any, rows, marks)
    else:
        marked = [_Marked(m, 0, torch.zeros(d, dtype=dtype, device=batch.device),
                          torch.zeros((d, d), dtype=dtype, device=batch.device)) for m in marks]
    batch.sub_(c)
    if x_any is not None:
        batch[rows] = 0  # the marked rows' products are taken apart, in ``dtype``
    products = torch.zeros((d, d), dtype=dtype, device=batch.device)
    with _ieee_float32(batch.device):
        for s in range(0, n, _PRODUCT_ROWS):  # float32 products over blocks of rows, summed in ``dtype``
            _add_upper_gram(products, batch[s : s + _PRODUCT_ROWS])
    products = torch.triu(products) + torch.triu(products, 1).mT
    if x_any is not None:
        products += products_any
        batch[rows] = y_any.to(work)
    moments = BatchProducts(n, cc, total - n * cc, products, None, marked, work, batch,
                            None if y_any is None else rows, y_any)
    moments.gram = moments.uncentred(products, moments.y_sum, n)
    return moments


def _marked_products(y: torch.Tensor, rows: torch.Tensor, masks: list[torch.Tensor]) -> tuple[torch.Tensor, list]:
    """The products of the marked rows ``y`` (r, d) (every row some mask marks, centred, in the accumulation dtype;
    ``rows`` (r,): their indices in the batch): Σyyᵀ over all of them, and one :class:`_Marked` per mask of ``masks``
    (each (b,) bool). The rows are split by the set of masks that mark them (first tokens that also carry a massive
    activation, and so on) and each part's Σyyᵀ is formed once: one product over the r rows in all, whatever the
    number of masks."""
    in_mask = torch.stack([m[rows] for m in masks])  # (k, r)
    code = (in_mask.to(torch.int64) << torch.arange(len(masks), device=y.device)[:, None]).sum(0)
    parts = {int(v): y[code == v] for v in torch.unique(code).tolist()}
    part_products = {v: part.mT @ part for v, part in parts.items()}
    y_sums = in_mask.to(y.dtype) @ y  # (k, d)
    counts = in_mask.sum(1).tolist()
    marked = []
    for j, mask in enumerate(masks):
        mine = [p for v, p in part_products.items() if v >> j & 1]
        scatter = functools.reduce(torch.add, mine) if mine else y.new_zeros((y.shape[1], y.shape[1]))
        marked.append(_Marked(mask, int(counts[j]), y_sums[j], scatter))
    return functools.reduce(torch.add, part_products.values()), marked


def _add_upper_gram(products: torch.Tensor, rows: torch.Tensor) -> None:
    """Add rowsᵀ rows to the upper triangle (diagonal included) of ``products`` (d, d), in place, for ``rows`` (b, d)
    on its device: the product is formed in the rows' dtype and added in ``products``'. The columns are cut into
    :data:`_GRAM_COLUMN_BLOCKS` blocks and each block is multiplied by itself and the blocks after it only (one GEMM
    per block): 10 of the 16 block products. An SVD batch of 4,096 float32 rows, in blocks of 1,024, on 2 CPU cores:
    10.0 ms against 13.4 ms for whole GEMMs at d = 576, 4.8 ms against 6.2 ms at d = 384. The entries below the
    diagonal are left partly filled; read the upper triangle.
    Each entry is still one dot product of length b in the rows' dtype, so :func:`centred_batch_products`'s error
    bound holds as stated."""
    d = rows.shape[1]
    edges = [round(i * d / _GRAM_COLUMN_BLOCKS) for i in range(_GRAM_COLUMN_BLOCKS + 1)]
    for start, end in zip(edges[:-1], edges[1:]):
        if end > start:
            products[start:end, start:] += rows[:, start:end].mT @ rows[:, start:]


#: Column blocks of :func:`_add_upper_gram` (the share of a whole GEMM's products it forms: (k + 1) / 2k).
_GRAM_COLUMN_BLOCKS = 4


@contextmanager
def _ieee_float32(device: torch.device):
    """float32 matrix products in IEEE float32 on a GPU (no TF32 or reduced-precision passes) while inside."""
    if device.type != "cuda":
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def massive_rows(h: torch.Tensor, magnitude: float = 100.0, ratio: float = 1000.0) -> torch.Tensor:
    """Which rows of one layer's batch ``h`` (m, d) carry a massive activation (Sun et al. 2024, §2: an activation
    of magnitude above ``magnitude`` (100) and about ``ratio`` (1,000) times the median magnitude of the hidden state,
    here the median |x| over the batch's rows and features, estimated from at most 65,536 of its entries taken at an
    even stride). Returns (m,) bool on ``h``'s device. A batch with no activation above ``magnitude`` has no such
    row whatever its median: on the CPU the median is then not computed; elsewhere it always is, so that the
    criterion never waits for the device (the rows are the same either way, the threshold being at least
    ``magnitude``)."""
    a = h.abs()
    top = a.amax(1).float()
    if a.device.type == "cpu" and not bool((top > magnitude).any()):  # reading it costs no wait on the CPU
        return torch.zeros(top.shape, dtype=torch.bool, device=top.device)
    flat = a.reshape(-1)
    median = flat[:: max(1, flat.numel() // 65_536)].float().median()
    threshold = torch.clamp(median * ratio, min=magnitude)
    return top > threshold


def _reservoir_update(reservoir, count: int, x, rng: np.random.Generator) -> None:
    """Vitter's algorithm R over the rows of ``x`` in place: ``reservoir`` (k, d) holds a uniform sample of the
    ``count`` rows seen before. One uniform draw per row past the fill (on the host, O(m) numbers), so the sample
    does not depend on how the stream is split into updates; the rows themselves are copied where they are (a numpy
    reservoir with numpy rows, or a torch reservoir on the rows' device)."""
    k = reservoir.shape[0]
    m = x.shape[0]
    seen = count + np.arange(m)  # items seen before each new one
    fill = seen < k
    torch_rows = isinstance(reservoir, torch.Tensor)
    index = (lambda a: torch.from_numpy(a).to(reservoir.device)) if torch_rows else (lambda a: a)  # noqa: E731
    if fill.any():
        reservoir[index(seen[fill])] = x[index(np.flatnonzero(fill))].to(reservoir.dtype) if torch_rows \
            else x[fill]
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
        if last.size:
            rows = x[index(items[last])]
            reservoir[index(slots[last])] = rows.to(reservoir.dtype) if torch_rows else rows


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


def first_token_attention(probs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per head, the attention paid to each sequence's first real token, summed over the real query rows:
    ``probs`` (b, H, t, t), ``mask`` (b, t) bool; returns (H,) in :func:`accumulation_dtype`, on ``probs``' device
    (Gu et al. 2025, §3)."""
    return first_token_attention_sums(probs, mask)[0]


class AttentionSink:
    """Streamed mean attention paid to the first real token of each sequence, per attention layer and head.

    For head h of layer l: α = mean over every real query position t of A[t, first] (Gu et al. 2025, §3, with
    their ε = 0.3 to call a head a sink). Kept two ways: token-weighted (every real query row of the corpus counts
    once, so long sequences weigh more: what the claim reads, as Gu et al. average over the query positions of their
    corpus) and per sequence (the mean of each sequence's own mean). ``heads[l]`` is layer l's number of heads (None:
    learnt from the first map of each layer). Sums stay on the device of the maps until :meth:`result`.
    """

    def __init__(self, heads: list[int] | None = None, n_layers: int | None = None):
        n = len(heads) if heads is not None else int(n_layers or 0)
        self.heads = list(heads) if heads is not None else [None] * n
        self.token_sums: list[torch.Tensor | None] = [None] * n
        self.sequence_sums: list[torch.Tensor | None] = [None] * n
        self.rows = 0
        self.sequences = 0

    def update_layer(self, layer: int, probs: torch.Tensor, mask: torch.Tensor) -> None:
        """Add layer ``layer``'s map of one batch: ``probs`` (b, H, t, t), ``mask`` (b, t) bool. Raises ValueError
        if its head count or shape does not match."""
        expected = self.heads[layer]
        if (expected is not None and probs.shape[1] != expected) or probs.shape[-1] != mask.shape[1]:
            raise ValueError(f"attention shape {tuple(probs.shape)} does not match {expected} heads and mask "
                             f"{tuple(mask.shape)}")
        self.add_sums(layer, *first_token_attention_sums(probs, mask))

    def add_sums(self, layer: int, token_sum: torch.Tensor, sequence_sum: torch.Tensor) -> None:
        """Add layer ``layer``'s sums of one batch, as :func:`first_token_attention_sums` gives them ((H,) each),
        where the map was reduced (the extraction's attention hooks)."""
        if self.heads[layer] is not None and token_sum.shape[0] != self.heads[layer]:
            raise ValueError(f"attention layer {layer}: {token_sum.shape[0]} heads, expected {self.heads[layer]}")
        self.heads[layer] = token_sum.shape[0]
        self.token_sums[layer] = token_sum if self.token_sums[layer] is None else self.token_sums[layer] + token_sum
        self.sequence_sums[layer] = (sequence_sum if self.sequence_sums[layer] is None
                                     else self.sequence_sums[layer] + sequence_sum)

    def add_batch(self, mask: torch.Tensor) -> None:
        """Count one batch's real query rows and sequences (after its layers went through :meth:`update_layer`)."""
        self.rows = mask.sum() + self.rows  # kept on the mask's device until :meth:`result` (no wait per batch)
        self.sequences += int(mask.shape[0])

    def update(self, attentions: list[torch.Tensor], mask: torch.Tensor) -> None:
        """Add one batch: ``attentions[l]`` (b, H_l, t, t) probabilities, ``mask`` (b, t) bool of real tokens.
        Raises ValueError if the layers' head counts or shapes do not match."""
        if len(attentions) != len(self.heads):
            raise ValueError(f"expected {len(self.heads)} attention layers, got {len(attentions)}")
        for layer, a in enumerate(attentions):
            self.update_layer(layer, a, mask)
        self.add_batch(mask)

    def result(self, eps: float = 0.3) -> dict:
        """``per_head``: per layer, each head's token-weighted mean attention on the first token; ``share_per_layer``:
        the share of heads above ``eps``; ``share``: the share over every (layer, head) (what X.attention-sink
        reads); ``per_sequence``: the same three from per-sequence means (``per_head``, ``share_per_layer``,
        ``share``); ``eps``; ``rows``: query rows seen; ``sequences``."""
        def shares(sums, n):
            per_head = [(_host(s) / max(n, 1)).round(6).tolist() if s is not None else [] for s in sums]
            flat = np.concatenate([np.asarray(h) for h in per_head]) if per_head else np.zeros(0)
            return {"per_head": per_head, "share_per_layer": [float(np.mean(np.asarray(h) > eps)) if h else math.nan
                                                             for h in per_head],
                    "share": float(np.mean(flat > eps)) if flat.size else float("nan")}

        rows = int(self.rows)
        out = shares(self.token_sums, rows)
        return out | {"eps": eps, "rows": rows, "sequences": self.sequences,
                      "per_sequence": shares(self.sequence_sums, self.sequences)}
