"""aniso: an executable, property-tested replication suite for anisotropy in Transformer representations.

The Python API (:mod:`aniso.api`) is available here, imported on first use so that ``import aniso`` stays cheap
(no torch): :func:`~aniso.api.measure` (a model's layer-wise statistics), :func:`~aniso.api.check` (the claims' verdicts
for one model), :func:`~aniso.api.claims` and :func:`~aniso.api.models` (what the catalogue and the registry hold),
the result types :class:`~aniso.api.LayerStats` and :class:`~aniso.api.ClaimResults`, and the claims runs behind the
command line (:func:`~aniso.api.run_claims`, :func:`~aniso.api.run_twins`, :class:`~aniso.api.ClaimsRun`); ``aniso.api``
itself is reachable as an attribute too.
"""

__version__ = "0.1.0"

#: Names re-exported from :mod:`aniso.api` on first access.
_API = ("measure", "check", "claims", "models", "LayerStats", "ClaimResults", "ClaimsRun", "run_claims", "run_twins",
        "RUN_EXIT_CODES")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name == "api" or name in _API:  # the submodule (``aniso.api.run_twins``) and its names, on first use
        import importlib

        api = importlib.import_module(f"{__name__}.api")  # (``from . import api`` would ask this function again)
        if name == "api":
            return api
        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aniso' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API) | {"api"})
