"""The protocol every part of a layer's streamed statistics follows, and what its methods are given.

A part (:class:`Statistic`) owns the state of one group of statistics of one layer (Godey et al. 2024 §3;
Razzhigaev et al. 2024 §2): it adds one batch of the layer's vectors (:meth:`Statistic.update`, given a
:class:`Batch`), merges another shard's (:meth:`Statistic.merge`), names its state as host arrays
(:meth:`Statistic.state`, rebuilt by :meth:`Statistic.from_state`) and gives its fields of the layer's
:class:`~aniso.stats.results.LayerSummary` (:meth:`Statistic.summarise`). A part that supports the complements (the
statistics without a named subset of rows: the first token of each sequence, the massive-activation rows) keeps,
per complement, the share of the rows left out (a :class:`LeftOut`) and gives the complement's own part
(:meth:`Statistic.without`).

Every weighted row sum of a batch (Σu, Σx, Σx∘x, ... over all rows, per input, over each complement's rows) is one
row of two GEMMs shared by every part, one against x and one against x∘x: each part (and each part's left-out
share) names its weight rows (:meth:`Statistic.weights`) and receives its rows of the two products in
:meth:`Statistic.update`. The rows are stacked in the order of the part table
(:data:`aniso.stats.accumulators.PARTS`), then per complement in the same order.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

if TYPE_CHECKING:
    from ..accumulators import LayerAccumulator

__all__ = ["Layout", "Batch", "Layers", "Statistic", "LeftOut", "host", "running_max", "running_max_",
           "stack_attributes", "rows_of_one", "of_layers"]


def host(t: torch.Tensor) -> np.ndarray:
    """One explicit device-to-host copy of a summary tensor (O(d) or O(d²), never per token)."""
    return t.detach().to("cpu").numpy()


@dataclass(frozen=True)
class Layout:
    """The settings a layer's parts are made with (those of :class:`~aniso.stats.accumulators.LayerAccumulator`):
    ``dim`` d >= 1, ``reservoir_size`` >= 0 (0 without second order), ``svd_batch_size`` >= 2, ``seed``,
    ``second_order``, ``per_input``, ``input_groups`` >= 1, ``group_seed``, ``complements`` (names of the subsets of
    rows an update may leave out), ``device`` and ``dtype`` (the accumulation dtype, :func:`accumulation_dtype`);
    ``wait_free``: the parts take the path that reads nothing back to the host where a path that does would be
    cheaper on the CPU (the default off the CPU, where such a read waits for the device; the benchmark of operators
    and host synchronisations sets it on the CPU to count what a GPU runs, :mod:`aniso.bench.dispatch`)."""

    dim: int
    reservoir_size: int
    svd_batch_size: int
    seed: int
    second_order: bool
    per_input: bool
    input_groups: int
    group_seed: int
    complements: tuple[str, ...]
    device: torch.device
    dtype: torch.dtype
    wait_free: bool = False

    def zeros(self, *shape: int) -> torch.Tensor:
        """Zeros of ``shape`` in the accumulation dtype on the device."""
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def loader(self, state: dict[str, np.ndarray]):
        """``t(name, dtype=None)``: the host array ``state[name]`` as a tensor on the device (accumulation dtype)."""
        return lambda name, dtype=None: torch.as_tensor(np.ascontiguousarray(state[name]),
                                                        device=self.device).to(dtype or self.dtype)


@dataclass(frozen=True)
class _Rows:
    """The fields :class:`Batch` (one layer) and :class:`Layers` (every layer at once) share; see theirs."""

    x: torch.Tensor
    x64: torch.Tensor
    sq: torch.Tensor
    norms: torch.Tensor
    nonzero: torch.Tensor
    inverse: torch.Tensor
    seen: int
    labels: torch.Tensor | None
    k: int
    positions: torch.Tensor | None
    first: torch.Tensor | None

    @property
    def m(self) -> int:
        """Rows (of each layer)."""
        return self.x.shape[-2]

    @functools.cached_property
    def first_weight(self) -> torch.Tensor:
        """(m,) 1.0 on the first token of each sequence, else 0 (all 0 where positions are unknown)."""
        if self.first is None:
            return torch.zeros(self.m, dtype=self.x64.dtype, device=self.x64.device)
        return self.first.to(self.x64.dtype)


@dataclass(frozen=True)
class Batch(_Rows):
    """One checked batch of m >= 1 vectors of a layer, as the parts read it (a view: nothing here is to be modified).

    ``x`` (m, d) in the dtype the model produced, on the accumulator's device; ``x64`` the same upcast once to the
    accumulation dtype and ``sq`` = x64∘x64; ``norms`` (m,) ‖x‖, ``nonzero`` (m,) bool and ``inverse`` (m,) 1/‖x‖
    (0 for zero vectors), in the accumulation dtype; ``seen``: rows the accumulator had seen before this batch;
    ``labels`` (m,) int64 the input of each row (0 .. ``k`` - 1; None without per-input sums); ``positions`` (m,)
    int64 each row's position in its sequence (None: unknown) and ``first`` (m,) bool position 0 (None: unknown);
    ``masks``: {complement name: (m,) bool, the rows it leaves out}, in the order of the accumulator's complements.
    """

    masks: dict[str, torch.Tensor] = field(default_factory=dict)
    _shared: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @functools.cached_property
    def ones(self) -> torch.Tensor:
        """(m,) ones in the accumulation dtype (the weights of a plain sum)."""
        return torch.ones(self.m, dtype=self.x64.dtype, device=self.x64.device)

    @functools.cached_property
    def mask_weights(self) -> dict[str, torch.Tensor]:
        """Per complement, (m,) 1.0 on the rows it leaves out, else 0."""
        return {name: mask.to(self.x64.dtype) for name, mask in self.masks.items()}

    def shared(self, key: str, make):
        """What ``make()`` returns, computed once per batch and shared by the parts that ask for ``key`` (e.g. the
        per-feature maxima that a part and its complements' shares read)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


@dataclass(frozen=True)
class Layers(_Rows):
    """One checked batch of the same m >= 1 rows (tokens) in each of L layers, as parts updated for every layer at
    once read it (:class:`aniso.stats.stack.LayerStack`; a view: nothing here is to be modified).

    ``x`` (L, m, d) in the dtype the model produced; ``x64`` the same in the accumulation dtype and ``sq`` = x64∘x64;
    ``norms``, ``nonzero`` and ``inverse`` (L, m), as in :class:`Batch`; ``seen``: rows each layer had seen before;
    ``labels`` (m,) int64 (None without per-input sums), ``k``, ``positions`` (m,) int64 (None: unknown) and
    ``first`` (m,) bool: the same rows, so the same for every layer; ``norm_sums`` (L,) Σ‖x‖ of each layer's rows;
    ``masks``: {complement name: (L, m) bool, the rows it leaves out in each layer}, in the order of the
    accumulators' complements; ``counts``: for an update left until the layers' checks are read, each layer's rows
    of each SVD batch it completes by the set of complements marking them
    (:meth:`~aniso.stats.parts.second_order.SecondOrder.close_counts`, read), or None."""

    norm_sums: torch.Tensor | None = None
    masks: dict[str, torch.Tensor] = field(default_factory=dict)
    counts: list | None = None

    @property
    def n_layers(self) -> int:
        """Layers L."""
        return self.x.shape[0]

    @functools.cached_property
    def mask_weights(self) -> dict[str, torch.Tensor]:
        """Per complement, (L, 1, m) 1.0 on the rows it leaves out, else 0 (a weight row of each layer)."""
        return {name: mask.to(self.x64.dtype).unsqueeze(1) for name, mask in self.masks.items()}


def of_layers(t: torch.Tensor, at: slice) -> torch.Tensor:
    """``t[at]``, the layers ``at`` of a tensor with a leading layer axis; ``t`` itself where ``at`` is every layer of
    it (no view to make)."""
    return t if at.start == 0 and at.stop >= t.shape[0] else t[at]


def rows_of_one(ts: list[torch.Tensor]) -> torch.Tensor | None:
    """``ts`` as one tensor (len(ts), *shape) without a copy, where they are views of one storage at a constant step
    apart, in order (e.g. every layer's rows of a batch as :func:`aniso.extract.hidden._rows_of_each` gives them, or
    the checks of the layers updated together): read from their storage, offsets and strides on the host (nothing
    waits for the device; inference tensors keep no ``_base``); None where they are not."""
    if len(ts) < 2 or not all(isinstance(t, torch.Tensor) for t in ts):
        return None
    t0 = ts[0]
    storage = t0.untyped_storage().data_ptr()
    step = ts[1].storage_offset() - t0.storage_offset()
    if step <= 0 or (t0.numel() and step < max(((n - 1) * st for n, st in zip(t0.shape, t0.stride())), default=0) + 1):
        return None  # (rows that would overlap)
    if any(t.untyped_storage().data_ptr() != storage or t.dtype != t0.dtype or t.device != t0.device
           or t.shape != t0.shape or t.stride() != t0.stride() or t.storage_offset() != t0.storage_offset() + i * step
           for i, t in enumerate(ts)):
        return None
    return t0.as_strided((len(ts), *t0.shape), (step, *t0.stride()), t0.storage_offset())


def stack_attributes(parts: list, groups: list[tuple[str, ...]]) -> list[torch.Tensor]:
    """Move the named tensors of ``parts`` (one part per layer; each name an attribute path, ``_inputs.unit``) into
    one tensor per group, (L, g, *shape) for a group of g names ((L, *shape) for one name), and set each part's
    attributes to views of it: an in-place change of the stacked tensor is then every part's, with one kernel for
    all layers. Each named tensor must have the same shape and dtype in every part. Returns the stacked tensors, in
    the order of ``groups``."""
    def get(obj, path):
        for name in path.split("."):
            obj = getattr(obj, name)
        return obj

    def put(obj, path, value):
        *head, last = path.split(".")
        for name in head:
            obj = getattr(obj, name)
        setattr(obj, last, value)

    out = []
    for group in groups:
        if len(group) == 1:
            stacked = torch.stack([get(p, group[0]) for p in parts])
            for i, p in enumerate(parts):
                put(p, group[0], stacked[i])
        else:
            stacked = torch.stack([torch.stack([get(p, name) for name in group]) for p in parts])
            for i, p in enumerate(parts):
                for j, name in enumerate(group):
                    put(p, name, stacked[i, j])
        out.append(stacked)
    return out


class LeftOut:
    """The share of one complement's left-out rows in one part's state (see :meth:`Statistic.left_out`).

    ``keeps``: {attribute: what its size scales with} (:data:`aniso.stats.accounting.SCALES_WITH`, under
    ``_complements.*.``)."""

    keeps: ClassVar[dict[str, str]] = {}

    def weights(self, batch: Batch, name: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The weight rows this share adds to the batch's GEMMs against x and against x∘x (each (m,) or (k, m))."""
        return [], []

    def update(self, batch: Batch, index: int, name: str, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        """Add the rows ``batch.masks[name]`` leaves out (the ``index``-th complement); ``x_sums``, ``sq_sums``: this
        share's rows of the two GEMMs."""


class Statistic(ABC):
    """One part of a layer's streamed statistics (the protocol; a subclass defines what it keeps).

    ``name``: its row in the part table; ``keeps``: {attribute: what its size scales with} (``1``, ``d``, ``d²``,
    ``svd_batch_size``, ``svd_batch_size·d``, ``reservoir_size·d``, ``min(inputs, input_groups)`` and ``·d``,
    ``svd batches``), what :func:`aniso.stats.accounting.kept_tensors` names each tensor by; ``summary_rank``: the
    order in which :meth:`summarise` is called (lowest first), so that a layer that cannot be summarised raises the
    same error whatever the table's order. A part made with ``layout`` keeps its own tensors on ``layout.device`` (in
    ``layout.dtype`` unless stated); nothing per token reaches the host (:meth:`state` and :meth:`summarise` copy
    O(d²) at most).
    """

    name: ClassVar[str] = ""
    keeps: ClassVar[dict[str, str]] = {}
    summary_rank: ClassVar[int] = 0
    left_keeps: ClassVar[dict[str, str]] = {}  # what each complement's share (LeftOut) keeps, if any

    def __init__(self, layout: Layout):
        self.layout = layout
        self._complements: dict[str, LeftOut] = {}

    # -- streaming -----------------------------------------------------------
    def needs_check(self, m: int) -> bool:
        """Whether adding m rows would do what must wait for the batch's check to be read (complete an SVD batch):
        :meth:`~aniso.stats.accumulators.LayerAccumulator.update` then reads the check first, or leaves this part's
        update until the caller has read it."""
        return False

    def weights(self, batch: Batch) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The weight rows this part adds to the batch's GEMMs against x and against x∘x (each (m,) or (k, m))."""
        return [], []

    # -- every layer at once (aniso.stats.stack) ---------------------------------
    @classmethod
    def stacked(cls, parts: list["Statistic"]) -> Any:
        """Make ``parts`` (this part of each of L layers, new, made with one layout but their seeds) take their
        updates together (:meth:`update_layers`): their tensors moved into tensors with a leading layer axis, each
        part keeping views of them. Returns what :meth:`update_layers` is given (None: this part cannot, and the
        layers are then updated one by one)."""
        return None

    @classmethod
    def layer_weights(cls, layers: Layers) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The weight rows this part adds to the layers' GEMMs against x and against x∘x (each (L, r, m), or
        (1, r, m) for rows every layer shares), in the order :meth:`update_layers` reads them."""
        return [], []

    @classmethod
    def layers_close_counts(cls, stacked: Any, parts: list["Statistic"], at: slice, layers: Layers) -> Any:
        """For a part whose update waits for the layers' checks (:meth:`needs_check`): what it needs read from the
        device with them, (L, ...) int64, or None (the default: nothing)."""
        return None

    @classmethod
    def update_layers(cls, stacked: Any, parts: list["Statistic"], at: slice, layers: Layers, x_sums: torch.Tensor,
                      sq_sums: torch.Tensor) -> None:
        """Add one batch to the parts ``parts[at]`` at once (L of them, ``layers``' layers); ``stacked``: what
        :meth:`stacked` returned for all of ``parts``; ``x_sums``, ``sq_sums`` (L, r, d): these parts' rows of the
        layers' two GEMMs (:meth:`layer_weights`; None where it gave none)."""
        raise NotImplementedError

    @abstractmethod
    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        """Add one batch; ``x_sums``, ``sq_sums``: this part's rows of the batch's two GEMMs (:meth:`weights`)."""

    @abstractmethod
    def merge(self, other: "Statistic", count: int, other_count: int) -> None:
        """Add ``other``'s state (the same part of another shard, made with the same settings), in place; ``count``
        and ``other_count``: the rows each side has seen."""

    # -- complements ---------------------------------------------------------
    def left_out(self, name: str) -> LeftOut | None:
        """This part's share of the rows complement ``name`` leaves out (None: the part has no complement)."""
        return self._complements.get(name)

    def without(self, name: str, into: "Statistic") -> None:
        """Set ``into`` (this part of the complement's accumulator, new: made without reservoir, per-input sums or
        complements) to this part over every row seen but those complement ``name`` left out; left empty by a part
        that keeps nothing for the complements."""

    # -- persistence and results ----------------------------------------------
    @abstractmethod
    def state(self, count: int) -> dict[str, np.ndarray]:
        """This part's state as named host arrays (keys of the layer's cache entry); ``count``: rows seen."""

    def transfer_state(self) -> dict[str, np.ndarray]:
        """What :meth:`state` leaves out that a merge on another process needs (the partial SVD batch)."""
        return {}

    @abstractmethod
    def load(self, state: dict[str, np.ndarray]) -> None:
        """Set this (new) part's state from a layer's :meth:`state` or ``transfer_state`` arrays."""

    @classmethod
    def from_state(cls, layout: Layout, state: dict[str, np.ndarray]) -> "Statistic":
        """A part made with ``layout`` holding ``state`` (:meth:`state`, or a layer's transfer state)."""
        part = cls(layout)
        part.load(state)
        return part

    def summarise(self, layer: "LayerAccumulator", seed: int, n_pairs: int) -> dict[str, Any]:
        """This part's fields of the layer's :class:`~aniso.stats.results.LayerSummary` (``layer``: the accumulator
        it belongs to, read for what other parts keep; ``seed``, ``n_pairs``: of the sampled-pair estimate)."""
        return {}


def running_max(abs_max: torch.Tensor, abs_max_pos: torch.Tensor, top: torch.Tensor, rows: torch.Tensor,
                pos: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per feature, the running max |x| (d,) and its sequence position (d,) after a batch whose max is ``top`` (d,)
    at rows ``rows`` (d,); ``pos`` (m,) the rows' positions, None: unknown (-1). A tie keeps the earlier batch."""
    top = top.to(abs_max.dtype)
    better = top > abs_max
    return torch.where(better, top, abs_max), torch.where(better, -1 if pos is None else pos[rows], abs_max_pos)


def running_max_(abs_max: torch.Tensor, abs_max_pos: torch.Tensor, top: torch.Tensor, rows: torch.Tensor,
                 pos: torch.Tensor | None) -> None:
    """:func:`running_max` in place, for running maxima of any leading shape (every layer's, (L, d)): ``abs_max``
    and ``abs_max_pos`` take the batch's ``top`` and the positions of its ``rows`` where ``top`` is larger (a tie
    keeps the earlier batch)."""
    top = top.to(abs_max.dtype)
    better = top > abs_max
    if pos is None:
        abs_max_pos.masked_fill_(better, -1)
    else:
        torch.where(better, pos[rows], abs_max_pos, out=abs_max_pos)
    torch.where(better, top, abs_max, out=abs_max)
