"""Per-input sums of one layer (Σu, Σx and the counts of each paragraph, recording or image), what a bootstrap over
the inputs resamples (:func:`aniso.stats.uncertainty.bootstrap_stats`), kept in a fixed budget of rows."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["InputGroups", "INPUT_GROUPS", "input_group"]


#: Up to this many inputs in one update, the per-input sums are one-hot rows of the update's GEMM (k·m weights);
#: beyond it, a segment sum (``index_add_``), so a caller passing many inputs at once never builds a k × m matrix.
_ONE_HOT_INPUTS = 64


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
