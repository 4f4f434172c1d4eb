"""A tiny GPT-2 in memory with its subword tokenizer, for the tests of the Python API's in-memory models."""

from __future__ import annotations


def tiny_gpt2():
    """(model, tokenizer): a 2-layer GPT-2 of width 32 and vocabulary 300, seeded (torch seed 0), in eval mode."""
    import torch
    from transformers import GPT2Config, GPT2Model

    from aniso.extract.modalities import _subword_tokenizer

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=300, n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=2, eos_token_id=3)
    return GPT2Model(cfg).eval(), _subword_tokenizer(300)
