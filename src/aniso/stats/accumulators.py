"""Streamed per-layer statistics of hidden states (their on-disk cache is :mod:`aniso.stats.cache`).

A :class:`LayerAccumulator` sees the vectors of one layer batch by batch and
keeps only fixed-size state (O(d²) plus a fixed reservoir and one SVD batch
buffer), so peak memory does not grow with the number of tokens processed.
Its :meth:`LayerAccumulator.summary` gives the per-layer metrics the claims read.

The state is held by parts, one per group of statistics, each behind the protocol
:class:`aniso.stats.parts.base.Statistic` (:mod:`aniso.stats.parts`); the accumulator is made from the table
:data:`PARTS`, which also gives the names of its state (:meth:`LayerAccumulator.state`) and what each kept tensor
scales with (:func:`aniso.stats.accounting.kept_tensors`). The parts' public names are re-exported here.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from .. import metrics
from ..common.devices import accumulation_dtype
from .parts.attention import AttentionSink, first_token_attention
from .parts.base import Batch, Layout, Statistic, host as _host, rows_of_one
from .parts.first_order import FirstOrder
# (_ONE_HOT_INPUTS and _kept_maxima are read here by the tests of the engine)
from .parts.inputs import _ONE_HOT_INPUTS, INPUT_GROUPS, InputGroups, PerInput, input_group  # noqa: F401
from .parts.massive import Massive, kept_maxima as _kept_maxima, massive_rows  # noqa: F401
from .parts.reservoir import Reservoir, reservoir_update as _reservoir_update
from .parts.second_order import BatchProducts, SecondOrder, batch_svd_anisotropy, centred_batch_products
from .results import LayerSummary

__all__ = ["LayerAccumulator", "PARTS", "Statistic", "InputGroups", "INPUT_GROUPS", "input_group", "AttentionSink",
           "first_token_attention", "ShuffledBatches", "BatchProducts", "batch_svd_anisotropy",
           "centred_batch_products", "massive_rows", "read_checks"]

#: The parts of a layer's statistics, one row each (:class:`~aniso.stats.parts.base.Statistic`): the order in which
#: they take a batch, and in which their weight rows are stacked in the batch's shared GEMMs (then, per complement,
#: their left-out shares in the same order). A part's ``name`` is its key in the accumulator, its ``keeps`` what
#: :mod:`aniso.stats.accounting` names its tensors by, its :meth:`~aniso.stats.parts.base.Statistic.state` keys
#: those of the layer's cache entry. (The cache key, :class:`aniso.stats.pipeline.StatsProvider`'s, names the
#: statistics kept, not the parts: a change to what a part keeps in an entry bumps
#: :data:`aniso.common.versions.STATS_FORMAT_VERSION`.)
PARTS: tuple[type[Statistic], ...] = (FirstOrder, Massive, PerInput, SecondOrder, Reservoir)


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
    wait_free : bool or None, take the update paths that read nothing back to the host even where one that does is
        cheaper (default: off the CPU only; the same values either way, see :class:`~aniso.stats.parts.base.Layout`)

    Raises
    ------
    ValueError on a dimension < 1, a negative reservoir, an SVD batch < 2, fewer than one input group or a device
    that does not exist.
    """

    def __init__(self, dim: int, reservoir_size: int = 4096, svd_batch_size: int = 4096, seed: int = 0,
                 second_order: bool = True, per_input: bool = False, device: "torch.device | str" = "cpu",
                 complements: tuple[str, ...] = (), input_groups: int | None = None, group_seed: int = 0,
                 wait_free: bool | None = None):
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
        self._cache: dict[str, Any] = {}
        self._deferred: _Deferred | None = None  # an update's SVD batches, left for its check (:meth:`update`)
        self.layout = Layout(dim, reservoir_size, svd_batch_size, seed, second_order, per_input, input_groups,
                             int(group_seed), tuple(complements), self.device, self.dtype,
                             self.device.type != "cpu" if wait_free is None else bool(wait_free))
        self._parts: dict[str, Statistic] = {part.name: part(self.layout) for part in PARTS}

    # The parts, by their row of PARTS.
    @property
    def _first(self) -> FirstOrder:
        return self._parts[FirstOrder.name]

    @property
    def _massive(self) -> Massive:
        return self._parts[Massive.name]

    @property
    def _per_input(self) -> PerInput:
        return self._parts[PerInput.name]

    @property
    def _second(self) -> SecondOrder:
        return self._parts[SecondOrder.name]

    @property
    def _sample(self) -> Reservoir:
        return self._parts[Reservoir.name]

    @property
    def _inputs(self) -> InputGroups:
        """The per-input sums' rows (:class:`InputGroups`)."""
        return self._per_input.groups

    def parts(self) -> dict[str, Statistic]:
        """The parts holding this accumulator's state, by name, in the order of :data:`PARTS` (shared: read only)."""
        self._settle()
        return dict(self._parts)

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
        accumulator is then not to be used further; :meth:`update_error` says why). An update that completes an SVD
        batch then leaves that batch to be formed once its check is read, from checked rows only: by
        :func:`read_checks` (the caller's one read, for several updates), or else at the next use of the accumulator
        (one read of its own). Returns None otherwise.
        """
        self._settle()
        x = self._as_tensor(x)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"expected an array of shape (m, {self.dim}), got {tuple(x.shape)}")
        self._cache.clear()
        m = x.shape[0]
        if m == 0:
            self._per_input.hold(n_inputs)  # inputs with no vectors here still hold their place
            return
        x64 = x.to(self.dtype)
        sq = x64 * x64
        norms = sq.sum(1).sqrt_()
        labels, k, bad_labels = self._per_input.labels(inputs, n_inputs, m)
        # The update's one wait for the device: are the values finite (a non-finite entry makes its row's norm
        # non-finite) and the labels in range? Nothing is added before it (unless the caller reads it later).
        failed = ~torch.isfinite(norms).all()
        if bad_labels is not None:
            failed = failed | bad_labels
        closes = any(part.needs_check(m) for part in self._parts.values())
        masks, bad_mask = {}, None
        for name in self.layout.complements:
            mask = (exclude or {}).get(name)
            mask = (torch.zeros(m, dtype=torch.bool, device=self.device) if mask is None
                    else self._as_tensor(mask, torch.bool).reshape(-1))
            if mask.shape[0] != m:
                bad_mask = ValueError(f"exclude[{name!r}] must mark {m} rows, got {mask.shape[0]}")
                break
            masks[name] = mask
        # An update that completes an SVD batch needs, besides the check, how many rows of that batch each set of
        # complements marks (to take them apart without a wait of their own): read with the check, in the same read.
        second = self._second
        need = second.close_counts(masks, m) if closes and bad_mask is None else None
        counts = None
        if wait:
            if need is None:
                fail = bool(failed)
            else:
                values = torch.cat([failed.reshape(1).to(torch.int64), need.reshape(-1)]).tolist()
                fail, counts = bool(values[0]), _chunks(values[1:], need.shape[1])
            if fail:
                raise self.update_error(x64, k)
        if bad_mask is not None:
            raise bad_mask
        nonzero = norms > 0
        inverse = torch.where(nonzero, 1.0 / torch.where(nonzero, norms, 1.0), 0.0)
        pos = None if positions is None else self._as_tensor(positions, torch.int64).reshape(-1)
        first = None if pos is None else pos == 0
        batch = Batch(x, x64, sq, norms, nonzero, inverse, self.count, labels, k, pos, first, masks)
        # Every weighted row sum of this batch, in two GEMMs: each part's weight rows against x (Σ u, Σ x, Σ over
        # first tokens, per input), then each part's share of each left-out set, and the same against x∘x. One pass
        # over the batch each, instead of one per statistic.
        takers, w_x, w_sq = [], [], []  # (what takes the part's rows, its rows against x, its rows against x∘x)
        for part in self._parts.values():
            take = functools.partial(part.update, batch)
            if part is second and closes:  # an SVD batch completes: from checked rows only
                if wait:
                    take = functools.partial(_fill, second, x, masks, self.count, counts)
                else:  # left for the caller's read of the check (:func:`read_checks`, or the next use of self)
                    self._deferred = _Deferred(functools.partial(second.add_rows, x, masks, self.count), need, failed,
                                               x, k)
                    take = _nothing
            takers.append((take, *self._rows(part.weights(batch), m, w_x, w_sq)))
        for index, name in enumerate(masks):
            for part in self._parts.values():
                left = part.left_out(name)
                if left is not None:
                    takers.append((functools.partial(left.update, batch, index, name),
                                   *self._rows(left.weights(batch, name), m, w_x, w_sq)))
        s_x = torch.cat(w_x) @ x64 if w_x else x64[:0]
        s_sq = torch.cat(w_sq) @ sq if w_sq else sq[:0]
        for take, x_rows, sq_rows in takers:
            take(s_x[x_rows], s_sq[sq_rows])
        self.count += m
        return None if wait else failed

    @staticmethod
    def _rows(weights, m: int, w_x: list, w_sq: list) -> tuple[slice, slice]:
        """Append one part's weight rows (``weights``: against x, against x∘x) to the batch's; their slices."""
        out = []
        for mine, into in zip(weights, (w_x, w_sq)):
            start = sum(w.shape[0] for w in into)
            into.extend(v.reshape(-1, m) for v in mine)
            out.append(slice(start, sum(w.shape[0] for w in into)))
        return out[0], out[1]

    def update_error(self, x, k: int | None = None) -> ValueError:
        """Why a batch ``x`` (m, d) failed :meth:`update`'s check: its rows with NaN or infinite values, counted, or
        else its input labels out of [0, ``k``)."""
        x64 = self._as_tensor(x).to(self.dtype)
        bad = ~torch.isfinite(x64).all(1)
        if bool(bad.any()):
            return ValueError(f"hidden states contain NaN or infinite values: {int(bad.sum())} of {x64.shape[0]} "
                              f"vectors ({int(torch.isnan(x64).any(1).sum())} with NaN)")
        return ValueError(f"input labels must be {x64.shape[0]} integers in [0, {k}), got values outside it")

    def merge(self, other: "LayerAccumulator") -> None:
        """Add the vectors ``other`` has seen (another shard of the same stream), in place.

        Sums (count, Σ u, Σ x, Σ ‖x‖, Σ x xᵀ) add, so they equal a single pass up to float64 rounding. The
        batch-wise SVD anisotropy keeps both sides' complete batches and refills the partial one with ``other``'s
        partial batch (batches are consecutive within each shard). The reservoir becomes a uniform sample of the
        union (a hypergeometric split of its slots between the two sides, then a uniform choice within each, drawn
        from a stream seeded by both counts, so every rank merging the same states gets the same sample). Raises
        ValueError if the two were not made with the same dimension, reservoir, batch size and order.
        """
        self._settle()
        other._settle()
        mine = (self.dim, self.reservoir_size, self.svd_batch_size, self.second_order, self.per_input,
                self._inputs.groups, self._inputs.seed)
        theirs = (other.dim, other.reservoir_size, other.svd_batch_size, other.second_order, other.per_input,
                  other._inputs.groups, other._inputs.seed)
        if mine != theirs:
            raise ValueError(f"cannot merge accumulators of different settings: {mine} vs {theirs}")
        if self._second.partial_lost or other._second.partial_lost:
            raise ValueError("cannot merge an accumulator rebuilt from state() without its partial SVD batch; "
                             "merge transfer_state()s")
        if self.layout.complements or other.layout.complements:
            raise ValueError("cannot merge accumulators that keep complements (rows left out); their summaries are "
                             "per process")
        self._cache.clear()
        for name, part in self._parts.items():
            part.merge(other._parts[name], self.count, other.count)
        self.count += other.count

    def transfer_state(self) -> dict[str, np.ndarray]:
        """:meth:`state` plus the partial SVD batch, so that an unfinished accumulator can be rebuilt on another
        process and merged (:meth:`from_state`, :meth:`merge`)."""
        self._settle()
        out = self.state()
        for part in self._parts.values():
            out |= part.transfer_state()
        return out

    # -- results ---------------------------------------------------------------
    def _settle(self) -> None:
        """Form the SVD batches an update left for its check (:meth:`update` with ``wait`` False), reading that
        check and what the batches need in one read; raises the update's ValueError where the check failed."""
        if self._deferred is not None:
            self._complete(self._deferred.reads().tolist())

    def _complete(self, values: list[int]) -> None:
        """The deferred update's check and needs as read (:meth:`_Deferred.reads`): raise its error, or form its
        SVD batches."""
        deferred, self._deferred = self._deferred, None
        if values[0]:
            raise self.update_error(deferred.x, deferred.k)
        deferred.fill(None if deferred.need is None else _chunks(values[1:], deferred.need.shape[1]))

    def _cached(self, name: str, make):
        self._settle()
        if name not in self._cache:
            self._cache[name] = make()
        return self._cache[name]

    def gram_tensor(self) -> torch.Tensor | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) in :func:`accumulation_dtype`, on the device (shared: do not
        modify it in place); None without second order."""
        self._settle()
        return self._second.gram_tensor()

    def vector_sum_tensor(self) -> torch.Tensor:
        """Σ x_i, (d,) in :func:`accumulation_dtype`, on the device (shared: do not modify it in place)."""
        return self._first._vector_sum

    @property
    def gram(self) -> np.ndarray | None:
        """Σ x_i x_iᵀ over every vector seen, (d, d) float64 on the host; None without second order."""
        if not self.second_order:
            return None
        return self._cached("gram", lambda: _host(self.gram_tensor()).astype(np.float64))

    @property
    def spread(self) -> float:
        """Σ_i ‖x_i − x̄‖² / Σ_i ‖x_i‖² over the layer's vectors, from the first-order sums (Σ x, Σ x∘x), read to the
        host in float64: 0 when every vector is the same one (a model that ignores its inputs), 1 when their mean is
        0; NaN when every vector is zero or there is none. Its rounding is that of the sums' dtype
        (:func:`accumulation_dtype`) times the count, far below any spread real hidden states have."""
        def read():
            n = self.count
            squares = float(self._first._sq_sum.double().sum())
            if n == 0 or squares == 0.0:
                return float("nan")
            mean_squares = float(self._first._vector_sum.double().square().sum()) / n
            return max(squares - mean_squares, 0.0) / squares

        return self._cached("spread", read)

    @property
    def n_zero(self) -> int:
        """Vectors of norm 0 (left out of the cosine)."""
        return self._cached("n_zero", lambda: int(self._first._n_zero))

    @property
    def n_nonzero(self) -> int:
        return self.count - self.n_zero

    @property
    def n_first(self) -> int:
        """Rows seen at position 0 of their sequence."""
        return self._cached("n_first", lambda: int(self._massive._n_first))

    @property
    def norm_sum(self) -> float:
        """Σ ‖x_i‖."""
        return self._cached("norm_sum", lambda: float(self._first._norm_sum))

    @property
    def batch_svd(self) -> list[float]:
        """SVD anisotropy of each complete batch, in stream order."""
        return self._cached("batch_svd", self._second.batch_values)

    @property
    def reservoir(self) -> np.ndarray:
        """The reservoir's storage (reservoir_size, d) float32 on the host (see :meth:`reservoir_sample`)."""
        return self._cached("reservoir", lambda: _host(self._sample._reservoir))

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
        return self._cached("inputs", lambda: tuple(_host(t) for t in self._inputs.tensors()))

    def summary(self, seed: int = 0, n_pairs: int = 20_000) -> LayerSummary:
        """Per-layer metrics of everything seen so far (see :class:`LayerSummary`): each part's fields
        (:meth:`~aniso.stats.parts.base.Statistic.summarise`), read in the order of their ``summary_rank``.

        The whole-set SVD anisotropy and IsoScore come from the centred Σ x xᵀ on the device (its λ_max, trace and
        Frobenius norm);
        TwoNN, sampled pairs and the standardised cosine from the reservoir."""
        self._settle()
        fields: dict[str, Any] = {}
        for part in sorted(self._parts.values(), key=lambda p: p.summary_rank):
            fields |= part.summarise(self, seed, n_pairs)
        return LayerSummary(**fields)

    def complement(self, name: str) -> "LayerAccumulator":
        """The statistics of every row seen except those marked ``exclude[name]``, as a finished accumulator on the
        same device and paths (``wait_free``) without reservoir (so its TwoNN, sampled-pair cosine, standardised cosine
        and massive ratio are NaN): sums are the whole stream's minus the excluded rows'; ``batch_svd`` is each
        complete SVD batch without its excluded rows. Raises KeyError for a name not given as a complement."""
        self._settle()
        excluded = int(self._first.excluded(name))
        acc = LayerAccumulator(self.dim, 0, self.svd_batch_size, self.seed, self.second_order, device=self.device,
                               wait_free=self.layout.wait_free)
        for part_name, part in self._parts.items():
            part.without(name, acc._parts[part_name])
        acc.count = self.count - excluded
        return acc

    def excluded_count(self, name: str) -> int:
        """Rows marked ``exclude[name]`` so far."""
        return int(self._first.excluded(name))

    # -- persistence -----------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """The accumulated state as named host arrays (for the cache): ``count`` (rows seen, of them of norm 0,
        rows of the partial SVD batch) and ``settings``, then each part's arrays
        (:meth:`~aniso.stats.parts.base.Statistic.state`), in the order of :data:`PARTS`."""
        self._settle()
        out = {"count": np.array([self.count, self.n_zero, self._second.fill], np.int64),
               "settings": np.array([self.dim, self.reservoir_size, self.svd_batch_size, self.seed,
                                     int(self.second_order)], np.int64)}
        for part in self._parts.values():
            out |= part.state(self.count)
        return out

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], device: "torch.device | str" = "cpu") -> "LayerAccumulator":
        """Rebuild an accumulator on ``device`` from :meth:`state` (a finished one: its SVD buffer is not kept) or
        from :meth:`transfer_state` (with its partial SVD batch)."""
        dim, k, b, seed, second = (int(v) for v in state["settings"])
        per_input, groups, group_seed, _, _ = PerInput.settings_from_state(state)
        acc = cls(dim, k, b, seed, bool(second), per_input=per_input, device=device, input_groups=groups,
                  group_seed=group_seed)
        acc.count = int(state["count"][0])
        for part in acc._parts.values():
            part.load(state)
        return acc


def _chunks(values: list[int], size: int) -> list[list[int]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def _nothing(*args) -> None:
    pass


def _fill(second: SecondOrder, x, masks, seen, counts, x_sums, sq_sums) -> None:
    second.add_rows(x, masks, seen, counts)


class _Deferred:
    """An update's SVD batches left for its check (:meth:`LayerAccumulator.update` with ``wait`` False): ``fill``
    (takes the batches' counts), ``need`` ((batches, codes) int64 on the device, or None), ``failed`` (the check),
    and the batch ``x`` and the labels' bound ``k`` (to say why, should the check fail). ``group``: the layers
    updated together whose SVD batches are formed together once every layer's check is read
    (:class:`aniso.stats.stack.LayerStack`; ``group.whole(accumulators)``, ``group.fill_all({id(accumulator): its
    counts})``), or None; ``fill`` then forms this layer's alone."""

    def __init__(self, fill, need, failed, x, k, group=None):
        self.fill, self.need, self.failed, self.x, self.k, self.group = fill, need, failed, x, k, group

    def reads(self) -> torch.Tensor:
        """The check, then what the SVD batches need, as one int64 vector on the device."""
        flag = self.failed.reshape(1).to(torch.int64)
        return flag if self.need is None else torch.cat([flag, self.need.reshape(-1).to(flag.device)])


def read_checks(updates) -> list[bool]:
    """Read the checks of several updates made with ``wait`` False (``updates``: (accumulator, the check its
    :meth:`~LayerAccumulator.update` returned, or None), e.g. every layer's of one batch) in one read from the
    device, with what the SVD batches some of them completed need; then, if no check failed, form those batches.
    Returns whether each update's check failed (False for a None check): the caller names the first that did
    (:meth:`LayerAccumulator.update_error`); no batch is formed from unchecked rows."""
    flags, needs = [], []  # (the update's index, its check); (the update's index, what its SVD batches need)
    for i, (acc, check) in enumerate(updates):
        deferred = acc._deferred
        if deferred is not None:
            flags.append((i, deferred.failed))
            if deferred.need is not None:
                needs.append((i, deferred.need))
        elif check is not None:
            flags.append((i, check))
    failed = [False] * len(updates)
    if not flags:
        return failed
    device = flags[0][1].device
    here = lambda t: t if t.device == device else t.to(device)  # noqa: E731
    checks = [here(c) for _, c in flags]
    together = rows_of_one(checks)  # the layers' checks of one update of every layer: one tensor already
    read = (torch.stack(checks) if together is None else together).to(torch.int64)
    if needs:
        read = torch.cat([read] + [here(need).reshape(-1) for _, need in needs])
    values = read.tolist()
    for (i, _), value in zip(flags, values):
        failed[i] = bool(value)
    if any(failed):
        return failed
    at, got = len(flags), {}
    for i, need in needs:
        got[i] = values[at : at + need.numel()]
        at += need.numel()
    groups: dict[int, tuple] = {}  # layers updated together, whose SVD batches are formed together
    for i, (acc, _) in enumerate(updates):
        deferred = acc._deferred
        if deferred is not None and deferred.group is not None:
            groups.setdefault(id(deferred.group), (deferred.group, []))[1].append((i, acc))
    for group, members in groups.values():
        if group.whole([acc for _, acc in members]):
            counts = {}
            for i, acc in members:
                need = acc._deferred.need
                counts[id(acc)] = None if need is None else _chunks(got.get(i, []), need.shape[1])
                acc._deferred = None
            group.fill_all(counts)
    for i, (acc, _) in enumerate(updates):
        if acc._deferred is not None:
            acc._complete([0] + got.get(i, []))
    return failed


def _host_property(name: str, part: str, doc: str) -> property:
    def get(self: LayerAccumulator) -> np.ndarray:
        return self._cached(name, lambda: _host(getattr(self._parts[part], f"_{name}")).copy())
    return property(get, doc=doc)


for _name, _part, _doc in (
        ("unit_sum", FirstOrder.name, "Σ u_i over the non-zero vectors, (d,) float64 on the host."),
        ("vector_sum", FirstOrder.name, "Σ x_i, (d,) float64 on the host."),
        ("unit_sq_sum", FirstOrder.name, "Σ u_i∘u_i, (d,) float64 on the host."),
        ("sq_sum", FirstOrder.name, "Σ x_i∘x_i, (d,) float64 on the host."),
        ("abs_max", Massive.name, "Per feature, max |x|, (d,) float64 on the host."),
        ("abs_max_pos", Massive.name, "Per feature, the sequence position where max |x| was seen (-1 unknown), (d,)."),
        ("first_sum", Massive.name, "Σ x over the first token of each sequence, (d,)."),
        ("first_sq_sum", Massive.name, "Σ x∘x over the first token of each sequence, (d,).")):
    setattr(LayerAccumulator, _name, _host_property(_name, _part, _doc))


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
