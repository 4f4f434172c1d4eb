"""Scheduling a run's tests over pytest-xdist workers: every test over one model on one worker, and the tests that
compare models after the models' own.

``pytest -n 2 --dist loadgroup`` is meant to keep the tests of an ``xdist_group`` together, and the plugin marks
each claim test over a model with the model's id. pytest-xdist 3.8 does so by appending ``@<group>`` to
``item._nodeid`` on the workers, which pytest 9.2 no longer reads (``Item.nodeid`` is built from ``item._id``): the
controller saw no groups and spread a model's tests over both workers, so one worker computed the model's statistics
while the other waited on the cache's lock for the same entry (measured: the first two claims of the miniature GPT-2
each took 146 s, side by side). The scheduler here groups by what the controller can read, the test's
parametrisation id, which is the registry id of the model it measures.

A claim whose test on one model reads other models' statistics
(:attr:`aniso.registry.catalog.Claim.compares_models`: the encoder's profile against the decoders', a block's fixed
point against a reference model) would, among its model's tests, compute or wait for those models while the other
worker measures them. Its tests run after every model's group instead, when what they compare with is in the cache.
The controller does not import the test modules: it reads each claims module's ``@pytest.mark.claim("<id>")``
decorators from its source.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from functools import lru_cache
from pathlib import Path

__all__ = ["model_group_scheduler", "group_of", "compares_models", "AFTER_MODELS"]

#: The prefix of a scheduling group that runs after every model's group.
AFTER_MODELS = "after-the-models::"


def group_of(nodeid: str, model_ids: Collection[str],
             after_models: Callable[[str], bool] = lambda nodeid: False) -> str:
    """The scheduling group of test ``nodeid``: the ``xdist_group`` suffix where pytest-xdist could add one;
    :data:`AFTER_MODELS` and the test itself (a group of one, scheduled after the models) where ``after_models`` says
    the test compares models; else the registry id in its parametrisation (``claims/t.py::test_x[gemma-3-270m]`` ->
    ``gemma-3-270m``); else the test itself (a group of one)."""
    if "@" in nodeid:
        return nodeid.rsplit("@", 1)[-1]
    if after_models(nodeid):
        return AFTER_MODELS + nodeid
    if nodeid.endswith("]") and "[" in nodeid:
        param = nodeid[nodeid.rfind("[") + 1 : -1]
        if param in model_ids:
            return param
    return nodeid


def claims_of_module(path: Path) -> dict[str, str]:
    """Test function name -> claim id, from the ``@pytest.mark.claim("<id>")`` decorators in the source of the
    module at ``path`` (parsed, not imported); empty when the file cannot be read or parsed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "claim"
                    and deco.args and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str)):
                found[node.name] = deco.args[0].value
    return found


def compares_models(root: Path, claim_compares: Callable[[str], bool]) -> Callable[[str], bool]:
    """Whether the test ``nodeid`` (relative to ``root``) measures a claim that compares models, which
    ``claim_compares(claim id)`` says (:attr:`aniso.registry.catalog.Claim.compares_models`); each module is read
    once."""
    modules = lru_cache(maxsize=None)(lambda rel: claims_of_module(root / rel))

    def test_compares(nodeid: str) -> bool:
        path, _, name = nodeid.partition("::")
        if not path.endswith(".py") or not name:
            return False
        claim = modules(path).get(name.split("[", 1)[0])
        return claim is not None and claim_compares(claim)

    return test_compares


def model_group_scheduler(config, log, model_ids: Collection[str],
                          claim_compares: Callable[[str], bool] = lambda claim: False):
    """A pytest-xdist ``LoadScopeScheduling`` whose scopes are :func:`group_of` the tests: whole groups go to a
    worker, the groups with the most tests first (pytest-xdist's order), the groups of :data:`AFTER_MODELS` (the
    tests of the claims that ``claim_compares``) last."""
    from xdist.scheduler import LoadScopeScheduling

    ids = frozenset(model_ids)
    after = compares_models(Path(config.rootpath), claim_compares)

    class ModelGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, ids, after)

        def _assign_work_unit(self, node) -> None:
            for scope in [s for s in self.workqueue if s.startswith(AFTER_MODELS)]:
                self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return ModelGroupScheduling(config, log)
