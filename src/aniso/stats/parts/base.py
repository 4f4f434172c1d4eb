"""What the parts of a layer's streamed statistics share."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["host", "running_max"]


def host(t: torch.Tensor) -> np.ndarray:
    """One explicit device-to-host copy of a summary tensor (O(d) or O(d²), never per token)."""
    return t.detach().to("cpu").numpy()


def running_max(abs_max: torch.Tensor, abs_max_pos: torch.Tensor, top: torch.Tensor, rows: torch.Tensor,
                pos: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per feature, the running max |x| (d,) and its sequence position (d,) after a batch whose max is ``top`` (d,)
    at rows ``rows`` (d,); ``pos`` (m,) the rows' positions, None: unknown (-1). A tie keeps the earlier batch."""
    top = top.to(abs_max.dtype)
    better = top > abs_max
    return torch.where(better, top, abs_max), torch.where(better, -1 if pos is None else pos[rows], abs_max_pos)
