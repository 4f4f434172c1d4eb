"""Scheduling a run's tests over pytest-xdist workers: every test over one model on one worker.

``pytest -n 2 --dist loadgroup`` is meant to keep the tests of an ``xdist_group`` together, and the plugin marks
each claim test over a model with the model's id. pytest-xdist 3.8 does so by appending ``@<group>`` to
``item._nodeid`` on the workers, which pytest 9.2 no longer reads (``Item.nodeid`` is built from ``item._id``): the
controller saw no groups and spread a model's tests over both workers, so one worker computed the model's statistics
while the other waited on the cache's lock for the same entry (measured: the first two claims of the miniature GPT-2
each took 146 s, side by side). The scheduler here groups by what the controller can read, the test's
parametrisation id, which is the registry id of the model it measures.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["model_group_scheduler", "group_of"]


def group_of(nodeid: str, model_ids: Collection[str]) -> str:
    """The scheduling group of test ``nodeid``: the ``xdist_group`` suffix where pytest-xdist could add one, else the
    registry id in its parametrisation (``claims/t.py::test_x[gemma-3-270m]`` -> ``gemma-3-270m``), else the test
    itself (a group of one)."""
    if "@" in nodeid:
        return nodeid.rsplit("@", 1)[-1]
    if nodeid.endswith("]") and "[" in nodeid:
        param = nodeid[nodeid.rfind("[") + 1 : -1]
        if param in model_ids:
            return param
    return nodeid


def model_group_scheduler(config, log, model_ids: Collection[str]):
    """A pytest-xdist ``LoadScopeScheduling`` whose scopes are :func:`group_of` the tests: whole groups go to a
    worker, the groups with the most tests first (pytest-xdist's order)."""
    from xdist.scheduler import LoadScopeScheduling

    ids = frozenset(model_ids)

    class ModelGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, ids)

    return ModelGroupScheduling(config, log)
