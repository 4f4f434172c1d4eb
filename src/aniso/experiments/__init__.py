"""Experiments the suite runs itself: the untrained block of G §4 and the miniatures it trains, and what they share."""

from __future__ import annotations

import math

__all__ = ["warmup_cosine_lr"]


def warmup_cosine_lr(step: int, total_steps: int, lr: float, warmup_fraction: float, floor: float = 0.0) -> float:
    """The learning rate of optimiser step ``step`` (0-based) of ``total_steps`` for the suite's miniatures: linear
    warm-up over ``warmup_fraction`` of the steps (at least one), then cosine decay from ``lr`` to ``floor`` x
    ``lr`` at the last step."""
    warm = max(1, int(warmup_fraction * total_steps))
    if step < warm:
        return lr * (step + 1) / warm
    t = (step - warm) / max(1, total_steps - warm)
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t)))
