"""Progress bars (tqdm) on extraction, training and sweeps, shown on a terminal and quiet under CI.

A bar is shown only when standard error is a terminal, the variable ``CI`` is unset and ``ANISO_PROGRESS`` is not
``0``; under pytest's output capture, in CI logs and in pipes the loops run without one.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, TypeVar

__all__ = ["bar", "enabled"]

T = TypeVar("T")


def enabled() -> bool:
    """Whether progress bars are shown here (see the module docstring)."""
    if os.environ.get("ANISO_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    if os.environ.get("CI"):
        return False
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def bar(iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterable[T]:
    """``iterable`` with a tqdm bar labelled ``desc`` when :func:`enabled`, else ``iterable`` itself."""
    if not enabled():
        return iterable
    from tqdm.std import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, dynamic_ncols=True)
