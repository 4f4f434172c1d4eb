"""The launching-operator count of :mod:`aniso.bench.dispatch`: views and allocations are not launches; a view-kind
operator that copies or converts is."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from aniso.bench.dispatch import is_view_operator, launches


@pytest.mark.parametrize("name", ["slice", "select", "transpose", "unsqueeze", "view", "reshape", "to", "expand",
                                  "mT", "alias"])
def test_views_are_read_from_the_schema(name):
    assert is_view_operator(name)


@pytest.mark.parametrize("name", ["add_", "copy_", "mm", "matmul", "sum", "zeros", "index", "no_such_operator"])
def test_working_operators_are_not_views(name):
    assert not is_view_operator(name)


def _top(fn):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]


def test_launches_counts_work_not_views():
    x = torch.randn(4, 6)
    cases = {
        "reshape of a contiguous tensor": (lambda: x.reshape(6, 4), 0),
        "reshape that copies": (lambda: x.t().reshape(24), 1),
        "to of the same dtype": (lambda: x.to(torch.float32), 0),
        "to another dtype": (lambda: x.to(torch.float64), 1),
        "slice and transpose": (lambda: x[1:3].t(), 0),
        "empty": (lambda: torch.empty(3), 0),
        "zeros": (lambda: torch.zeros(3), 1),
        "add_": (lambda: x.add_(1.0), 1),
    }
    for what, (fn, expected) in cases.items():
        top = _top(fn)
        assert sum(map(launches, top)) == expected, (what, [e.name for e in top])


def test_launches_is_the_same_under_the_host_sync_counter():
    """count_variant profiles under HostSyncCounter's dispatch modes, whose own events sit below each operator."""
    from aniso.bench.dispatch import HostSyncCounter

    x = torch.randn(4, 6)

    def fn():
        x[1:3].t().reshape(6, 2)
        x.reshape(6, 4).to(torch.float32)
        x.sum()

    plain = sum(map(launches, _top(fn)))
    with HostSyncCounter():
        watched = sum(map(launches, _top(fn)))
    assert plain == watched == 1  # the sum; the slice, transpose, reshape and to are views
