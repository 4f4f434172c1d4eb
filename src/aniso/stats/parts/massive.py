"""Massive activations of one layer (Sun et al. 2024): the largest |x| per feature, where it was seen, and the first
tokens' sums that say how constant a feature is on the first token of each sequence."""

from __future__ import annotations

import functools

import torch

__all__ = ["kept_maxima", "massive_rows"]


def kept_maxima(ax: torch.Tensor, top: torch.Tensor, rows: torch.Tensor, masks: list[torch.Tensor],
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
