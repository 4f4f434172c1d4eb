"""Per-input sums of one layer (Σu, Σx and the counts of each paragraph, recording or image), what a bootstrap over
the inputs resamples (:func:`aniso.stats.uncertainty.bootstrap_stats`), kept in a fixed budget of rows."""

from __future__ import annotations

import numpy as np
import torch

from .base import Batch, Layers, Layout, Statistic, host, of_layers

__all__ = ["PerInput", "InputGroups", "INPUT_GROUPS", "input_group"]


class PerInput(Statistic):
    """Per input (per random group of inputs past ``input_groups`` of them): Σ u (rows, d), Σ x (rows, d) float32 and
    (vectors, non-zero vectors) (rows, 2) int64, on the device, in :class:`InputGroups` (``_inputs``): O(min(inputs,
    input_groups) · d). Nothing without ``per_input``. Up to :data:`_ONE_HOT_INPUTS` inputs in one update, their
    sums are one-hot rows of the batch's shared GEMM; beyond, one segment sum (``index_add_``) of the (m, 2d) rows
    [u | x] into their input's row. No complement, no summary field (the bootstrap reads the sums).
    """

    name = "per-input"
    keeps = {"_inputs.unit": "min(inputs, input_groups)·d", "_inputs.vector": "min(inputs, input_groups)·d",
             "_inputs.counts": "min(inputs, input_groups)"}
    summary_rank = 5

    def __init__(self, layout: Layout):
        super().__init__(layout)
        self._inputs = InputGroups(layout.dim, layout.device, layout.input_groups, layout.group_seed)

    @property
    def groups(self) -> "InputGroups":
        """The rows of sums."""
        return self._inputs

    def labels(self, inputs, n_inputs, m: int) -> tuple[torch.Tensor | None, int, torch.Tensor | None]:
        """(labels (m,) int64 on the device, k inputs, a 0-d bool tensor on the device: whether some label is outside
        [0, k); None where that was checked on the host); (None, 0, None) without ``per_input``. ``inputs`` None:
        the whole update is one input. Raises ValueError on labels of the wrong length, or labels given on the host
        that fall outside [0, k)."""
        device = self.layout.device
        if not self.layout.per_input:
            return None, 0, None
        if inputs is None:
            return torch.zeros(m, dtype=torch.int64, device=device), 1, None
        on_host = not isinstance(inputs, torch.Tensor)
        inputs = np.asarray(inputs, dtype=np.int64).reshape(-1) if on_host else inputs.reshape(-1)
        k = int(n_inputs) if n_inputs is not None else int(inputs.max()) + 1 if len(inputs) else 0
        if inputs.shape[0] != m or (on_host and m and (inputs.min() < 0 or inputs.max() >= k)):
            raise ValueError(f"input labels must be {m} integers in [0, {k}), got shape {tuple(inputs.shape)}")
        labels = (torch.from_numpy(inputs) if on_host else inputs).to(device=device, dtype=torch.int64).reshape(-1)
        return labels, k, None if on_host else ((labels < 0) | (labels >= k)).any()

    def hold(self, n_inputs: int | None) -> None:
        """An update with no vectors: its ``n_inputs`` inputs still hold their place (zero sums)."""
        if self.layout.per_input and n_inputs:
            d, device = self.layout.dim, self.layout.device
            self._inputs.append(torch.zeros(n_inputs, d, device=device), torch.zeros(n_inputs, d, device=device),
                                torch.zeros(n_inputs, 2, dtype=torch.int64, device=device))

    def _by_gemm(self, batch: Batch) -> bool:
        return batch.labels is not None and batch.k <= _ONE_HOT_INPUTS

    def weights(self, batch: Batch):
        if not self._by_gemm(batch):
            return [], []
        onehot = (batch.labels.unsqueeze(0) == torch.arange(batch.k, device=batch.x64.device).unsqueeze(1)).to(
            batch.x64.dtype)
        return [onehot * batch.inverse, onehot], []

    def update(self, batch: Batch, x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        labels, k = batch.labels, batch.k
        if labels is None:
            return
        device = self.layout.device
        # (vectors, non-zero vectors) per input: a segment sum, no count read back to the host
        counts = torch.zeros(k, 2, dtype=torch.int64, device=device).index_add_(
            0, labels, torch.stack([torch.ones_like(labels), batch.nonzero.to(torch.int64)], 1))
        if self._by_gemm(batch):
            unit, vector = x_sums[:k], x_sums[k : 2 * k]
        else:  # many inputs in one update: one segment sum of the (m, 2d) rows [u | x] into their input's row
            d = self.layout.dim
            both = torch.zeros(k, 2 * d, dtype=batch.x64.dtype, device=device).index_add_(
                0, labels, torch.cat([batch.x64 * batch.inverse[:, None], batch.x64], dim=1))
            unit, vector = both[:, :d], both[:, d:]
        self._inputs.append(unit, vector, counts)

    @classmethod
    def stacked(cls, parts: list["PerInput"]) -> "_StackedGroups | tuple":
        return _StackedGroups([p._inputs for p in parts]) if parts[0].layout.per_input else ()

    @classmethod
    def layer_weights(cls, layers: Layers):
        if layers.labels is None or layers.k > _ONE_HOT_INPUTS:
            return [], []
        onehot = (layers.labels.unsqueeze(0) == torch.arange(layers.k, device=layers.x64.device).unsqueeze(1)).to(
            layers.x64.dtype).unsqueeze(0)
        return [onehot * layers.inverse.unsqueeze(1), onehot], []

    @classmethod
    def update_layers(cls, stacked: "_StackedGroups | tuple", parts, at: slice, layers: Layers,
                      x_sums: torch.Tensor, sq_sums: torch.Tensor) -> None:
        labels, k = layers.labels, layers.k
        if labels is None or not stacked:
            return
        device, n = layers.x64.device, layers.n_layers
        ones = torch.ones((n, layers.m), dtype=torch.int64, device=device)
        counts = torch.zeros(n, k, 2, dtype=torch.int64, device=device).index_add_(
            1, labels, torch.stack([ones, layers.nonzero.to(torch.int64)], 2))
        if k <= _ONE_HOT_INPUTS:
            both = x_sums[:, : 2 * k].to(torch.float32)  # (the rows' dtype: one rounding, as InputGroups.append)
            unit, vector = both[:, :k], both[:, k:]
        else:
            d = layers.x64.shape[2]
            both = torch.zeros(n, k, 2 * d, dtype=layers.x64.dtype, device=device).index_add_(
                1, labels, torch.cat([layers.x64 * layers.inverse[:, :, None], layers.x64], dim=2))
            unit, vector = both[:, :, :d], both[:, :, d:]
        stacked.append(at, unit, vector, counts)

    def merge(self, other: "PerInput", count: int, other_count: int) -> None:
        if self.layout.per_input:
            self._inputs.append(*other._inputs.tensors(), n_inputs=other._inputs.n_inputs)

    def state(self, count: int) -> dict[str, np.ndarray]:
        if not self.layout.per_input:
            return {}
        g = self._inputs
        return dict(zip(("input_unit_sum", "input_vector_sum", "input_count"), (host(t) for t in g.tensors())),
                    input_groups=np.array([g.groups, g.seed, g.placed, g.n_inputs], np.int64))

    @staticmethod
    def settings_from_state(state: dict[str, np.ndarray]) -> tuple[bool, int, int, int, int]:
        """(per_input, groups, group seed, rows appended, inputs) of a layer's state; an entry from before the
        groups: one row per input."""
        per_input = "input_count" in state
        rows = state["input_count"].shape[0] if per_input else 0
        groups, group_seed, placed, n_inputs = (int(v) for v in state["input_groups"]) if "input_groups" in state \
            else (max(INPUT_GROUPS, rows), 0, rows, rows)
        return per_input, groups, group_seed, placed, n_inputs

    def load(self, state: dict[str, np.ndarray]) -> None:
        if not self.layout.per_input:
            return
        t = self.layout.loader(state)
        _, _, _, placed, n_inputs = self.settings_from_state(state)
        self._inputs.append(t("input_unit_sum", torch.float32), t("input_vector_sum", torch.float32),
                            t("input_count", torch.int64))
        self._inputs.placed, self._inputs.n_inputs = placed, n_inputs


#: Up to this many inputs in one update, the per-input sums are one-hot rows of the update's GEMM (k·m weights);
#: beyond it, a segment sum (``index_add_``), so a caller passing many inputs at once never builds a k × m matrix.
_ONE_HOT_INPUTS = 64


#: Rows the per-input sums of one layer take at most (:class:`InputGroups`): exactly one per input up to this many
#: inputs (every input set of the ``quick`` and ``study`` profiles: at most 256 paragraphs, 32 recordings, 192 photographs),
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
        for name in _SUMS:
            setattr(self, name, _grown(getattr(self, name), rows, self.groups, 0))

    def append(self, unit: torch.Tensor, vector: torch.Tensor, counts: torch.Tensor, n_inputs: int | None = None) -> None:
        """Add k rows (``unit``, ``vector`` (k, d), any float dtype, rounded to float32; ``counts`` (k, 2) int64),
        standing for ``n_inputs`` inputs (default k), to their groups."""
        k = unit.shape[0]
        if k == 0:
            return
        self._reserve(min(self.placed + k, self.groups))
        _place([getattr(self, name) for name in _SUMS], (unit, vector, counts), self, 0)
        self.placed += k
        self.n_inputs += k if n_inputs is None else int(n_inputs)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The rows in use, (rows, d), (rows, d), (rows, 2): views, in input order up to ``groups`` inputs."""
        r = self.rows
        return self.unit[:r], self.vector[:r], self.counts[:r]


#: The tensors of :class:`InputGroups`, in the order :meth:`InputGroups.append` takes them.
_SUMS = ("unit", "vector", "counts")


def _grown(old: torch.Tensor, rows: int, groups: int, axis: int) -> torch.Tensor:
    """``old`` with room for ``rows`` rows along ``axis`` (zeros beyond its own): itself where it has them, else
    doubled (at least 16 rows, at most ``groups``)."""
    have = old.shape[axis]
    if rows <= have:
        return old
    shape = list(old.shape)
    shape[axis] = min(groups, max(16, 2 * rows))
    new = old.new_zeros(shape)
    new.narrow(axis, 0, have).copy_(old)
    return new


def _place(intos: list[torch.Tensor], parts, groups: "InputGroups", axis: int) -> None:
    """Add k rows of sums ``parts`` (each k along ``axis``) to their rows of ``intos`` (the sums of ``groups``, or of
    every layer's groups alike, along ``axis``): one row each, in order, while ``groups.placed`` + k fits its rows
    (the inputs' own sums), else each to the group :func:`input_group` gives it."""
    start, k = groups.placed, parts[0].shape[axis]
    same = lambda part, into: part if part.dtype == into.dtype else part.to(into.dtype)  # noqa: E731
    if start + k <= groups.groups:
        for into, part in zip(intos, parts):
            into.narrow(axis, start, k).add_(same(part, into))
    else:
        index = torch.from_numpy(input_group(np.arange(start, start + k), groups.groups, groups.seed)).to(
            groups.device)
        for into, part in zip(intos, parts):
            into.index_add_(axis, index, same(part, into))


class _StackedGroups:
    """The :class:`InputGroups` of L layers with their rows in three tensors with a leading layer axis, ``unit``,
    ``vector`` (L, rows, d) float32 and ``counts`` (L, rows, 2) int64, each layer's groups holding views of them:
    :meth:`append` adds a batch's sums to every layer's rows with one kernel per tensor. The layers' groups must
    have taken the same appends (the rows of one stream in every layer)."""

    def __init__(self, groups: list[InputGroups]):
        self.groups = groups
        first = groups[0]
        if any((g.placed, g.n_inputs, g.unit.shape) != (first.placed, first.n_inputs, first.unit.shape)
               for g in groups):
            raise ValueError("the layers' per-input sums differ in their rows")
        self.tensors = {name: torch.stack([getattr(g, name) for g in groups]) for name in _SUMS}
        self._share()

    def _share(self) -> None:
        for i, g in enumerate(self.groups):
            for name, t in self.tensors.items():
                setattr(g, name, t[i])

    def _reserve(self, rows: int) -> None:
        """As :meth:`InputGroups._reserve`, for every layer at once."""
        grown = {name: _grown(old, rows, self.groups[0].groups, 1) for name, old in self.tensors.items()}
        if any(grown[name] is not self.tensors[name] for name in _SUMS):
            self.tensors = grown
            self._share()

    def append(self, at: slice, unit: torch.Tensor, vector: torch.Tensor, counts: torch.Tensor) -> None:
        """As :meth:`InputGroups.append` of k rows for each layer of ``at``: ``unit``, ``vector`` (L, k, d) and
        ``counts`` (L, k, 2), one row per input."""
        k = unit.shape[1]
        groups = self.groups[at]
        if k == 0:
            return
        first = groups[0]
        self._reserve(min(first.placed + k, first.groups))
        _place([of_layers(self.tensors[name], at) for name in _SUMS], (unit, vector, counts), first, 1)
        for g in groups:
            g.placed += k
            g.n_inputs += k
