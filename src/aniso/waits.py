"""Work on host tensors, marked: what the counts of the device's launches and waits leave out.

The statistics run on the model's device; a few small steps run on the host, on tensors that are there already
(the tokenizer's attention mask; values read back from the device in one copy, such as a Lanczos iteration's α and
β). On a GPU they launch no kernel and wait for nothing. On a CPU, where :mod:`aniso.bench.dispatch` counts the
operators and host synchronisations a GPU would see, every tensor is a host tensor, and the same steps would be
counted as launches and waits. :func:`on_host` marks them, so that the count can leave them out; the work itself is
unchanged. What a marked block may do: torch operations on tensors that are on the host, whatever the run's device.
The read that brings a device value to the host stays outside the block (it is the wait, and it is counted).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["HOST_RANGE", "on_host", "working_on_host"]

#: The torch profiler range of a block marked by :func:`on_host` (operators inside it are not top-level ones).
HOST_RANGE = "aniso::on_host"

_ON_HOST = contextvars.ContextVar("aniso_on_host", default=False)


@contextmanager
def on_host() -> Iterator[None]:
    """Mark the torch work inside as work on host tensors only: a profiler range named :data:`HOST_RANGE`, and
    :func:`working_on_host` True while inside (per thread and task: a context variable). Raises nothing."""
    import torch

    token = _ON_HOST.set(True)
    try:
        with torch.profiler.record_function(HOST_RANGE):
            yield
    finally:
        _ON_HOST.reset(token)


def working_on_host() -> bool:
    """Whether the caller runs inside :func:`on_host`."""
    return _ON_HOST.get()
