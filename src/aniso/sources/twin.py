"""Twins of the registry's hub rows: the row's own architecture with seeded random weights, in a model folder laid
out as the row's hub repository lays it out, so that it can go through ``aniso hub import`` and the hub source.

A twin of a hub row is a transformers model folder with

- ``config.json`` and ``model.safetensors``: the row's own model class (:data:`TWIN_SPECS`, or the ``architectures``
  of its ``tiny`` config) and ``model_type``, at the sizes of its ``tiny`` config, with weights drawn under
  ``torch.manual_seed(seed)`` and saved by ``save_pretrained`` (safetensors);
- the preprocessing files the row's repository ships, written by the row's own transformers classes: a tokenizer
  (its vocabulary trained in-process with the ``tokenizers`` library on the run's corpus where the class needs one:
  WordPiece for the BERT family, byte-level BPE for GPT-2 / RoBERTa / OPT / GPT-J / Pythia / BLOOM / Falcon,
  SentencePiece-style Unigram for T5 / ALBERT and byte-fallback BPE for Llama; none for CANINE and ByT5, whose
  classes need none), a feature extractor config (speech) or an image processor config (vision);
- for a row whose architecture is code from its repository (``needs_remote_code``), a small custom-code module
  (``modeling_twin.py``) that ``config.json`` names through ``auto_map``, as such a repository does.

A **full-size** twin (``full_size=True``, ``aniso run ID --twin --full-size``) is the same folder at the sizes of the
row's ``full`` config (the real model's config.json fields: widths, depths, heads, vocabulary, image and patch
sizes), its weights drawn in the row's dtype (``source.dtype``) directly, its tokenizer's vocabulary trained towards
the full ``vocab_size`` (the provenance says how many entries the trainer reached on the texts given; the embedding
matrix has the full size whatever it reached).

A twin measures nothing about the paper's model: its verdicts say only that the code path runs (:data:`TWIN_LABEL`,
:data:`TWIN_FULL_SIZE_LABEL`).
:func:`build_twin` writes one folder; :func:`twin_folders` the folders of a row and of its checkpoint series, with the
repo and revision each is imported under. Functions take registry entries duck-typed (this stage does not import the
registry).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..common.settings import available_memory

__all__ = ["TWIN_LABEL", "TWIN_FULL_SIZE_LABEL", "TwinSpec", "TWIN_SPECS", "TwinFolder", "TwinError", "twin_spec",
           "build_twin", "twin_folders", "twin_tokenizer", "remote_code_model", "REMOTE_CODE_FILE"]

#: How every twin verdict is labelled (console, results.json, report).
TWIN_LABEL = "twin: random weights, code path only"
#: How every verdict of a full-size twin is labelled (``aniso run ID --twin --full-size``).
TWIN_FULL_SIZE_LABEL = "twin, full size: random weights, code path only"
#: The sizes a twin is built at, as its provenance and manifest say them.
TWIN_SIZES_NAMED = {False: "tiny", True: "full size"}
#: The custom-code module a twin of a ``needs_remote_code`` row carries, named by ``auto_map`` in its config.
REMOTE_CODE_FILE = "modeling_twin.py"


class TwinError(ValueError):
    """A twin cannot be built for a registry row; the one-line message names the row and why."""


@dataclass(frozen=True)
class TwinSpec:
    """What a twin of a ``model_type`` is made of, as the row's hub repository holds it.

    ``model_class``: the transformers class whose weights the repository's ``model.safetensors`` holds (its
    ``config.json`` ``architectures``); ``tokenizer``: the kind of tokenizer files (:data:`_TOKENIZERS`), or None;
    ``processor``: the transformers feature extractor / image processor class, or None; ``remote``: for custom-code
    architectures, the transformers base classes the twin's own module subclasses (config, model); ``inputs``: the
    kind of inputs the model reads (a key of :data:`aniso.inputs.forms.INPUT_FORMS`: ``text``, ``speech``,
    ``vision``), which a row's modality must read for the twin to be its model (:func:`twin_spec`).
    """

    model_class: str
    tokenizer: str | None = None
    processor: str | None = None
    remote: tuple[str, str] | None = None
    inputs: str = "text"


#: model_type → its twin (the classes the rows' hub repositories use).
TWIN_SPECS: dict[str, TwinSpec] = {
    "bert": TwinSpec("BertForPreTraining", "bert-wordpiece"),
    "roberta": TwinSpec("RobertaForMaskedLM", "roberta-bpe"),
    "gpt2": TwinSpec("GPT2LMHeadModel", "gpt2-bpe"),
    "t5": TwinSpec("T5ForConditionalGeneration", "t5-unigram"),
    "albert": TwinSpec("AlbertForMaskedLM", "albert-unigram"),
    "opt": TwinSpec("OPTForCausalLM", "opt-bpe"),
    "llama": TwinSpec("LlamaForCausalLM", "llama-bpe"),
    "gptj": TwinSpec("GPTJForCausalLM", "gpt2-bpe"),
    "falcon": TwinSpec("FalconForCausalLM", "falcon-bpe"),
    "gpt_neox": TwinSpec("GPTNeoXForCausalLM", "neox-bpe"),
    "bloom": TwinSpec("BloomForCausalLM", "bloom-bpe"),
    "canine": TwinSpec("CanineModel", "canine"),
    "wav2vec2": TwinSpec("Wav2Vec2ForPreTraining", processor="Wav2Vec2FeatureExtractor", inputs="speech"),
    "hubert": TwinSpec("HubertModel", processor="Wav2Vec2FeatureExtractor", inputs="speech"),
    "vit": TwinSpec("ViTForImageClassification", processor="ViTImageProcessor", inputs="vision"),
    "beit": TwinSpec("BeitForImageClassification", processor="BeitImageProcessor", inputs="vision"),
    "segformer": TwinSpec("SegformerForImageClassification", processor="SegformerImageProcessor", inputs="vision"),
    "deit": TwinSpec("DeiTForImageClassification", processor="DeiTImageProcessor", inputs="vision"),
    "resnet": TwinSpec("ResNetForImageClassification", processor="ConvNextImageProcessor", inputs="vision"),
    "efficientnet": TwinSpec("EfficientNetForImageClassification", processor="EfficientNetImageProcessor", inputs="vision"),
    "cvt": TwinSpec("CvtForImageClassification", processor="ConvNextImageProcessor", inputs="vision"),
    "convnext": TwinSpec("ConvNextForImageClassification", processor="ConvNextImageProcessor", inputs="vision"),
    # Architectures from their repositories' own code: the twin carries a module of its own through auto_map.
    "character_bert": TwinSpec("CharacterBertModel", "bert-wordpiece", remote=("BertConfig", "BertModel")),
    "manta": TwinSpec("MantaModel", "byt5", remote=("T5Config", "T5Model")),
}

#: Kinds of tokenizer without a trained vocabulary (code points, bytes).
_NO_VOCABULARY = ("canine", "byt5")
#: Granularity whose rows read their text with one tokenizer whatever their model_type → that tokenizer (ByT5's
#: bytes for byte-level rows).
_GRANULARITY_TOKENIZERS: dict[str, str] = {"byte": "byt5"}
#: The ``tokenizer_config.json`` field a twin writes (:func:`_save_tokenizer`), the entries its tokenizer's trainer
#: reached: trained on a few texts towards the config's ``vocab_size``, it may hold fewer entries than the embedding's
#: rows by design, so :func:`aniso.sources.hub.tokenizer_problem` does not hold it to ``MIN_VOCABULARY_COVER``.
TWIN_TOKENIZER_FIELD = "twin_tokenizer_trained_entries"
#: Vocabulary size of the twin tokenizers' training (at most the tiny config's ``vocab_size``).
_MAX_VOCAB = 512
#: Images of a twin's image processor: square, small, the tiny config's ``image_size`` where it has one.
_IMAGE_SIZE = 32
#: Layers of a checkpoint series' twin (the training-dynamics claims read first, middle and last layers), and the
#: config fields that count them.
_SERIES_LAYERS = 4
_DEPTH_FIELDS = ("num_hidden_layers", "n_layer", "num_layers")
#: Where a twin's config differs from the row's ``tiny`` one: MiT's four stages (its hidden states are one per
#: stage, and the drift correlations need at least three layers), at tiny widths.
_TWIN_CONFIG: dict[str, dict] = {
    "segformer": {"num_encoder_blocks": 4, "depths": [1, 1, 1, 1], "sr_ratios": [8, 4, 2, 1],
                  "hidden_sizes": [8, 16, 24, 32], "patch_sizes": [7, 3, 3, 3], "strides": [4, 2, 2, 2],
                  "num_attention_heads": [1, 1, 2, 2], "mlp_ratios": [2, 2, 2, 2], "image_size": 64},
}


def _same_family(model_type: str, family: str) -> bool:
    """Whether a ``tiny`` config's ``model_type`` is of the row's ``family`` (spelt with or without ``_``/``-``,
    one a prefix of the other: ``gpt_neox`` / ``gpt-neox``, ``gemma3_text`` / ``gemma3``)."""
    a, b = (re.sub(r"[^a-z0-9]", "", x.lower()) for x in (model_type, family))
    return bool(a) and bool(b) and (a.startswith(b) or b.startswith(a))


def family_problem(entry, model_type: str) -> str | None:
    """One line naming the row and ``tiny.model_type`` where that model_type is not of the row's ``family``
    (:func:`_same_family`; a tiny model or twin builds the row's own architecture), else None."""
    if _same_family(model_type, entry.family):
        return None
    return (f"{entry.id}: tiny.model_type {model_type!r} is not of the row's family {entry.family!r}: a tiny model "
            f"builds the row's own architecture (give tiny the model_type of {entry.family})")


#: The fields of a config that bound the positions of a sequence (GPT-2's n_positions and n_ctx, BERT's
#: max_position_embeddings), and the positions a model_type takes before the first token (RoBERTa counts its
#: positions from padding_idx + 1).
_POSITION_FIELDS = ("n_positions", "max_position_embeddings", "n_ctx")
_POSITION_OFFSET = {"roberta": 2}


def twin_spec(entry, full_size: bool = False, max_length: int | None = None,
              inputs: str | None = None) -> tuple[str, dict, TwinSpec]:
    """``(model_type, config fields, spec)`` of a registry row's twin, from its ``tiny`` config (the
    ``architectures`` of ``tiny``, where given, names the model class). ByT5 rows (``granularity: byte``) get ByT5's
    tokenizer. ``full_size``: the config fields are the row's ``full`` ones, beside the ``tiny`` config's
    ``model_type``, ``architectures`` and token ids (``*_token_id``: those of the twin's own tokenizer, whose
    special tokens come first). Raises TwinError naming the row when it has no ``tiny`` config (with
    ``full_size``: no ``full`` config), when its model_type has no twin here or is not of the row's ``family`` (a
    twin is the row's own architecture), when ``inputs`` (the kind of inputs the row's modality reads, where
    given: ``text``, ``speech``, ``vision``) is not what its model_type reads (:attr:`TwinSpec.inputs`: a text
    model for a speech row), when a position field holds fewer positions than ``max_length`` (the
    tokens per sequence of the twin run, where given), when an activation field names no activation function
    transformers knows, or when the registry says the row cannot run (``cannot_run``)."""
    blocked = getattr(entry, "cannot_run", None)
    if blocked is not None:
        raise TwinError(f"{entry.id}: cannot run with the locked libraries: {blocked.why}; it would run with "
                        f"{blocked.would_run_with}")
    if entry.tiny is None:
        raise TwinError(f"{entry.id}: the registry row has no 'tiny' config to build a twin from")
    fields_ = dict(entry.tiny)
    if full_size:
        full = getattr(entry, "full", None)
        if full is None:
            raise TwinError(f"{entry.id}: the registry row has no 'full' config (the real model's config.json "
                            "fields) to build a full-size twin from")
        kept = {k: v for k, v in fields_.items() if k in ("model_type", "architectures") or k.endswith("_token_id")}
        fields_ = kept | {k: v for k, v in full.items() if k != "model_type"}
    model_type = fields_.pop("model_type")
    spec = TWIN_SPECS.get(model_type)
    if spec is None:
        raise TwinError(f"{entry.id}: no twin for model_type {model_type!r} (known: {', '.join(sorted(TWIN_SPECS))})")
    problem = family_problem(entry, model_type)
    if problem:
        raise TwinError(problem)
    if inputs is not None and inputs != spec.inputs:
        raise TwinError(f"{entry.id}: modality {entry.modality!r} reads {inputs}, but tiny.model_type {model_type!r} "
                        f"is a model that reads {spec.inputs} ({spec.model_class}): no twin of the row; give tiny the "
                        f"model_type of a model that reads {inputs}, or the row the modality of its model")
    for name in _POSITION_FIELDS:
        value = fields_.get(name)
        need = None if max_length is None else max_length + _POSITION_OFFSET.get(model_type, 0)
        if isinstance(value, int) and need is not None and value < need:
            where = "full" if full_size else "tiny"
            raise TwinError(f"{entry.id}: {where}.{name} is {value}: fewer positions than the twin run's {max_length} "
                            f"tokens per sequence (setting max_length) take; give {where}.{name} at least {need}")
    _activations(entry.id, fields_, "full" if full_size else "tiny")
    archs = fields_.pop("architectures", None)
    if archs:
        spec = dataclasses.replace(spec, model_class=str(archs[0] if isinstance(archs, list) else archs))
    by_granularity = _GRANULARITY_TOKENIZERS.get(entry.granularity)
    if by_granularity is not None and spec.tokenizer is not None:
        spec = dataclasses.replace(spec, tokenizer=by_granularity)
    if full_size:
        return model_type, fields_, spec
    if model_type in _TWIN_CONFIG:
        fields_.update(_TWIN_CONFIG[model_type])
    if getattr(entry, "checkpoints", None) is not None:  # G §5's depth claims compare first and last layers: >= 3
        for name in _DEPTH_FIELDS:
            if isinstance(fields_.get(name), int):
                fields_[name] = max(fields_[name], _SERIES_LAYERS)
    return model_type, fields_, spec


def _activations(row_id: str, fields_: dict, where: str = "tiny") -> None:
    """TwinError naming ``<where>.<field>`` (``tiny`` or ``full``) when a field of the activation function (``hidden_act``,
    ``activation_function``, ...) names none that transformers knows (``ACT2FN``), with the values allowed."""
    try:
        from transformers.activations import ACT2CLS
    except ImportError:
        return
    for name, value in fields_.items():
        if re.search(r"(^|_)act(ivation)?(_function)?$", name) and isinstance(value, str) and value not in ACT2CLS:
            raise TwinError(f"{row_id}: {where}.{name} {value!r} is not an activation function transformers knows (one "
                            f"of {', '.join(sorted(ACT2CLS))})")


# -- tokenizers ---------------------------------------------------------------------------------------------------


def _bpe_model(texts: Sequence[str], vocab_size: int, specials: list[str]):
    """Byte-level BPE trained on ``texts``: ``(vocab, merges)`` as GPT-2's files hold them."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(texts), trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges, tok


def _unigram_model(texts: Sequence[str], vocab_size: int, specials: list[str], unk: str, lowercase: bool):
    """SentencePiece-style Unigram (Metaspace) trained on ``texts``: ``[(piece, score)]``, specials first."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=unk,
                                      show_progress=False)
    tok.train_from_iterator([t.lower() for t in texts] if lowercase else list(texts), trainer)
    seen: set[str] = set()
    pieces = []
    for p, s in json.loads(tok.to_str())["model"]["vocab"]:
        if p not in seen:  # a special token the texts also hold (wikitext's "<unk>") is learnt a second time
            seen.add(p)
            pieces.append((p, float(s)))
    return _canonical_pieces(pieces, len(specials))


def _canonical_pieces(pieces: list[tuple[str, float]], n_specials: int) -> list[tuple[str, float]]:
    """The Unigram trainer's ``pieces`` in an order, and with scores, that do not change from run to run: the
    trainer sums scores in its hash maps' order (they differ in the last digits) and appends the characters it
    must keep in that order too, each 1e-4 below the one before. Scores rounded to 8 decimals, ties by piece, and
    the appended characters (the trailing single characters below every learnt piece) sorted, given the same
    scores in their order; the ``n_specials`` first stay where they are."""
    head, rest = pieces[:n_specials], [(p, round(s, 8)) for p, s in pieces[n_specials:]]
    learnt = [s for p, s in rest if len(p) > 1]
    floor = min(learnt) if learnt else float("inf")
    tail = [(p, s) for p, s in rest if len(p) == 1 and s < floor - 0.5]
    kept = sorted((x for x in rest if x not in tail), key=lambda x: (-x[1], x[0]))
    scores = sorted((s for _, s in tail), reverse=True)
    return head + kept + list(zip(sorted(p for p, _ in tail), scores))


def _llama_model(texts: Sequence[str], vocab_size: int):
    """Llama's SentencePiece BPE with byte fallback: ``<unk> <s> </s>``, the 256 byte tokens, then merges."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]


def _fast(tok, cls_name: str, **special):
    """A tokenizers object wrapped as transformers' generic fast tokenizer, saved under class name ``cls_name``."""
    from transformers import PreTrainedTokenizerFast

    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, **special)
    wrapped._twin_class = cls_name
    return wrapped


def _bert_wordpiece(texts: Sequence[str], v: int):
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # The trainer numbers the word-internal pieces ("##e") in its hash map's order, which changes from run to run,
    # and breaks ties between merges by those numbers: the vocabulary (its entries and their ids) would differ
    # between two builds of one twin. Given first, in sorted order, their ids are fixed and so is every merge.
    inner = sorted({"##" + c for text in texts
                    for word, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text))
                    for c in word[1:]})
    tok.train_from_iterator(list(texts), trainers.WordPieceTrainer(
        vocab_size=v, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *inner], show_progress=False))
    return transformers.BertTokenizer(vocab=tok.get_vocab(), do_lower_case=True)


def _roberta_bpe(texts: Sequence[str], v: int):
    import transformers

    vocab, merges, _ = _bpe_model(texts, v, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return transformers.RobertaTokenizer(vocab=vocab, merges=merges)


def _gpt2_bpe(texts: Sequence[str], v: int):
    import transformers

    vocab, merges, _ = _bpe_model(texts, v, ["<|endoftext|>"])
    return transformers.GPT2Tokenizer(vocab=vocab, merges=merges)


def _opt_bpe(texts: Sequence[str], v: int):
    """OPT's tokenizer: GPT-2's class with </s> as bos, prepended to every sequence, and <pad>."""
    import transformers

    vocab, merges, _ = _bpe_model(texts, v, ["<s>", "<pad>", "</s>", "<unk>"])
    return transformers.GPT2Tokenizer(vocab=vocab, merges=merges, bos_token="</s>", eos_token="</s>",
                                      unk_token="<unk>", pad_token="<pad>", add_bos_token=True)


def _neox_bpe(texts: Sequence[str], v: int):
    import transformers

    vocab, merges, _ = _bpe_model(texts, v, ["<|endoftext|>", "<|padding|>"])
    return transformers.GPTNeoXTokenizer(vocab=vocab, merges=merges)


def _bloom_bpe(texts: Sequence[str], v: int):
    _, _, tok = _bpe_model(texts, v, ["<unk>", "<s>", "</s>", "<pad>"])
    return _fast(tok, "BloomTokenizerFast", unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def _falcon_bpe(texts: Sequence[str], v: int):
    _, _, tok = _bpe_model(texts, v, [">>TITLE<<", "<|endoftext|>"])
    return _fast(tok, "PreTrainedTokenizerFast", eos_token="<|endoftext|>")


def _t5_unigram(texts: Sequence[str], v: int):
    import transformers

    vocab = _unigram_model(texts, v - 100, ["<pad>", "</s>", "<unk>"], "<unk>", lowercase=False)
    return transformers.T5Tokenizer(vocab=vocab, extra_ids=100)


def _albert_unigram(texts: Sequence[str], v: int):
    import transformers

    vocab = _unigram_model(texts, v, ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "<unk>", lowercase=True)
    return transformers.AlbertTokenizer(vocab=vocab)


def _llama_bpe(texts: Sequence[str], v: int):
    import transformers

    vocab, merges = _llama_model(texts, v)
    return transformers.LlamaTokenizer(vocab=vocab, merges=merges)


def _byt5(texts: Sequence[str], v: int):
    import transformers

    return transformers.ByT5Tokenizer()


#: Kind of tokenizer files (:attr:`TwinSpec.tokenizer`) → ``(texts, vocab_size) -> tokenizer``: the row's own
#: tokenizer class, its vocabulary trained on ``texts`` (none for CANINE and ByT5, whose classes need none).
_TOKENIZERS: dict[str, Any] = {
    "bert-wordpiece": _bert_wordpiece, "roberta-bpe": _roberta_bpe, "gpt2-bpe": _gpt2_bpe, "opt-bpe": _opt_bpe,
    "neox-bpe": _neox_bpe, "bloom-bpe": _bloom_bpe, "falcon-bpe": _falcon_bpe, "t5-unigram": _t5_unigram,
    "albert-unigram": _albert_unigram, "llama-bpe": _llama_bpe, "canine": lambda texts, v: _canine_tokenizer(),
    "byt5": _byt5,
}


def twin_tokenizer(kind: str, texts: Sequence[str], vocab_size: int, full_size: bool = False):
    """The row's own tokenizer class (``kind``: a key of :data:`_TOKENIZERS`), its vocabulary trained on ``texts``
    with at most ``vocab_size`` entries (none for CANINE and ByT5), and at most 512 unless ``full_size`` (the
    trainer stops earlier where ``texts`` hold fewer pieces). Raises TwinError for an unknown kind."""
    make = _TOKENIZERS.get(kind)
    if make is None:
        raise TwinError(f"no twin tokenizer of kind {kind!r}")
    return make(texts, vocab_size if full_size else min(vocab_size, _MAX_VOCAB))


@functools.cache
def _canine_tokenizer():
    """CANINE's tokenizer (code points are ids; its construction takes seconds, so it is made once a process)."""
    import transformers

    return transformers.CanineTokenizer()


def _save_tokenizer(tokenizer, folder: Path) -> None:
    """Save the twin's tokenizer; its ``tokenizer_config.json`` names the class the row's repository gives it (the
    generic fast class is saved under that name) and says how many entries its trainer reached
    (:data:`TWIN_TOKENIZER_FIELD`: fewer than the embedding's rows by design, not a truncated
    vocabulary)."""
    tokenizer.save_pretrained(str(folder))
    cls = getattr(tokenizer, "_twin_class", None)
    config = folder / "tokenizer_config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        if cls:
            data["tokenizer_class"] = cls
        data[TWIN_TOKENIZER_FIELD] = len(tokenizer)
        config.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def _square(size: int) -> dict:
    return {"size": {"height": size, "width": size}}


def _square_cropped(size: int) -> dict:
    return {"size": {"height": size, "width": size}, "crop_size": {"height": size, "width": size}}


#: Image processor class → its options at a twin's image size (the sizes its hub repositories give it).
_IMAGE_PROCESSORS: dict[str, Any] = {
    "ViTImageProcessor": _square, "BeitImageProcessor": _square, "SegformerImageProcessor": _square,
    "DeiTImageProcessor": _square_cropped, "EfficientNetImageProcessor": _square_cropped,
    "ConvNextImageProcessor": lambda size: {"size": {"shortest_edge": size}},
}


def _save_wav2vec2_features(folder: Path, config) -> None:
    from transformers import Wav2Vec2FeatureExtractor

    # wav2vec2-base and HuBERT-base: group-normalised feature encoders, no attention mask
    Wav2Vec2FeatureExtractor(do_normalize=True, return_attention_mask=False).save_pretrained(str(folder))


#: Feature extractor class (speech) → how a twin's folder gets its config.
_FEATURE_EXTRACTORS: dict[str, Any] = {"Wav2Vec2FeatureExtractor": _save_wav2vec2_features}


def _save_processor(name: str, folder: Path, config, full_size: bool = False) -> None:
    """The preprocessor config of class ``name`` (:attr:`TwinSpec.processor`: a key of :data:`_FEATURE_EXTRACTORS`
    or :data:`_IMAGE_PROCESSORS`) in a twin's folder, at the config's ``image_size`` (else 32 pixels, 224 for a
    full-size twin: the ImageNet size of the rows' hub repositories)."""
    if name in _FEATURE_EXTRACTORS:
        _FEATURE_EXTRACTORS[name](folder, config)
        return
    from ..inputs.processors import pil_image_processor

    size = getattr(config, "image_size", _IMAGE_SIZE)
    size = size if isinstance(size, int) else (224 if full_size else _IMAGE_SIZE)
    processor = pil_image_processor(name, **_IMAGE_PROCESSORS.get(name, _square)(size))
    processor.save_pretrained(str(folder))
    path = folder / "preprocessor_config.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["image_processor_type"] = name  # as the hub repositories name it (the PIL class is asked for at load)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


# -- custom code --------------------------------------------------------------------------------------------------

_REMOTE_CODE = '''"""A twin's custom-code architecture (written by aniso): {model_class}, a {base_model} under model_type
{model_type!r}, named by this folder's config.json through auto_map as a repository with its own code names it."""

from transformers import {base_config}, {base_model}


class {config_class}({base_config}):
    model_type = {model_type!r}


class {model_class}({base_model}):
    config_class = {config_class}
'''


def _remote_classes(model_type: str, spec: TwinSpec):
    """Write nothing: return ``(source, config_class_name)`` of the custom-code module of a remote-code twin."""
    config_class = spec.model_class.removesuffix("Model") + "Config"
    source = _REMOTE_CODE.format(model_class=spec.model_class, base_model=spec.remote[1], model_type=model_type,
                                 base_config=spec.remote[0], config_class=config_class)
    return source, config_class


def remote_code_model(entry, seed: int = 0):
    """A randomly initialised model (seeded, eager attention) of a ``needs_remote_code`` row's twin: the twin's own
    custom-code module (the one its folder carries) imported from a temporary file, at the sizes of the row's
    ``tiny`` config. Raises TwinError as :func:`twin_spec`, or when the row is not a custom-code twin."""
    import tempfile

    import torch

    model_type, fields_, spec = twin_spec(entry)
    if spec.remote is None:
        raise TwinError(f"{entry.id}: model_type {model_type!r} is no custom-code architecture")
    source, config_class = _remote_classes(model_type, spec)
    with tempfile.TemporaryDirectory(prefix="aniso-twin-code-") as tmp:
        (Path(tmp) / REMOTE_CODE_FILE).write_text(source, encoding="utf-8")
        module = _import_module(Path(tmp) / REMOTE_CODE_FILE, f"aniso_twin_{model_type}_{os.getpid()}_tiny")
    config = getattr(module, config_class)(**fields_)
    config._attn_implementation = "eager"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return getattr(module, spec.model_class)(config).eval()


def _import_module(path: Path, name: str):
    import importlib.util

    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


# -- folders ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TwinFolder:
    """One twin folder and where it goes: ``repo`` and ``revision`` of the hub cache, ``step`` (None for the row
    itself), ``seed`` of its weights, and its ``provenance`` (classes, sizes, files)."""

    folder: Path
    repo: str
    revision: str
    seed: int
    step: int | None = None
    provenance: dict = field(default_factory=dict)


#: What a full-size twin's build needs beside its weights (the libraries, the tokenizer's training, the writing):
#: about 0.6 GiB measured for opt-1.3b in float16 (2,509 MiB of weights, 3,092 MiB peak), rounded up.
_BUILD_OVERHEAD_BYTES = 1 << 30


def _fits_in_memory(row_id: str, model_cls, config, dtype) -> None:
    """TwinError naming the row when its full-size twin's weights (counted on the meta device, in ``dtype``) and
    :data:`_BUILD_OVERHEAD_BYTES` exceed the memory available here: a build that cannot fit is refused in one line
    before it starts, instead of growing until the machine swaps or the process is killed."""
    import torch

    available = available_memory()
    if available is None:
        return
    with torch.device("meta"):
        counted = model_cls._from_config(config, dtype=dtype)
    need = sum(t.numel() * t.element_size() for t in (*counted.parameters(), *counted.buffers()))
    del counted
    if need + _BUILD_OVERHEAD_BYTES > available:
        raise TwinError(f"{row_id}: its full-size twin holds {need / 2**30:.1f} GiB of weights in {dtype} "
                        f"(and needs about {_BUILD_OVERHEAD_BYTES / 2**30:.0f} GiB more to build), but "
                        f"{available / 2**30:.1f} GiB of memory are available here: run it on a machine with more "
                        "memory, or without --full-size")


def _drawn_once(model_cls, config, dtype):
    """``model_cls`` at ``config`` in ``dtype``, each weight drawn once from torch's generator: the modules' own
    initialisation (``nn.Linear``'s Kaiming draw, ...) is skipped while the model is built (transformers'
    ``no_init_weights``), then transformers' ``init_weights`` draws every weight its model initialises, and a weight
    it leaves is drawn by its module's own ``reset_parameters``. A model built the usual way draws most of its
    weights twice (the module's draw, then transformers' over it) on the CPU's one random-number stream: for a 13 B
    model about 26 billion draws, minutes on one core before anything is written. Weights are marked NaN before
    transformers' pass; where one is still undrawn after both (a weight-norm parametrisation's parts, derived from
    the weight as it is built: wav2vec2's and HuBERT's positional convolution), the model is built the usual way
    (deterministic under the caller's seed all the same)."""
    import torch

    def _undrawn(p) -> bool:  # an initialisation fills the whole tensor: its first and last entries tell
        flat = p.detach().reshape(-1)
        return bool(torch.isnan(flat[0]) or torch.isnan(flat[-1]))

    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # a transformers without it: the usual build (every weight drawn, most twice)
        return model_cls._from_config(config, dtype=dtype)
    with no_init_weights():
        model = model_cls._from_config(config, dtype=dtype)
    floating = [(name, p) for name, p in model.named_parameters() if p.is_floating_point()]
    with torch.no_grad():
        for _, p in floating:
            p.fill_(math.nan)
        model.init_weights()
        left = {name for name, p in floating if _undrawn(p)}
        for module_name, module in model.named_modules():
            own = {f"{module_name}.{n}" if module_name else n for n, _ in module.named_parameters(recurse=False)}
            if own & left and callable(getattr(module, "reset_parameters", None)):
                module.reset_parameters()
        undrawn = [name for name, p in floating if _undrawn(p)]
    if undrawn:  # e.g. a weight-norm parametrisation, whose parts are derived from a weight drawn as it is built
        del model
        return model_cls._from_config(config, dtype=dtype)
    return model


def build_twin(entry, folder: str | Path, texts: Sequence[str], seed: int = 0, full_size: bool = False) -> dict:
    """Write the twin of registry row ``entry`` into ``folder`` (created): config, safetensors weights drawn under
    ``seed``, and preprocessing files (see the module docstring); ``texts`` train the tokenizer's vocabulary where
    its class needs one. ``full_size``: at the row's ``full`` config, the weights drawn in the row's dtype
    (``source.dtype``) as the model is built (one copy in memory: its own size), the vocabulary trained towards the
    full ``vocab_size``. Returns its provenance: ``size`` ("tiny" or "full size"), ``model_class``, ``model_type``,
    ``seed``, ``weights_dtype``, ``tokenizer`` / ``processor`` class, ``files``, ``parameters``, ``remote_code``
    (the module file, or None), ``config`` (a full-size twin's config fields, else None), and for a full-size
    twin's tokenizer with a vocabulary ``vocab_size`` (the config's) and ``tokenizer_vocab`` (the entries trained),
    with ``vocab_note`` where the trainer stopped short of the config's size.

    Raises TwinError naming the row (see :func:`twin_spec`, or transformers cannot build it).
    """
    import torch
    import transformers

    model_type, fields_, spec = twin_spec(entry, full_size)
    dtype = getattr(torch, str(getattr(entry.source, "dtype", None) or "float32")) if full_size else torch.float32
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    remote = None
    try:
        if spec.remote is not None:
            source, config_class = _remote_classes(model_type, spec)
            (folder / REMOTE_CODE_FILE).write_text(source, encoding="utf-8")
            module = _import_module(folder / REMOTE_CODE_FILE, f"aniso_twin_{model_type}_{os.getpid()}")
            config = getattr(module, config_class)(**fields_)
            config.auto_map = {"AutoConfig": f"{REMOTE_CODE_FILE[:-3]}.{config_class}",
                               "AutoModel": f"{REMOTE_CODE_FILE[:-3]}.{spec.model_class}"}
            model_cls = getattr(module, spec.model_class)
            remote = REMOTE_CODE_FILE
        else:
            config = transformers.AutoConfig.for_model(model_type, **fields_)
            model_cls = getattr(transformers, spec.model_class)
        config.architectures = [spec.model_class]
        if full_size:
            _fits_in_memory(entry.id, model_cls, config, dtype)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            # built and initialised in its dtype: never a float32 copy beside a float16 one
            model = (_drawn_once(model_cls, config, dtype) if full_size else model_cls(config)).eval()
            if model_type in _SCALE_PRESERVING:
                _scale_preserving_convolutions(model)
        from . import no_loading_bars

        with no_loading_bars():  # transformers' "Writing model shards" bar: a carriage-return line in the console
            model.save_pretrained(str(folder), safe_serialization=True)
        parameters = int(sum(p.numel() for p in model.parameters()))
        del model
    except TwinError:
        raise
    except (ValueError, TypeError, AttributeError, ImportError, KeyError) as exc:
        # a KeyError: a config value the model's code looks up and does not find (a name of something)
        said = repr(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        fields = [f"{'full' if full_size else 'tiny'}.{k}" for k, v in fields_.items()
                  if isinstance(exc, KeyError) and exc.args and type(v) is type(exc.args[0]) and v == exc.args[0]]
        raise TwinError(f"{entry.id}: transformers {transformers.__version__} cannot build its twin "
                        f"{spec.model_class} ({model_type}): "
                        + (f"{' and '.join(fields)} {said} is not a value its code knows" if fields else
                           f"{type(exc).__name__ + ' ' if isinstance(exc, KeyError) else ''}"
                           f"{(said.splitlines() or [''])[0][:160]}")) from None
    if remote is not None:  # save_pretrained of a dynamic class may copy its module; keep the one auto_map names
        for extra in folder.glob("*.py"):
            if extra.name != REMOTE_CODE_FILE:
                extra.unlink()
    tokenizer_class = processor_class = None
    vocab: dict[str, Any] = {}
    if spec.tokenizer is not None:
        vocab_size = int(getattr(config, "vocab_size", _MAX_VOCAB) or _MAX_VOCAB)
        tokenizer = twin_tokenizer(spec.tokenizer, texts, vocab_size, full_size)
        _save_tokenizer(tokenizer, folder)
        tokenizer_class = getattr(tokenizer, "_twin_class", None) or type(tokenizer).__name__
        if full_size and spec.tokenizer not in _NO_VOCABULARY:
            vocab = {"vocab_size": vocab_size, "tokenizer_vocab": len(tokenizer)}
            if len(tokenizer) < vocab_size:
                vocab["vocab_note"] = (f"the {tokenizer_class} trainer reached {len(tokenizer)} of the config's "
                                       f"{vocab_size} entries on the {len(texts)} texts given; the embedding "
                                       f"matrix has all {vocab_size} rows")
    if spec.processor is not None:
        _save_processor(spec.processor, folder, config, full_size)
        processor_class = spec.processor
    return {"size": TWIN_SIZES_NAMED[full_size], "model_class": spec.model_class, "model_type": model_type,
            "seed": seed, "weights_dtype": str(dtype).removeprefix("torch."), "tokenizer": tokenizer_class,
            "processor": processor_class, "remote_code": remote, "parameters": parameters, **vocab,
            "config": dict(fields_) if full_size else None,
            "files": sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()),
            "transformers": transformers.__version__}


#: model_types whose own initialisation shrinks the signal to zero within a few blocks at random weights
#: (EfficientNet in transformers 5: N(0, 0.02²) convolutions and batch-norm scales): their twins draw convolutions
#: He-normal and set batch-norm scales to 1, as a trained network keeps its activations' scale.
_SCALE_PRESERVING = ("efficientnet",)


def _scale_preserving_convolutions(model) -> None:
    """Redraw every convolution's weight He-normal (fan-in, ReLU gain), on the current RNG, and set every batch
    norm's scale to 1: activations keep their scale from block to block instead of vanishing."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu")
            elif isinstance(module, torch.nn.BatchNorm2d) and module.weight is not None:
                module.weight.fill_(1.0)


def twin_folders(entry, root: str | Path, texts: Sequence[str], seed: int = 0, max_steps: int = 2,
                 full_size: bool = False) -> list[TwinFolder]:
    """Build the twin of ``entry`` under ``root`` and, for a checkpoint series, one twin per checkpoint for its
    first and last steps (``max_steps`` of them, at least two; each with its own seed, so the checkpoints differ),
    each with the hub repo and revision it is imported under (the series' ``vary`` templates formatted with the
    step); ``full_size``: every twin at the row's ``full`` config (:func:`build_twin`). Returns the folders, the
    row's own first. Raises TwinError as :func:`build_twin`."""
    root = Path(root)
    src = entry.source
    out = [TwinFolder(root / entry.id, src.repo, src.revision, seed, None,
                      build_twin(entry, root / entry.id, texts, seed, full_size))]
    series = getattr(entry, "checkpoints", None)
    if series is not None and series.steps != "all":
        steps = list(series.steps)
        keep = max(2, max_steps)
        chosen = steps if len(steps) <= keep else [steps[round(i * (len(steps) - 1) / (keep - 1))]
                                                     for i in range(keep)]
        for i, step in enumerate(chosen):
            fields_ = {"repo": src.repo, "revision": src.revision} | series.source_fields(step)
            folder = root / f"{entry.id}-step{step}"
            out.append(TwinFolder(folder, fields_["repo"], fields_["revision"], seed + 1 + i, step,
                                  build_twin(entry, folder, texts, seed + 1 + i, full_size)))
    return out
