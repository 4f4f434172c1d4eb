"""A uniform sample of one layer's vectors (Vitter's algorithm R), for the estimators that need the vectors
themselves: TwoNN (Facco et al. 2017; R §2.4), the sampled-pair avg cos (G §3.3) and the standardised avg cos of
rogue dimensions (Timkey & van Schijndel 2021)."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["reservoir_update"]


def reservoir_update(reservoir, count: int, x, rng: np.random.Generator) -> None:
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
