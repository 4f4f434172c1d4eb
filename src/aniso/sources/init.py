"""Source kind ``init``: a freshly initialised Transformer block built from a transformers config (no weights).

Such an entry is measured by the untrained-block experiment of G §4 (:mod:`aniso.experiments.untrained_block`,
through :class:`aniso.stats.pipeline.BlockSweepProvider`), not by hidden-state statistics over a corpus, so
:func:`load` refuses to give it as a model.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import Field

from ..experiments.names import BLOCK_KINDS
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind

__all__ = ["InitSource", "KIND", "BLOCK_KINDS"]


class InitSource(Strict):
    """A freshly initialised block of type ``block`` (one of :data:`BLOCK_KINDS`); ``config`` overrides fields of
    its transformers config."""

    kind: Literal["init"]
    block: Literal[BLOCK_KINDS]  # type: ignore[valid-type]
    config: dict[str, Union[int, float, str, bool]] = Field(default_factory=dict)


def fingerprint(entry, ctx: SourceContext) -> str:
    return f"init:{entry.source.block}:{sorted(entry.source.config.items())}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    raise ModelUnavailable(f"{entry.id}: an untrained block (source kind init) is measured by its bias-norm sweep, "
                           "not by hidden-state statistics over inputs")


KIND = SourceKind("init", InitSource, fingerprint, load, needs=(("modality", "embeddings"),),
                  is_a="an untrained block", trained=lambda src: False)
