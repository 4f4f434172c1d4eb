"""Modalities as a table: how a model's inputs are loaded, run, and which vectors count.

One row per kind of hidden state the suite measures (G §3, "Layer conventions" of ``docs/claims.md``):

=====================  =========  ==========================================================================
row                    inputs     vectors of a layer
=====================  =========  ==========================================================================
``text``               text       one per real (non-padding) token; encoder then decoder layers
``speech``             speech     one per frame of real audio (Whisper: its encoder; padding frames kept aside)
``vision-transformer`` vision     one per patch / token
``cnn-map``            vision     one per image, the flattened C·H·W map (first-order statistics only)
=====================  =========  ==========================================================================

:func:`modality_of` maps a registry entry (``modality``, ``architecture``) to its row; the statistics pipeline
(:mod:`aniso.stats.pipeline`) and the offline architecture check (:mod:`aniso.extract.architecture_check`) both go through it.
:data:`INPUTS` loads each kind of inputs (corpus, recordings, photographs) from the run's settings.

To add a modality: one row here (and, if it reads a new kind of inputs, one loader in :data:`INPUTS` and one row
of :data:`aniso.inputs.forms.INPUT_FORMS`, how a user gives them). Code elsewhere asks a row, never compares a
modality's name (``tests/test_one_switch.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..inputs.forms import INPUT_FORMS, InputsForm
from .hidden import (Batch, iter_speech_hidden_states, iter_text_hidden_states, iter_vision_hidden_states,
                     layer_names, speech_layer_names)

__all__ = ["Modality", "MODALITIES", "INPUTS", "INPUT_FORMS", "InputsForm", "modality_of", "inputs_kind",
           "unread_inputs_setting", "CHECK_TEXTS"]

#: Sentences of different lengths for the offline check (padding must not change any vector).
CHECK_TEXTS = (
    "The tower is 324 metres tall, about the same height as an 81-storey building.",
    "Anisotropy of hidden states.",
    "During its construction, the Eiffel Tower surpassed the Washington Monument to become the tallest man-made "
    "structure in the world, a title it held for 41 years until the Chrysler Building was finished in 1930.",
)


@dataclass(frozen=True)
class Modality:
    """One row of the modality table.

    Attributes
    ----------
    name : the row's name
    inputs : which loader of :data:`INPUTS` gives its inputs (``text``, ``speech``, ``vision``)
    run : ``(model, tokenizer, processor, items, batch_size, device, max_length, attentions=False,
        final_norm=False) -> Iterator[Batch]``, the hidden states of the vectors that count, batch by batch (with
        the attention probabilities and the final normalisation's input and output where asked and measurable)
    layer_names : ``model -> list[str] | None`` (None: numbered from the first batch)
    second_order : whether d x d statistics (SVD anisotropy, TwoNN reservoir) can be kept for its layers
        (False for flattened CNN maps, whose d reaches 10^5-10^6)
    check_items : ``seed -> list`` of small synthetic inputs of different sizes for the offline check
    tiny_preprocessors : ``(entry, config) -> (tokenizer, processor)`` for a tiny random model of the entry
    expected_layers : ``model -> int | None``, the number of hidden states the architecture should give
    one_vector_per_input : True when a layer gives one vector per input (CNN maps), not per token/frame/patch
    queries_keys : whether the offline check captures queries and keys (Transformers; not CNN maps)
    tokens : whether the inputs are token sequences of a tokenizer, whose ids index an input embedding matrix: the
        corpus is checked for real (non-special) tokens, the first token is named, and the embedding matrix's
        partition isotropy (M §3) is measured
    vectors : what one hidden-state vector of a layer stands for, in the messages that count them
    """

    name: str
    inputs: str
    run: Callable[..., Iterator[Batch]]
    layer_names: Callable[[Any], list[str] | None]
    second_order: bool
    check_items: Callable[[int], list]
    tiny_preprocessors: Callable[[Any, Any], tuple[Any, Any]]
    expected_layers: Callable[[Any], int | None]
    one_vector_per_input: bool = False
    queries_keys: bool = True
    tokens: bool = False
    vectors: str = "vectors"


# -- text ---------------------------------------------------------------------------------------------------------


def _subword_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer trained on :data:`CHECK_TEXTS` (no files, no hub)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=min(vocab_size, 300), special_tokens=["<pad>", "<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(CHECK_TEXTS), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")


def _text_tokenizer(entry, config):
    """The tokenizer of a tiny text model: ByT5's bytes, CANINE's characters, else a small trained BPE. Raises
    ValueError naming ``tiny.vocab_size`` where the BPE holds more ids than the config's vocabulary."""
    from transformers import ByT5Tokenizer, CanineTokenizer

    by_type = {"canine": CanineTokenizer}
    if entry.granularity == "byte":
        return ByT5Tokenizer(), None
    if config.model_type in by_type:
        return by_type[config.model_type](), None
    tokenizer = _subword_tokenizer(config.vocab_size)
    if len(tokenizer) > config.vocab_size:  # a byte-level BPE holds the 256 bytes and its special tokens at least
        raise ValueError(f"{entry.id}: tiny.vocab_size {config.vocab_size} is below the {len(tokenizer)} ids of the "
                         f"tiny model's tokenizer (a byte-level BPE: 256 bytes, 4 special tokens, its merges): give "
                         f"tiny.vocab_size at least {len(tokenizer)}")
    return tokenizer, None


def _run_text(model, tokenizer, processor, items, batch_size, device, max_length, attentions=False,
              final_norm=False):
    attentions = attentions and not getattr(model.config, "is_encoder_decoder", False)
    return iter_text_hidden_states(model, tokenizer, items, batch_size=batch_size, max_length=max_length,
                                   device=device, attentions=attentions, final_norm=final_norm)


# -- speech -------------------------------------------------------------------------------------------------------


def _tones(seed: int) -> list:
    rng = np.random.Generator(np.random.PCG64(seed))
    out = []
    for seconds in (0.6, 1.0):
        t = np.arange(int(16_000 * seconds)) / 16_000
        out.append((0.1 * np.sin(2 * np.pi * 220 * t) + 0.01 * rng.standard_normal(t.size)).astype(np.float32))
    return out


def _feature_extractor(entry, config):
    from transformers import Wav2Vec2FeatureExtractor, WhisperFeatureExtractor

    if config.model_type == "whisper":
        return None, WhisperFeatureExtractor(feature_size=config.num_mel_bins)
    return None, Wav2Vec2FeatureExtractor(return_attention_mask=config.feat_extract_norm == "layer")


def _run_speech(model, tokenizer, processor, items, batch_size, device, max_length, attentions=False,
                final_norm=False):
    # Speech batches are heavier (up to 30 s each): half the text batch size.
    return iter_speech_hidden_states(model, processor, items, batch_size=max(1, batch_size // 2), device=device,
                                     final_norm=final_norm)


# -- vision -------------------------------------------------------------------------------------------------------


def _noise_images(seed: int) -> list:
    from PIL import Image

    rng = np.random.Generator(np.random.PCG64(seed))
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB") for h, w in ((40, 48), (64, 64))]


def _image_processor(entry, config):
    from ..inputs.processors import pil_image_processor

    size = getattr(config, "image_size", 32)
    size = size if isinstance(size, int) else 32
    return None, pil_image_processor("ViTImageProcessor", size={"height": size, "width": size})


def _run_patches(model, tokenizer, processor, items, batch_size, device, max_length, **options):
    return iter_vision_hidden_states(model, processor, items, per_image=False, batch_size=batch_size, device=device)


def _run_maps(model, tokenizer, processor, items, batch_size, device, max_length, **options):
    return iter_vision_hidden_states(model, processor, items, per_image=True, batch_size=batch_size, device=device)


def _vit_layers(model) -> int | None:
    cfg = model.config
    if cfg.model_type == "segformer":  # MiT: one hidden state per encoder block, no embedding output
        return cfg.num_encoder_blocks
    n = getattr(cfg, "num_hidden_layers", None)
    return n + 1 if isinstance(n, int) else None


#: CNN family → its number of feature maps (the stem's output, then one per stage), from its config.
_CNN_LAYERS: dict[str, Callable[[Any], int]] = {
    "resnet": lambda cfg: len(cfg.depths) + 1,
    "convnext": lambda cfg: len(cfg.depths) + 1,
    "cvt": lambda cfg: len(cfg.depth),
    # the stem's output, then every MBConv block (each stage's repeats scaled by depth_coefficient, rounded up)
    "efficientnet": lambda cfg: 1 + sum(math.ceil(cfg.depth_coefficient * n) for n in cfg.num_block_repeats),
}


def _cnn_layers(model) -> int | None:
    cfg = getattr(model, "config", None)
    rule = _CNN_LAYERS.get(getattr(cfg, "model_type", None))
    return rule(cfg) if rule else None


#: The table of modalities.
MODALITIES: dict[str, Modality] = {
    m.name: m for m in (
        Modality("text", "text", _run_text, layer_names, True, lambda seed: list(CHECK_TEXTS), _text_tokenizer,
                 lambda model: len(layer_names(model)), tokens=True,
                 vectors="tokens"),
        Modality("speech", "speech", _run_speech, speech_layer_names, True, _tones, _feature_extractor,
                 lambda model: len(speech_layer_names(model)), vectors="frames"),
        Modality("vision-transformer", "vision", _run_patches, lambda model: None, True, _noise_images,
                 _image_processor, _vit_layers, vectors="patches"),
        Modality("cnn-map", "vision", _run_maps, lambda model: None, False, _noise_images, _image_processor,
                 _cnn_layers, one_vector_per_input=True, queries_keys=False, vectors="images"),
    )
}

#: Registry (modality, architecture) → row of :data:`MODALITIES`.
_ROWS = {("text", "transformer"): "text", ("speech", "transformer"): "speech",
         ("vision", "transformer"): "vision-transformer", ("vision", "cnn"): "cnn-map"}


def modality_of(entry) -> Modality | None:
    """The row of :data:`MODALITIES` for a registry entry, or None if its hidden states are not measured over
    inputs (the untrained blocks of G §4, modality ``embeddings``)."""
    row = _ROWS.get((entry.modality, entry.architecture))
    return MODALITIES[row] if row else None


# -- inputs -------------------------------------------------------------------------------------------------------


def _text_inputs(settings, hub):
    from ..inputs.text import load_corpus

    return load_corpus(settings.corpus, settings.n_sequences, settings.seed,
                       hub_reachable=settings.corpus is None and hub.reachable())


def _speech_inputs(settings, hub):
    from ..inputs.media import load_speech

    return load_speech(settings.speech_dir, settings.n_clips, settings.seed,
                       hub_reachable=settings.speech_dir is None and hub.reachable())


def _vision_inputs(settings, hub):
    from ..inputs.media import load_images

    return load_images(settings.image_dir, settings.n_images, settings.seed, max_pixels=settings.max_image_pixels)


def _reaction_inputs(settings, hub):
    from ..inputs.reactions import load_reactions

    return load_reactions(settings.n_sequences, settings.seed)


#: Kind of inputs → loader ``(settings, hub) -> Corpus | MediaSet``; each gives ``items`` (what the run function
#: takes), ``fingerprint`` (the sample), ``names`` (what was sampled), ``dataset`` and ``describe()``. Raises
#: :class:`~aniso.inputs.media.InputsUnavailable` naming the setting that supplies missing inputs. A modality row
#: names the kind its models read; a registry entry may name another of the same form (``measured_on``: reaction
#: SMILES are text to a chemistry model).
INPUTS: dict[str, Callable[[Any, Any], Any]] = {"text": _text_inputs, "speech": _speech_inputs,
                                                "vision": _vision_inputs, "reactions": _reaction_inputs}


def inputs_kind(entry) -> str | None:
    """The kind of inputs (a key of :data:`INPUTS`) a registry entry reads: its ``measured_on``, else its modality
    row's; None for an entry measured over no inputs (an untrained block)."""
    row = modality_of(entry)
    return getattr(entry, "measured_on", None) or (row.inputs if row else None)


def unread_inputs_setting(given: dict[str, str], entries: Sequence[Any]) -> str | None:
    """The one-line refusal of a setting of inputs (a :data:`INPUT_FORMS` row's ``setting`` or ``size``: ``corpus``,
    ``n_sequences``, ``image_dir``, ``n_images``, ...) that was given explicitly but that no model of the run reads,
    e.g. ``n_sequences`` for a vision model only (it would be silently ignored); None when each one given is read.

    ``given``: setting name -> how the door says it was given (``settings['corpus']``, ``--aniso-n-sequences 8``);
    the ``ANISO_*`` variables are never in it (a shell sets them for every model). ``entries``: the run's models
    (anything with ``id`` and ``modality`` that :func:`inputs_kind` reads). The line names the setting, the first
    model with its modality, and the setting that gives that model's inputs instead."""
    readers = [(e, INPUT_FORMS[k]) for e in entries if (k := inputs_kind(e)) is not None]
    for name, label in given.items():
        roles = [(form, role) for form in INPUT_FORMS.values() for role in ("setting", "size")
                 if getattr(form, role) == name]
        if not roles or any(getattr(form, role) == name for _, form in readers for role in ("setting", "size")):
            continue
        form, role = roles[0]
        what = f"names the {form.noun} read" if role == "setting" else f"counts the {form.noun} sampled"
        if not readers:
            ids = ", ".join(e.id for e in entries)[:120]
            return f"{label}: setting {name} {what}, but {ids} is measured over no inputs, so it does not apply"
        entry, theirs = readers[0]
        instead = getattr(theirs, role)
        return (f"{label}: setting {name} {what}, which {entry.id} (a {entry.modality} model) does not read: it "
                f"reads {theirs.noun}, {'named' if role == 'setting' else 'counted'} by setting {instead} "
                f"(ANISO_{instead.upper()}); give that instead")
    return None


def sample_names(inputs) -> Sequence[str]:
    """What identifies the sampled items of an input set in a cache key."""
    return list(getattr(inputs, "names", None) or inputs.sequences[:3])
