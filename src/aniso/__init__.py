"""aniso: an executable, property-tested replication suite for anisotropy in Transformer representations.

The Python API (:mod:`aniso.api`) is available here, imported on first use so that ``import aniso`` stays cheap
(no torch): :func:`~aniso.api.measure` (a model's layer-wise statistics), :func:`~aniso.api.check` (the claims' verdicts
for one model), :func:`~aniso.api.claims` and :func:`~aniso.api.models` (what the catalogue and the registry hold),
and the result types :class:`~aniso.api.LayerStats` and :class:`~aniso.api.ClaimResults`.
"""

__version__ = "0.1.0"

#: Names re-exported from :mod:`aniso.api` on first access.
_API = ("measure", "check", "claims", "models", "LayerStats", "ClaimResults")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from . import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aniso' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
