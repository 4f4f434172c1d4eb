"""Source kind ``init``: a freshly initialised Transformer block built from a transformers config (no weights).

Such an entry is measured by the untrained-block experiment of G §4 (:mod:`aniso.experiments.untrained_block`,
through :class:`aniso.stats.pipeline.BlockSweepProvider`), not by hidden-state statistics over a corpus, so
:func:`load` refuses to give it as a model.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import Field, ValidationInfo, field_validator

from ..experiments.names import BLOCK_ATTENTION_FIELDS, BLOCK_KINDS, MIN_HEAD_DIM
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind

__all__ = ["InitSource", "KIND", "BLOCK_KINDS"]


class InitSource(Strict):
    """A freshly initialised block of type ``block`` (one of :data:`BLOCK_KINDS`); ``config`` overrides fields of
    its transformers config."""

    kind: Literal["init"]
    block: Literal[BLOCK_KINDS]  # type: ignore[valid-type]
    config: dict[str, Union[int, float, str, bool]] = Field(default_factory=dict)

    @field_validator("config")
    @classmethod
    def _heads_split_the_width(cls, value: dict, info: ValidationInfo) -> dict:
        """The block's width (``hidden_size``) is a whole number that its attention heads (``num_attention_heads``)
        split into heads of at least :data:`MIN_HEAD_DIM` dimensions (the claims' yardstick q95(d_head) needs 2), with
        the fields the row does not give at the block's own values (:data:`BLOCK_ATTENTION_FIELDS`): refused here, at
        registry load, in the row's words, rather than by transformers or numpy when the sweep builds the block."""
        block = info.data.get("block")
        if block not in BLOCK_ATTENTION_FIELDS:
            return value
        from ..experiments.names import BLOCK_MODEL_TYPES
        from .detect import misspelt_config_key

        misspelt = misspelt_config_key(value, BLOCK_MODEL_TYPES.get(block), "")
        if misspelt is not None:  # `hidden_sise: 64` measured the default block without a word
            raise ValueError(misspelt)
        width_names, width_default, head_names, heads_default, grouped = BLOCK_ATTENTION_FIELDS[block]

        def given(names: tuple[str, ...], default: int) -> tuple[str, int]:
            name = next((n for n in names if n in value), names[0])
            number = value.get(name, default)
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{name} is {number!r}: a whole number of at least 1")
            return name, number

        width_name, width = given(width_names, width_default)
        heads_name, heads = given(head_names, heads_default)
        head_dim = value.get("head_dim") if grouped else None
        if head_dim is None:
            if width % heads:
                raise ValueError(f"{width_name} {width} is not a multiple of {heads_name} {heads}: each attention head "
                                 f"of a {block} block takes {width_name} / {heads_name} dimensions; give a "
                                 f"{width_name} that {heads} divides (e.g. {max(heads * MIN_HEAD_DIM, width // heads * heads)})"
                                 f" or a {heads_name} that divides {width}")
            head_dim, where = width // heads, f"{width_name} {width} / {heads_name} {heads}"
        else:
            where = "head_dim"
        if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < MIN_HEAD_DIM:
            raise ValueError(f"{where} gives attention heads of {head_dim!r} dimension(s); the block claims need at "
                             f"least {MIN_HEAD_DIM} (their yardstick is q95 of the cosine in a head's dimension): give "
                             f"a {width_name} of at least {MIN_HEAD_DIM} x {heads_name}")
        kv = value.get("num_key_value_heads") if grouped else None
        if kv is not None and (isinstance(kv, bool) or not isinstance(kv, int) or kv < 1 or heads % kv):
            raise ValueError(f"num_key_value_heads {kv!r} does not divide {heads_name} {heads}: each key/value head "
                             f"serves {heads_name} / num_key_value_heads query heads; give a divisor of {heads}")
        return value


def fingerprint(entry, ctx: SourceContext) -> str:
    return f"init:{entry.source.block}:{sorted(entry.source.config.items())}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    raise ModelUnavailable(f"{entry.id}: an untrained block (source kind init) is measured by its bias-norm sweep, "
                           "not by hidden-state statistics over inputs")


KIND = SourceKind("init", InitSource, fingerprint, load, needs=(("modality", "embeddings"),),
                  is_a="an untrained block", trained=lambda src: False)
