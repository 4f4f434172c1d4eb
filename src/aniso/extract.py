"""Forward passes that yield the hidden states of every layer, padding excluded.

Layer convention (claims catalogue, "Layer conventions"): the embedding output
is layer 0, then one hidden state per block. Encoder–decoder models give the
encoder layers then the decoder layers, the decoder run teacher-forced on the
same input (Godey et al. 2024, Fig. 1 note).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

__all__ = ["Batch", "layer_names", "iter_text_hidden_states"]


@dataclass
class Batch:
    """The hidden states of one batch: ``layers[i]`` has shape (m_i, d_i), float32, one row per real token."""

    layers: list[torch.Tensor]
    n_sequences: int


def layer_names(model) -> list[str]:
    """Names of the layers :func:`iter_text_hidden_states` yields, in order."""
    cfg = model.config
    if getattr(cfg, "is_encoder_decoder", False):
        n_enc = getattr(cfg, "num_layers", None) or cfg.encoder_layers
        n_dec = getattr(cfg, "num_decoder_layers", None) or getattr(cfg, "decoder_layers", n_enc)
        return [f"enc.{i}" for i in range(n_enc + 1)] + [f"dec.{i}" for i in range(n_dec + 1)]
    return [str(i) for i in range(cfg.num_hidden_layers + 1)]


def _prepare_tokenizer(tokenizer) -> None:
    tokenizer.padding_side = "right"
    if tokenizer.pad_token is None:
        # Decoders such as GPT-2 have no pad token; padded positions are masked out anyway.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token


def _decoder_inputs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    start = model.config.decoder_start_token_id
    if start is None:
        start = model.config.pad_token_id
    dec_ids = torch.cat([torch.full_like(input_ids[:, :1], start), input_ids[:, :-1]], dim=1)
    pad = model.config.pad_token_id
    if pad is not None:
        dec_ids = dec_ids.masked_fill(dec_ids == -100, pad)
    # Shifted right, the decoder input has as many real positions as the input: the same mask.
    return dec_ids, attention_mask.clone()


@torch.inference_mode()
def iter_text_hidden_states(
    model, tokenizer, texts: Sequence[str], *, batch_size: int = 16, max_length: int = 128, device: str = "cpu"
) -> Iterator[Batch]:
    """Run ``texts`` through ``model`` and yield the real-token hidden states of every layer, batch by batch.

    Sequences are tokenised with the model's own tokenizer (special tokens
    included, as in the model's normal use), truncated to ``max_length``
    tokens, and batched in order of length to limit padding. The statistics
    downstream do not depend on the order.

    Parameters
    ----------
    model : a transformers ``PreTrainedModel`` (encoder, decoder or encoder–decoder)
    tokenizer : its tokenizer
    texts : the sequences
    batch_size : sequences per forward pass
    max_length : tokens per sequence at most
    device : torch device for the forward pass

    Yields
    ------
    :class:`Batch` with one (m, d) float32 CPU tensor per layer (see :func:`layer_names`).

    Raises
    ------
    ValueError if batch_size or max_length < 1.
    """
    if batch_size < 1 or max_length < 1:
        raise ValueError(f"batch_size and max_length must be >= 1, got {batch_size} and {max_length}")
    _prepare_tokenizer(tokenizer)
    model.to(device)
    lengths = [len(ids) for ids in tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    enc_dec = getattr(model.config, "is_encoder_decoder", False)
    accepted = {"input_ids", "attention_mask", "token_type_ids"}
    for start in range(0, len(order), batch_size):
        chunk = [texts[i] for i in order[start : start + batch_size]]
        enc = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        inputs = {k: v.to(device) for k, v in enc.items() if k in accepted}
        mask = inputs["attention_mask"].bool()
        if enc_dec:
            dec_ids, dec_mask = _decoder_inputs(model, inputs["input_ids"], inputs["attention_mask"])
            out = model(**inputs, decoder_input_ids=dec_ids, decoder_attention_mask=dec_mask, output_hidden_states=True)
            states = [(h, mask) for h in out.encoder_hidden_states] + [(h, dec_mask.bool()) for h in out.decoder_hidden_states]
        else:
            out = model(**inputs, output_hidden_states=True)
            states = [(h, mask) for h in out.hidden_states]
        yield Batch([h[m].float().cpu() for h, m in states], len(chunk))
