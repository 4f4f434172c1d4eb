"""Progress bars (tqdm) on extraction, training and sweeps, shown on a terminal and quiet under CI.

A bar is shown only when standard error is a terminal, the variable ``CI`` is unset and ``ANISO_PROGRESS`` is not
``0``; under pytest's output capture, in CI logs and in pipes the loops run without one. Inside :func:`shown`, the
Python API's ``progress=`` argument decides instead of the terminal test (a notebook's standard error is no terminal).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterable, Iterator, TypeVar

__all__ = ["bar", "enabled", "shown"]

T = TypeVar("T")

#: Set by :func:`shown`: True shows bars without a terminal, False never shows them, None leaves it to the terminal.
_FORCED: bool | None = None


@contextlib.contextmanager
def shown(flag: bool | None) -> Iterator[None]:
    """Within the block, bars are shown when ``flag`` is True (unless ``CI`` is set or ``ANISO_PROGRESS`` is ``0``),
    never when it is False, and as the module docstring says when None."""
    global _FORCED
    before, _FORCED = _FORCED, flag
    try:
        yield
    finally:
        _FORCED = before


def enabled() -> bool:
    """Whether progress bars are shown here (see the module docstring and :func:`shown`)."""
    if _FORCED is False:
        return False
    if os.environ.get("ANISO_PROGRESS", "").strip().lower() in ("0", "false", "no", "off"):
        return False
    if os.environ.get("CI"):
        return False
    if _FORCED:
        return True
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def bar(iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterable[T]:
    """``iterable`` with a tqdm bar labelled ``desc`` when :func:`enabled`, else ``iterable`` itself."""
    if not enabled():
        return iterable
    from tqdm.std import tqdm

    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    return _counted(iterable, tqdm(desc=desc, total=total, unit=unit, leave=False, dynamic_ncols=True))


def _counted(iterable: Iterable[T], progress) -> Iterator[T]:
    """Yield the items of ``iterable``, advancing ``progress``, without keeping a reference to the item last
    yielded while suspended (tqdm's own iterator keeps one until the next item is made: a batch of hidden states
    would then live through the next forward pass)."""
    with progress:
        for item in iterable:
            box = [item]
            del item
            yield box.pop()
            progress.update(1)
