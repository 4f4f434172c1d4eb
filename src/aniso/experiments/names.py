"""Names the registry's schema reads from the experiments, without importing them (they need torch): the block
kinds of the untrained-block sweep, the recipe fields a vision miniature's registry row may override, and the
text miniatures' architectures."""

from __future__ import annotations

__all__ = ["BLOCK_KINDS", "BLOCK_ATTENTION_FIELDS", "MIN_HEAD_DIM", "VISION_RECIPE_OVERRIDES", "TEXT_ARCHS"]

#: Untrained block types of G §4 (:mod:`aniso.experiments.untrained_block`).
BLOCK_KINDS = ("bert-post-ln", "gpt2-pre-ln", "llama-pre-rmsnorm", "bert-identity-attention")

#: Recipe fields a vision miniature's ``source.config`` may override (:mod:`aniso.experiments.miniature_vision`).
VISION_RECIPE_OVERRIDES = ("image_size", "batch_size", "lr", "weight_decay", "warmup_fraction")

#: Text miniature architectures and the role each has (:mod:`aniso.experiments.miniature_text`).
TEXT_ARCHS = {"bert": "encoder", "gpt2": "decoder"}

#: The config fields that size an untrained block's attention, by block kind (:data:`BLOCK_KINDS`): the width
#: (``hidden_size``; GPT-2's config takes ``n_embd`` for it too), the heads (``num_attention_heads``; GPT-2's
#: ``n_head``), each with the value the block is built with when the registry row's ``config`` does not give it, and
#: whether the config also takes ``head_dim`` and ``num_key_value_heads`` (Llama's grouped keys and values).
#: Read by the registry schema (:class:`aniso.sources.init.InitSource`), which refuses a row whose heads cannot
#: split its width before any block is built.
BLOCK_ATTENTION_FIELDS = {
    "bert-post-ln": (("hidden_size",), 768, ("num_attention_heads",), 12, False),
    "gpt2-pre-ln": (("hidden_size", "n_embd"), 768, ("num_attention_heads", "n_head"), 12, False),
    "llama-pre-rmsnorm": (("hidden_size",), 768, ("num_attention_heads",), 12, True),
    "bert-identity-attention": (("hidden_size",), 768, ("num_attention_heads",), 12, False),
}

#: The transformers model type of each untrained block's config (:data:`BLOCK_KINDS`), whose fields a row's
#: ``config`` overrides.
BLOCK_MODEL_TYPES = {"bert-post-ln": "bert", "gpt2-pre-ln": "gpt2", "llama-pre-rmsnorm": "llama",
                     "bert-identity-attention": "bert"}

#: The fewest dimensions of one attention head (hidden size / heads) the block claims read: their yardstick is the
#: 95th percentile of the cosine of two random vectors in that dimension, q95(d_head), which needs 2 at least (a
#: width of 1 leaves LayerNorm's output a zero vector, which has no cosine).
MIN_HEAD_DIM = 2
