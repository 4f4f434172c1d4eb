"""Forward passes that yield the hidden states of every layer, padding excluded.

Layer convention (claims catalogue, "Layer conventions"): the embedding output
is layer 0, then one hidden state per block. Encoder–decoder models give the
encoder layers then the decoder layers, the decoder run teacher-forced on the
same input (Godey et al. 2024, Fig. 1 note).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from functools import partial
from dataclasses import dataclass

import numpy as np
import torch

from ..waits import on_host
from .attention import FirstTokenAttention, first_column, first_token_sums

__all__ = ["Batch", "layer_names", "tokens_read", "iter_text_hidden_states", "iter_speech_hidden_states",
           "iter_vision_hidden_states", "speech_layer_names", "AttentionSite", "attention_sites",
           "capture_queries_keys", "first_token_attention_sums"]


@dataclass
class Batch:
    """The hidden states of one batch: ``layers[i]`` has shape (m_i, d_i), one row per real token (text), real audio
    frame (speech), patch/token (vision Transformers) or image (CNNs: the flattened C·H·W map), in the model's dtype
    and on the model's device (padding is removed there; nothing is copied to the host).

    ``all_frames`` (speech only) holds the same layers with padding frames included, for the all-frames value
    the claims catalogue asks to report next to the real-frames one. ``without_first`` (text models without a
    decoder) holds the same layers without the first real token of each sequence (the attention-sink position of
    decoders), for the profiles reported with and without it. ``attention_sums`` (text, when asked for) holds, per
    attention layer, the attention on the first real token reduced inside the forward pass (by default two (heads,)
    tensors, :func:`aniso.extract.attention.first_token_sums`; with an ``attention_reduce``, what it made of that
    layer's probabilities (b, heads, t, t)), so no attention map outlives its layer; ``mask`` is the (b, t) bool
    mask of real tokens.
    ``inputs`` labels the rows of each layer with the input they came from (0 .. ``n_sequences`` - 1: paragraph,
    recording, image), (m_i,) int64, for statistics kept per input (bootstrap intervals); None: not labelled.
    ``positions`` (text) gives each row's position among the real tokens of its sequence (0: its first token).
    ``final_norm`` holds the rows entering and leaving the model's final normalisation (:func:`final_norm_of`), where
    asked for and the model has one. ``sources`` gives, for each of the batch's ``n_sequences`` inputs, its index in
    the inputs given to the generator (texts are run in order of length); None: the batches take the inputs in the
    order given.

    The generators drop their own references to a batch (and to the model output it came from) before they run the
    next forward pass; a consumer that drops its reference too keeps at most one batch's tensors alive at a time.
    """

    layers: list[torch.Tensor]
    n_sequences: int
    all_frames: list[torch.Tensor] | None = None
    without_first_states: Callable[[], list[torch.Tensor]] | None = None
    attention_sums: list | None = None
    mask: torch.Tensor | None = None
    inputs: list[torch.Tensor] | None = None
    positions: list[torch.Tensor] | None = None
    final_norm: tuple[torch.Tensor, torch.Tensor] | None = None
    sources: np.ndarray | None = None

    @property
    def without_first(self) -> list[torch.Tensor] | None:
        """The layers without the first real token of each sequence, copied out only when asked for."""
        return None if self.without_first_states is None else self.without_first_states()


#: Where a model keeps its final normalisation (applied to the last layer's output), by family: Llama, Gemma,
#: Mistral, Qwen (norm), GPT-2, GPT-J, BLOOM (ln_f), OPT (decoder.final_layer_norm), Whisper's encoder (layer_norm),
#: GPT-NeoX (final_layer_norm). Post-LN encoders (BERT, ALBERT) have none apart from their last layer's own.
_FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "decoder.final_layer_norm", "layer_norm", "final_layernorm")


def final_norm_of(model) -> tuple[str, torch.nn.Module] | None:
    """``(name, module)`` of the model's final normalisation (LayerNorm or RMSNorm after the last layer), or None.
    A model with a task head (``GPT2LMHeadModel``) is searched in its base model."""
    base = getattr(model, "base_model", model)
    for name in _FINAL_NORMS:
        try:
            module = base.get_submodule(name)
        except AttributeError:
            continue
        if "norm" in type(module).__name__.lower():
            return name, module
    return None


class _FinalNormHook:
    """Keeps the input and output of the final normalisation of the latest forward pass."""

    def __init__(self, module: torch.nn.Module):
        self._io = None
        self.handle = module.register_forward_hook(self._keep)

    def _keep(self, module, args, out) -> None:
        self._io = (args[0].detach(), (out[0] if isinstance(out, tuple) else out).detach())

    def take(self, mask: torch.Tensor, index: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The (rows, d) states entering and leaving the norm at the (b, t) ``mask`` (``index``: its flat indices,
        :func:`_real_tokens`, where already found); None if it did not run."""
        if self._io is None:
            return None
        pre, post = self._io
        self._io = None
        if pre.shape[:2] != mask.shape:
            return None
        if index is None:
            return pre[mask], post[mask]
        return tuple(h.reshape(-1, h.shape[-1]).index_select(0, index) for h in (pre, post))


def _select_rows(states: list[torch.Tensor], mask: torch.Tensor) -> list[torch.Tensor]:
    """The rows of each (b, t, d) state where the (b, t) ``mask`` is set, where the states are."""
    return [h[mask] for h in states]


#: model_type → (class-name suffix, output index) of the self-attention modules of models whose transformers code
#: has no output-recording table (it still returns ``(output, attention probabilities)`` from each attention module
#: under eager attention, the legacy ``output_attentions`` path): GPT-J, Falcon and BLOOM in transformers 5.
_LEGACY_ATTENTION: dict[str, tuple[str, int]] = {"gptj": ("GPTJAttention", 1), "falcon": ("FalconAttention", 1),
                                                  "bloom": ("BloomAttention", 1)}


def _attention_targets(model) -> list[tuple[type | None, str | None, str | None, int]]:
    """(class, class-name suffix, layer name, output index) of the modules that return attention probabilities,
    from transformers' own output-recording tables (``_can_record_outputs["attentions"]``) of every sub-model, else
    from :data:`_LEGACY_ATTENTION` for the model types without such a table."""
    legacy = _LEGACY_ATTENTION.get(getattr(getattr(model, "config", None), "model_type", None))
    targets = [(None, legacy[0], None, legacy[1])] if legacy else []
    for module in model.modules():
        table = getattr(type(module), "_can_record_outputs", None)
        if not isinstance(table, dict) or table.get("attentions") is None:
            continue
        specs = table["attentions"] if isinstance(table["attentions"], list) else [table["attentions"]]
        for spec in specs:
            if isinstance(spec, type):
                targets.append((spec, None, None, 1))
            elif isinstance(spec, str):
                targets.append((None, spec, None, 1))
            else:  # transformers' OutputRecorder
                targets.append((getattr(spec, "target_class", None), getattr(spec, "class_name", None),
                                getattr(spec, "layer_name", None), int(getattr(spec, "index", 1))))
    return targets


def attention_modules(model) -> list[tuple[str, torch.nn.Module, int]]:
    """``(name, module, index)`` of every self-attention module of ``model`` whose output tuple holds its attention
    probabilities (b, heads, t, t) at ``index`` under eager attention, in module order (one per layer).

    Found from transformers' output-recording tables, the same hooks ``output_attentions=True`` uses; cross-attention
    is not included. Returns [] for a model without such a table."""
    targets = _attention_targets(model)
    found = []
    for name, module in model.named_modules():
        for cls, class_name, layer_name, index in targets:
            if cls is not None and not isinstance(module, cls):
                continue
            if cls is None and (class_name is None or not type(module).__name__.endswith(class_name)):
                continue
            if layer_name is not None and layer_name not in name:
                continue
            found.append((name, module, index))
            break
    return found


class _AttentionReducer:
    """Forward hooks that reduce each attention layer's probabilities where they are produced, so that the extra
    memory is one layer's map at a time (never every layer's, as ``output_attentions=True`` keeps)."""

    def __init__(self, model, reduce):
        self.modules = attention_modules(model)
        if not self.modules:
            raise ValueError(f"{type(model).__name__}: no attention module found to measure attention probabilities "
                             "(transformers' _can_record_outputs has no 'attentions' entry)")
        self.reduce = reduce
        self.mask: torch.Tensor | None = None
        self.sums: list = [None] * len(self.modules)
        self.handles = [module.register_forward_hook(self._hook(i, index))
                        for i, (_, module, index) in enumerate(self.modules)]

    def _hook(self, i: int, index: int):
        def keep(module, args, out):
            probs = out[index] if isinstance(out, (tuple, list)) and len(out) > index else None
            if probs is None:
                raise RuntimeError(f"{self.modules[i][0]} returned no attention probabilities: the model must run "
                                   "transformers' eager attention")
            self.sums[i] = self.reduce(probs.detach(), self.mask, i)
        return keep

    def reading(self, mask: torch.Tensor):
        """Context manager around one forward pass over a batch whose (b, t) bool mask of real tokens is ``mask``."""
        self.mask = mask
        return nullcontext()

    def take(self) -> list:
        got, self.sums = self.sums, [None] * len(self.modules)
        return got

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def place(model, device: str) -> "torch.device | str":
    """Put ``model`` on ``device`` and return where its inputs go. A model that accelerate has spread over several
    devices (``device_map``, its ``hf_device_map``) stays where it is; its inputs go to the device of its first
    weights (the embeddings)."""
    if getattr(model, "hf_device_map", None):
        return next(model.parameters()).device
    model.to(device)
    return device


def _outputs_by_name(model) -> dict:
    """The keyword that asks ``model`` for its outputs by name (``out.hidden_states``), where its config asks for a
    tuple (``config.return_dict = False``: a model loaded with it, or set so in memory): ``{"return_dict": True}``,
    which transformers' models take; else nothing (a module answering like one, the tapped CNNs, takes no such
    keyword). The same forward pass either way: only the form of its outputs differs."""
    return {"return_dict": True} if getattr(getattr(model, "config", None), "return_dict", True) is False else {}


def layer_names(model) -> list[str]:
    """Names of the layers :func:`iter_text_hidden_states` yields, in order."""
    cfg = model.config
    if cfg.model_type == "canine":
        # Character embeddings and the initial character encoder, the deep stack on downsampled positions
        # (its input, then each layer), then the upsampled characters and the final character encoder.
        return ["char.emb", "char.init"] + [f"down.{i}" for i in range(cfg.num_hidden_layers + 1)] + \
            ["char.up", "char.final"]
    if getattr(cfg, "is_encoder_decoder", False):
        n_enc = getattr(cfg, "num_layers", None) or cfg.encoder_layers
        n_dec = getattr(cfg, "num_decoder_layers", None) or getattr(cfg, "decoder_layers", n_enc)
        return [f"enc.{i}" for i in range(n_enc + 1)] + [f"dec.{i}" for i in range(n_dec + 1)]
    return [str(i) for i in range(cfg.num_hidden_layers + 1)]


def _prepare_tokenizer(tokenizer) -> dict:
    """Pad and truncate on the right, whatever the caller's tokenizer was set to (a tokenizer with
    ``truncation_side = "left"`` kept the last ``max_length`` tokens of each text under the same inputs fingerprint):
    the same texts give the same tokens. Returns the sides it had, for :func:`_restore_tokenizer`."""
    sides = {k: getattr(tokenizer, k) for k in ("padding_side", "truncation_side") if hasattr(tokenizer, k)}
    tokenizer.padding_side = "right"
    tokenizer.truncation_side = "right"
    if tokenizer.pad_token is None:
        # Decoders such as GPT-2 have no pad token; padded positions are masked out anyway.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return sides


def _restore_tokenizer(tokenizer, sides: dict) -> None:
    for key, value in sides.items():
        setattr(tokenizer, key, value)


def _no_autocast(device):
    """A context turning off a caller's ``torch.autocast`` for the forward pass on ``device``: under
    ``torch.autocast("cpu", dtype=torch.bfloat16)`` a float32 model computed in bfloat16 and its numbers were recorded
    as float32's. The dtype recorded (the weights') is the one computed in."""
    kind = device.type if isinstance(device, torch.device) else torch.device(device).type
    return torch.autocast(kind, enabled=False)


def _decoder_inputs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    start = getattr(model.config, "decoder_start_token_id", None)
    if start is None:
        start = model.config.pad_token_id
    dec_ids = torch.cat([torch.full_like(input_ids[:, :1], start), input_ids[:, :-1]], dim=1)
    pad = model.config.pad_token_id
    if pad is not None:
        dec_ids = dec_ids.masked_fill(dec_ids == -100, pad)
    # Shifted right, the decoder input has as many real positions as the input: the same mask.
    return dec_ids, attention_mask.clone()


def _resolution_mask(model, mask: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """The token mask at the resolution of hidden state ``h``: CANINE's deep layers run on a sequence
    downsampled by ``config.downsampling_rate``, where a position is real if any character it covers is."""
    if h.shape[1] == mask.shape[1]:
        return mask
    rate = getattr(model.config, "downsampling_rate", None)
    if rate and hasattr(model, "_downsample_attention_mask"):
        down = model._downsample_attention_mask(mask.float(), downsampling_rate=rate).bool()
        if down.shape[1] == h.shape[1]:
            return down
    raise RuntimeError(f"{type(model).__name__}: a hidden state of length {h.shape[1]} does not match the "
                       f"input mask of length {mask.shape[1]}")


def tokens_read(model, max_length: int) -> int:
    """Tokens per sequence a model reads when ``max_length`` are asked: ``max_length``, or fewer where the model's
    config has fewer learnt positions (``max_position_embeddings`` or ``n_positions``). Raises nothing."""
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
    return min(max_length, positions) if isinstance(positions, int) and positions > 0 else max_length


def iter_text_hidden_states(
    model, tokenizer, texts: Sequence[str], *, batch_size: int = 16, max_length: int = 128, device: str = "cpu",
    attentions: bool = False, final_norm: bool = False, attention_reduce=None,
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
    max_length : tokens per sequence at most (and at most the model's learnt positions,
        ``max_position_embeddings`` or ``n_positions``)
    device : torch device for the forward pass
    attentions : also measure the attention on the first real token (decoder-only and encoder-only models): by
        default on the model's own attention (SDPA / flash), each layer's (token_sum, sequence_sum) of
        :func:`aniso.extract.attention.first_token_sums` from the queries and keys its attention call receives
        (:class:`aniso.extract.attention.FirstTokenAttention`; ``Batch.attention_sums`` is None for a model whose
        attention gives neither such a call nor a map). With ``attention_reduce``, the model is switched to
        transformers' eager attention and each layer's whole map is reduced by ``attention_reduce(probs (b, H, t, t),
        mask (b, t), layer index)`` inside its forward hook; only the result is kept, in ``Batch.attention_sums``
    final_norm : also return the states entering and leaving the model's final normalisation
        (:func:`final_norm_of`; encoder-only and decoder-only models that have one)

    Yields
    ------
    :class:`Batch` with one (m, d) tensor per layer (see :func:`layer_names`), in the model's dtype, on ``device``.
    Each batch's forward pass runs under ``torch.inference_mode`` with any ``torch.autocast`` of the caller turned
    off (the weights' dtype is the one computed in); the tokenizer pads and truncates on the right (its
    ``padding_side`` and ``truncation_side`` are restored when the generator ends); the generator keeps no reference to a batch it
    has yielded (see :class:`Batch`).

    Raises
    ------
    ValueError if batch_size or max_length < 1, or attentions are asked of an encoder-decoder model.
    """
    if batch_size < 1 or max_length < 1:
        raise ValueError(f"batch_size and max_length must be >= 1, got {batch_size} and {max_length}")
    if attentions:
        if getattr(model.config, "is_encoder_decoder", False):
            raise ValueError(f"{type(model).__name__}: attention probabilities are measured on encoder-only and "
                             "decoder-only models")
        if attention_reduce is not None and getattr(model.config, "_attn_implementation", "eager") != "eager":
            model.set_attn_implementation("eager")  # a reduction of the whole map needs the map
            if getattr(model.config, "_attn_implementation", "eager") != "eager":
                # a model that cannot switch through transformers' attention interface (Falcon in transformers 5)
                # reads its config's implementation at each forward: the eager branch computes the probabilities
                model.config._attn_implementation = "eager"
    sides = _prepare_tokenizer(tokenizer)
    try:
        yield from _text_states(model, tokenizer, texts, batch_size, max_length, device, attentions, final_norm,
                                attention_reduce)
    finally:
        _restore_tokenizer(tokenizer, sides)


def _text_states(model, tokenizer, texts, batch_size, max_length, device, attentions, final_norm,
                 attention_reduce) -> Iterator[Batch]:
    device = place(model, device)
    max_length = tokens_read(model, max_length)  # a model with learnt positions reads no further
    if getattr(model.config, "downsampling_rate", None):
        # CANINE's strided downsampling mixes padding into the last real position: one sequence per pass.
        batch_size = 1
    order = _length_order(tokenizer, texts, max_length)
    enc_dec = getattr(model.config, "is_encoder_decoder", False)
    accepted = {"input_ids", "attention_mask", "token_type_ids"}
    # a forward the user set on the instance, of named parameters only (a wrapper): what it takes, or one line
    takes = _forward_parameters(model) if "forward" in vars(model) else None
    if takes is not None:
        if not {"input_ids", "attention_mask"} <= takes:
            raise ValueError(f"model: its forward takes ({', '.join(sorted(takes))}), without "
                             f"{' and '.join(sorted({'input_ids', 'attention_mask'} - takes))}: the hidden states are "
                             "measured on real tokens only, which the attention mask tells from padding; give a model "
                             "whose forward takes input_ids and attention_mask")
        accepted &= takes
    norm = final_norm_of(model) if final_norm and not enc_dec else None
    hook = _FinalNormHook(norm[1]) if norm is not None else None
    reducer = None
    if attentions:
        reducer = (_AttentionReducer(model, attention_reduce) if attention_reduce is not None
                   else FirstTokenAttention([model.get_submodule(s.name) for s in attention_sites(model)]))
    try:
        yield from _text_batches(model, tokenizer, texts, order, batch_size, max_length, device, reducer, enc_dec,
                                 accepted, hook)
    finally:
        if hook is not None:
            hook.handle.remove()
        if reducer is not None:
            reducer.remove()


def _length_order(tokenizer, texts: Sequence[str], max_length: int) -> np.ndarray:
    """The indices of ``texts`` sorted by (token length after truncation to ``max_length``, index), as int64. The
    texts are tokenized 256 at a time and only their lengths are kept, in one int32 array: no Python object per text
    (a list of lengths and a sorted list of indices took about 70 bytes per text)."""
    lengths = np.zeros(len(texts), dtype=np.int32)
    for start in range(0, len(texts), 256):
        ids = tokenizer(list(texts[start : start + 256]), truncation=True, max_length=max_length)["input_ids"]
        lengths[start : start + len(ids)] = [len(row) for row in ids]
        ids = None
    return np.argsort(lengths, kind="stable")  # stable: equal lengths keep the texts' order


def _forward_parameters(model) -> set[str] | None:
    """The names ``model.forward`` (the instance's: a user's replacement) takes, or None where it takes any keyword
    (``**kwargs``, as transformers' models do) or cannot be read."""
    import inspect

    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters}


def _text_batches(model, tokenizer, texts, order, batch_size, max_length, device, reducer, enc_dec, accepted,
                  hook) -> Iterator[Batch]:
    # Each batch is made by a function of its own, so this generator holds nothing of it while suspended: the
    # consumer's reference is the only one, and a batch it drops is freed before the next forward pass.
    for start in range(0, len(order), batch_size):
        yield _text_batch(model, tokenizer, texts, order[start : start + batch_size], max_length, device, reducer,
                          enc_dec, accepted, hook)


@torch.inference_mode()
def _text_batch(model, tokenizer, texts, picked, max_length, device, reducer, enc_dec, accepted, hook) -> Batch:
    chunk = [texts[int(i)] for i in picked]
    enc = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    if "attention_mask" not in enc:  # the padding could not be told from the text
        raise ValueError(f"tokenizer: {type(tokenizer).__name__} returns no attention_mask (its model_input_names: "
                         f"{list(getattr(tokenizer, 'model_input_names', []))}), so padding cannot be told from "
                         "text; give a tokenizer that returns one (model_input_names including 'attention_mask')")
    inputs = {k: v.to(device) for k, v in enc.items() if k in accepted}
    mask = inputs["attention_mask"].bool()
    # The real tokens of the attention mask, found from the tokenizer's copy of it, on the host: padding is removed
    # without waiting for the device (the indices go to the device with the inputs, before the forward pass).
    with on_host():
        host_picks = _real_tokens(enc["attention_mask"].bool())
    host_picks = tuple(t.to(device) for t in host_picks)
    if enc_dec:
        dec_ids, dec_mask = _decoder_inputs(model, inputs["input_ids"], inputs["attention_mask"])
        with _no_autocast(device):
            out = model(**inputs, decoder_input_ids=dec_ids, decoder_attention_mask=dec_mask,
                        output_hidden_states=True, **_outputs_by_name(model))
        dec_mask = dec_mask.bool()
        states = [(h, mask) for h in out.encoder_hidden_states] + [(h, dec_mask) for h in out.decoder_hidden_states]
    else:
        with reducer.reading(mask) if reducer is not None else nullcontext(), _no_autocast(device):
            out = model(**inputs, output_hidden_states=True, **_outputs_by_name(model))
        states = [(h, mask) for h in out.hidden_states]
    masks = [_resolution_mask(model, m, h) for h, m in states]
    hidden = getattr(model.config, "hidden_size", None)
    # OPT-350m projects its last state to the embeddings' width (word_embed_proj_dim): that width is one too
    widths = {hidden, getattr(model.config, "word_embed_proj_dim", None)}
    if isinstance(hidden, int) and not enc_dec and states[-1][0].shape[-1] not in widths:
        raise RuntimeError(f"{type(model).__name__}: the last hidden state has width {states[-1][0].shape[-1]}, "
                           f"its config says hidden_size {hidden}")
    # Padding removed once per mask (one for every layer but CANINE's downsampled ones and a decoder's): the real
    # tokens' flat indices, shared by every layer that has that mask (the attention mask's found on the host; a
    # downsampled or decoder mask's on the device, one wait each).
    picks = {id(mask): host_picks}
    for m in masks:
        if id(m) not in picks:
            picks[id(m)] = _real_tokens(m)
    if len({id(m) for m in masks}) == 1:  # one mask: every layer's rows into one (layers, rows, d) tensor
        layers = _rows_of_each([h for h, _ in states], picks[id(masks[0])][0])
    else:
        layers = [h.reshape(-1, h.shape[-1]).index_select(0, picks[id(m)][0]) for (h, _), m in zip(states, masks)]
    rows_of = [picks[id(m)][1] for m in masks]
    positions = [picks[id(m)][2] for m in masks]
    without_first = None
    if not enc_dec and not getattr(model.config, "downsampling_rate", None):
        later = mask & (mask.cumsum(dim=1) > 1)  # every real token but the first of its sequence
        without_first = partial(_select_rows, [h for h, _ in states], later)
    return Batch(layers, len(chunk), without_first_states=without_first,
                 attention_sums=reducer.take() if reducer is not None else None,
                 mask=mask if reducer is not None else None, inputs=rows_of, positions=positions,
                 final_norm=hook.take(masks[-1], picks[id(masks[-1])][0]) if hook is not None else None,
                 sources=picked)


def _real_tokens(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For a (b, t) bool ``mask`` of real tokens: the flat indices of the real tokens in row-major order (what
    boolean indexing with ``mask`` selects), the sequence of each and its position among its sequence's real tokens,
    each (real tokens,) int64 on the mask's device. One ``nonzero``: the only host synchronisation."""
    flat = mask.reshape(-1).nonzero().squeeze(1)
    positions = (mask.cumsum(dim=1) - 1).reshape(-1).index_select(0, flat)  # (a bool cumsum counts in int64)
    return flat, flat // mask.shape[1], positions


def _rows_of_each(states: list[torch.Tensor], flat: torch.Tensor) -> list[torch.Tensor]:
    """The rows ``flat`` (r,) of each of the layers' ``states`` ((b, t, d) each), as (r, d) tensors: where every
    layer has one shape, dtype and device, the rows of one (layers, r, d) tensor (one allocation; the statistics
    then read every layer's rows as that tensor, :class:`aniso.stats.stack.LayerStack`), else one tensor each."""
    h0 = states[0]
    if any(h.shape != h0.shape or h.dtype != h0.dtype or h.device != h0.device for h in states):
        return [h.reshape(-1, h.shape[-1]).index_select(0, flat) for h in states]
    out = torch.empty((len(states), flat.shape[0], h0.shape[-1]), dtype=h0.dtype, device=h0.device)
    for i, h in enumerate(states):
        torch.index_select(h.reshape(-1, h.shape[-1]), 0, flat, out=out[i])
    return [out[i] for i in range(len(states))]


def speech_layer_names(model) -> list[str]:
    """Layer names of :func:`iter_speech_hidden_states`: ``enc.0..enc.L`` for Whisper (encoder only), else ``0..L``."""
    cfg = model.config
    if getattr(cfg, "is_encoder_decoder", False):
        return [f"enc.{i}" for i in range(cfg.encoder_layers + 1)]
    return [str(i) for i in range(cfg.num_hidden_layers + 1)]


def _speech_frame_mask(model, inputs: dict, n_frames: int, batch: int) -> torch.Tensor:
    """(B, T) bool: which output frames stand for real audio."""
    mask = inputs.get("attention_mask")
    if mask is None:
        return torch.ones(batch, n_frames, dtype=torch.bool)
    if getattr(model.config, "is_encoder_decoder", False):
        # Whisper: two convolutions, the second with stride 2, over mel frames (hop 10 ms) -> 20 ms frames.
        return mask[:, ::2][:, :n_frames].bool()
    return model._get_feature_vector_attention_mask(n_frames, mask).bool()


def iter_speech_hidden_states(model, feature_extractor, clips: Sequence, *, batch_size: int = 8,
                              device: str = "cpu", sampling_rate: int = 16_000,
                              final_norm: bool = False) -> Iterator[Batch]:
    """Run audio clips through a speech Transformer and yield the hidden states of every layer per frame.

    Whisper (encoder–decoder) runs its encoder only, on the feature
    extractor's 30-second log-mel window; frames that stand for the window's
    padding are excluded from ``layers`` and kept in ``all_frames``. Its last
    hidden state is taken after the encoder's final layer norm (transformers'
    convention). wav2vec 2.0 / HuBERT get the raw waveform, padded per batch
    with the attention mask when the feature extractor supports one (else one
    clip per forward pass, so no padding enters the model).

    Parameters
    ----------
    model : transformers ``WhisperModel`` / ``Wav2Vec2Model`` / ``HubertModel`` (or compatible)
    feature_extractor : its feature extractor
    clips : float32 waveforms (n_samples,) at ``sampling_rate``
    batch_size : clips per forward pass

    Yields
    ------
    :class:`Batch`, ``layers[i]`` of shape (real frames, d), ``all_frames[i]`` of shape (all frames, d).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = place(model, device)
    whisper = getattr(model.config, "is_encoder_decoder", False)
    if not whisper and not getattr(feature_extractor, "return_attention_mask", True):
        batch_size = 1
    # Whisper's encoder ends with its own LayerNorm (wav2vec 2.0's encoder.layer_norm comes before its layers).
    norm = final_norm_of(model.get_encoder()) if final_norm and whisper else None
    hook = _FinalNormHook(norm[1]) if norm is not None else None
    try:
        yield from _speech_batches(model, feature_extractor, clips, batch_size, device, sampling_rate, whisper, hook)
    finally:
        if hook is not None:
            hook.handle.remove()


def _speech_batches(model, feature_extractor, clips, batch_size, device, sampling_rate, whisper,
                    hook) -> Iterator[Batch]:
    for start in range(0, len(clips), batch_size):  # one function per batch: nothing of it held here (_text_batches)
        yield _speech_batch(model, feature_extractor, [clips[i] for i in range(start, min(start + batch_size,
                                                                                        len(clips)))],
                            device, sampling_rate, whisper, hook)


@torch.inference_mode()
def _speech_batch(model, feature_extractor, chunk, device, sampling_rate, whisper, hook) -> Batch:
    if whisper:
        enc = feature_extractor(chunk, sampling_rate=sampling_rate, return_tensors="pt", return_attention_mask=True)
        inputs = {"input_features": enc["input_features"].to(device)}
        with _no_autocast(device):
            out = model.get_encoder()(**inputs, output_hidden_states=True, **_outputs_by_name(model))
    else:
        enc = feature_extractor(chunk, sampling_rate=sampling_rate, return_tensors="pt", padding=True)
        inputs = {k: v.to(device) for k, v in enc.items() if k in ("input_values", "attention_mask")}
        with _no_autocast(device):
            out = model(**inputs, output_hidden_states=True, **_outputs_by_name(model))
    states = out.hidden_states
    b, t = states[0].shape[:2]
    mask = _speech_frame_mask(model, dict(enc), t, b).to(states[0].device)
    flat, rows, _ = _real_tokens(mask)  # padding frames removed once, with indices every layer shares
    return Batch(_rows_of_each(list(states), flat), len(chunk),
                 [h.reshape(-1, h.shape[-1]) for h in states], inputs=[rows] * len(states),
                 final_norm=hook.take(mask, flat) if hook is not None else None)


def _vision_inputs(h: torch.Tensor, per_image: bool) -> torch.Tensor:
    """The image of each row :func:`_vision_vectors` gives, (rows,) int64, on ``h``'s device."""
    b = h.shape[0]
    if per_image:
        return torch.arange(b, device=h.device)
    per = h.shape[2] * h.shape[3] if h.ndim == 4 else h[0].reshape(-1, h.shape[-1]).shape[0]
    return torch.arange(b, device=h.device).repeat_interleave(per)


def _vision_vectors(h: torch.Tensor, per_image: bool) -> torch.Tensor:
    """One row per image (flattened map) or per position: (B, C, H, W) or (B, T, d) -> (rows, dim)."""
    if per_image:
        return h.reshape(h.shape[0], -1)
    if h.ndim == 4:  # (B, C, H, W) maps of a hierarchical Transformer (MiT): one vector per position
        return h.permute(0, 2, 3, 1).reshape(-1, h.shape[1])
    return h.reshape(-1, h.shape[-1])


def iter_vision_hidden_states(model, image_processor, images: Sequence, *, per_image: bool,
                              batch_size: int = 16, device: str = "cpu") -> Iterator[Batch]:
    """Run photographs through a vision model and yield its hidden states / feature maps.

    Parameters
    ----------
    model : a transformers vision model (ViT, BEiT, DeiT, SegFormer/MiT, ResNet, ConvNeXt, VAN, CvT,
        EfficientNet) or a module answering like one (``output_hidden_states``)
    image_processor : its image processor (resize, crop, normalise)
    images : RGB ``PIL.Image`` objects
    per_image : True for CNNs: one vector per image, the flattened C·H·W map (G §3.2); False for
        Transformers: one vector per patch/token (all tokens, [CLS] included)

    Yields
    ------
    :class:`Batch` with one (rows, dim) tensor per hidden state, in the model's dtype, on ``device``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = place(model, device)
    for start in range(0, len(images), batch_size):  # one function per batch: nothing of it held here
        yield _vision_batch(model, image_processor, list(images[start : start + batch_size]), per_image, device)


@torch.inference_mode()
def _vision_batch(model, image_processor, chunk, per_image, device) -> Batch:
    pixels = image_processor(chunk, return_tensors="pt")["pixel_values"].to(device)
    with _no_autocast(device):
        states = model(pixel_values=pixels, output_hidden_states=True, **_outputs_by_name(model)).hidden_states
    if states is None:
        raise RuntimeError(f"{type(model).__name__} returned no hidden states")
    labels: dict = {}  # one tensor of image labels per shape of layer (the statistics then see one set of rows)
    for h in states:
        if (h.shape, h.device) not in labels:
            labels[h.shape, h.device] = _vision_inputs(h, per_image)
    return Batch([_vision_vectors(h, per_image) for h in states], len(chunk),
                 inputs=[labels[h.shape, h.device] for h in states])


#: Child-module name pairs that hold the query and key projections of one attention module, by family:
#: BERT/RoBERTa/ALBERT/CANINE/ViT/DeiT/BEiT/SegFormer (query, key); OPT/Llama/GPT-J/Whisper/wav2vec 2.0/HuBERT
#: (q_proj, k_proj); T5/ByT5 (q, k); CvT (projection_query, projection_key).
_QK_PAIRS = (("query", "key"), ("q_proj", "k_proj"), ("q", "k"), ("projection_query", "projection_key"),
             ("q_lin", "k_lin"))
#: Fused projections: GPT-2's c_attn ([Q | K | V] along the last dim) and query_key_value (GPT-NeoX, BLOOM,
#: Falcon: per-head interleaved [q_h, k_h, v_h], or Falcon multi-query [Q | k | v]).
_FUSED = ("c_attn", "query_key_value")


@dataclass
class AttentionSite:
    """One attention module whose queries and keys can be captured.

    ``name`` its module path; ``query``/``key`` the projection modules (the
    same fused module for GPT-2 / GPT-NeoX / BLOOM / Falcon); ``n_heads`` and
    ``head_dim``; ``layout`` how a fused output splits ("separate", "concat",
    "per-head", "multi-query").
    """

    name: str
    query: torch.nn.Module
    key: torch.nn.Module
    n_heads: int
    head_dim: int
    layout: str
    n_kv_heads: int | None = None


def _heads(module, cfg) -> tuple[int, int, int | None]:
    n = (getattr(module, "num_heads", None) or getattr(module, "num_attention_heads", None)
         or getattr(module, "n_heads", None) or getattr(module, "n_head", None))
    if n is None:
        n = (getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
             or getattr(cfg, "encoder_attention_heads", None) or getattr(cfg, "num_heads", None))
    if isinstance(n, (list, tuple)):
        n = None
    hd = getattr(module, "head_dim", None) or getattr(module, "attention_head_size", None) \
        or getattr(module, "key_value_proj_dim", None)
    kv = getattr(cfg, "num_key_value_heads", None) or getattr(cfg, "num_kv_heads", None)
    return n, hd, kv


def attention_sites(model) -> list[AttentionSite]:
    """The attention modules of a transformers model whose query/key projections :func:`capture_queries_keys` hooks.

    Found by the projection names of each family (see ``_QK_PAIRS`` and
    ``_FUSED``), in module order. Returns [] for models without attention
    (CNNs). Raises ValueError naming the module if a fused projection's width
    fits no known layout.
    """
    cfg = getattr(model, "config", None)
    sites = []
    for name, module in model.named_modules():
        children = dict(module.named_children())
        for q, k in _QK_PAIRS:
            if isinstance(children.get(q), torch.nn.Linear) and isinstance(children.get(k), torch.nn.Linear):
                n, hd, kv = _heads(module, cfg)
                out = children[q].out_features
                if n is None and hd is not None:
                    n = out // hd
                if hd is None and n:
                    hd = out // n
                sites.append(AttentionSite(name, children[q], children[k], int(n or 1), int(hd or out), "separate"))
                break
        for fused in _FUSED:
            lin = children.get(fused)
            if lin is None or not hasattr(lin, "weight"):
                continue
            out = lin.weight.shape[1] if fused == "c_attn" else lin.weight.shape[0]  # GPT-2's Conv1D is (in, out)
            n, hd, kv = _heads(module, cfg)
            hd = hd or out // (3 * n)
            if fused == "c_attn":
                layout = "concat"
            elif out == 3 * n * hd:
                layout = "per-head"
            elif out % hd == 0 and (out // hd - n) > 0 and (out // hd - n) % 2 == 0:
                layout, kv = "multi-query", (out // hd - n) // 2
            else:
                raise ValueError(f"{name}.{fused}: output width {out} fits no known Q/K/V layout "
                                 f"({n} heads x {hd})")
            sites.append(AttentionSite(name, lin, lin, int(n), int(hd), layout, kv))
    return sites


def _split_fused(site: AttentionSite, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n, hd = site.n_heads, site.head_dim
    if site.layout == "concat":
        q, k, _ = out.split(n * hd, dim=-1)
        return q, k
    if site.layout == "per-head":
        per = out.reshape(*out.shape[:-1], n, 3, hd)
        return per[..., 0, :].flatten(-2), per[..., 1, :].flatten(-2)
    kv = site.n_kv_heads or 1
    return out[..., : n * hd], out[..., n * hd : (n + kv) * hd]


class capture_queries_keys:
    """Context manager that records the query and key projections of every attention module during forwards.

    On exit the hooks are removed. ``captured[site.name]`` is a list of
    ``(queries, keys)`` pairs, one per forward call, each shaped like the
    projection's output (..., n_heads·head_dim) (keys: n_kv_heads·head_dim
    for grouped/multi-query attention), in the model's dtype on its device, before rotary
    position embeddings. A streaming consumer takes each site's pair as soon as it is produced
    (:meth:`take_site`, e.g. from an attention hook of the same layer), so at most one layer's pair is held. Queries and keys are the projections' outputs (G §5,
    Fig. 13-14: Q̄ and K̄ are means over tokens of these).
    """

    def __init__(self, model):
        self.sites = attention_sites(model)
        self._q: dict[str, list[torch.Tensor]] = {s.name: [] for s in self.sites}
        self._k: dict[str, list[torch.Tensor]] = {s.name: [] for s in self.sites}
        self._hooks: list = []

    @property
    def captured(self) -> dict[str, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Site name -> [(queries, keys), ...], one pair per forward call."""
        return {name: list(zip(self._q[name], self._k[name])) for name in self._q}

    def take(self) -> dict[str, list[tuple[torch.Tensor, torch.Tensor]]]:
        """What :attr:`captured` holds, emptying it (for streaming consumers, batch by batch)."""
        got = self.captured
        for store in (*self._q.values(), *self._k.values()):
            store.clear()
        return got

    def take_site(self, name: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Site ``name``'s (queries, keys) pairs captured since the last take, emptying them."""
        got = list(zip(self._q[name], self._k[name]))
        self._q[name].clear()
        self._k[name].clear()
        return got

    def __enter__(self) -> "capture_queries_keys":
        def keep(store: list):
            return lambda mod, args, out: store.append(out.detach())

        for site in self.sites:
            if site.layout == "separate":
                self._hooks += [site.query.register_forward_hook(keep(self._q[site.name])),
                                site.key.register_forward_hook(keep(self._k[site.name]))]
            else:
                def on_fused(mod, args, out, site=site):
                    q, k = _split_fused(site, out.detach())
                    self._q[site.name].append(q)
                    self._k[site.name].append(k)

                self._hooks.append(site.query.register_forward_hook(on_fused))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks.clear()


def first_token_attention_sums(probs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention on the first real token, reduced where the map is produced.

    ``probs`` (b, H, t, t) attention probabilities (any float dtype), ``mask`` (b, t) bool of real tokens, both on one
    device. Returns ``(token_sum, sequence_sum)``, each (H,) in :func:`~aniso.common.devices.accumulation_dtype` on that device:
    ``token_sum[h]`` = Σ over every real query row of A_h[t, first]; ``sequence_sum[h]`` = Σ over sequences of the
    mean over that sequence's real query rows (Gu et al. 2025, §3: α is the mean over query positions; averaged
    per token or per sequence, see :class:`aniso.stats.accumulators.AttentionSink`). Only one layer's map is needed at a time.
    """
    rows = mask.to(device=probs.device, dtype=torch.bool)
    return first_token_sums(first_column(probs, rows.to(torch.int64).argmax(dim=1)), rows)
