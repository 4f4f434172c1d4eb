"""Names the registry's schema reads from the experiments, without importing them (they need torch): the block
kinds of the untrained-block sweep, the recipe fields a vision miniature's registry row may override, and the
text miniatures' architectures."""

from __future__ import annotations

__all__ = ["BLOCK_KINDS", "VISION_RECIPE_OVERRIDES", "TEXT_ARCHS"]

#: Untrained block types of G §4 (:mod:`aniso.experiments.untrained_block`).
BLOCK_KINDS = ("bert-post-ln", "gpt2-pre-ln", "llama-pre-rmsnorm", "bert-identity-attention")

#: Recipe fields a vision miniature's ``source.config`` may override (:mod:`aniso.experiments.miniature_vision`).
VISION_RECIPE_OVERRIDES = ("image_size", "batch_size", "lr", "weight_decay", "warmup_fraction")

#: Text miniature architectures and the role each has (:mod:`aniso.experiments.miniature_text`).
TEXT_ARCHS = {"bert": "encoder", "gpt2": "decoder"}
