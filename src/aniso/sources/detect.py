"""A registry entry for a model that is not in the registry, from its transformers config (``aniso run``).

The modality, granularity, architecture and role follow from the config's ``model_type`` and fields; what cannot
be told raises :class:`UndetectableModel` saying which registry fields to write by hand.

The claims are about Transformers. A model that is not one is refused with :class:`NotATransformer` saying what it
is: a ``model_type`` of :data:`NOT_TRANSFORMERS` (state-space, recurrent, and hybrids whose layers are mostly
state-space or recurrent), or a text config of a type not known here without any attention-head field. Such a model
is measured only from a registry entry written by hand and tagged ``control`` (as the registry's other controls), so
that its results are read as a control, never as a finding about Transformers; :func:`transformer_problem` is the
same rule for a registry entry once its model's config is read (at load, and for the offline architecture check).
"""

from __future__ import annotations

import functools

import json
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["UndetectableModel", "NotATransformer", "NOT_TRANSFORMERS", "ATTENTION_FIELDS", "CONTROL_TAG",
           "entry_fields", "config_of", "registry_entry", "detect_entry", "link_problem", "role_told",
           "declared_problem", "kind_problem", "folder_vocabulary", "not_a_transformer", "detected_id",
           "transformer_problem"]

#: model_type → (modality, granularity, architecture) for the types that are not subword-text Transformers.
_TYPES: dict[str, tuple[str, str, str]] = {
    **{t: ("text", "char", "transformer") for t in ("canine", "character_bert")},
    **{t: ("text", "byte", "transformer") for t in ("byt5",)},
    **{t: ("speech", "audio-frame", "transformer") for t in ("whisper", "wav2vec2", "hubert", "wavlm", "data2vec-audio",
                                                             "unispeech", "unispeech-sat", "sew", "sew-d")},
    **{t: ("vision", "patch", "transformer") for t in ("vit", "deit", "beit", "segformer", "cvt", "swin", "dinov2",
                                                       "data2vec-vision", "vit_mae", "vit_msn")},
    **{t: ("vision", "pixel", "cnn") for t in ("resnet", "convnext", "convnextv2", "efficientnet", "van", "regnet",
                                               "mobilenet_v1", "mobilenet_v2", "bit")},
}


#: model_type → what the model is, for the architectures that are not Transformers. Hybrids are refused too: in
#: Jamba one layer in eight is attention, in Zamba, Bamba, Falcon-H1, Granite-4 hybrids and Nemotron-H most layers are
#: Mamba, in LFM2 most are short convolutions, in RecurrentGemma two blocks in three are recurrent, so their per-layer
#: profiles would mostly measure layers that are not attention blocks. Linear-attention Transformers (e.g.
#: ``qwen3_next``, ``minimax``) are attention models and are not listed.
NOT_TRANSFORMERS: dict[str, str] = {
    **{t: f"a state-space model ({name}), not a Transformer" for t, name in
       (("mamba", "Mamba"), ("mamba2", "Mamba-2"), ("falcon_mamba", "Falcon Mamba"))},
    **{t: f"a recurrent network ({name}), not a Transformer" for t, name in
       (("rwkv", "RWKV"), ("rwkv5", "RWKV-5"), ("rwkv6", "RWKV-6"), ("rwkv7", "RWKV-7"), ("xlstm", "xLSTM"),
        ("recurrent_gemma", "RecurrentGemma/Griffin: recurrent blocks, local attention in one block of three"))},
    **{t: f"a hybrid ({name}), not a Transformer" for t, name in
       (("jamba", "Jamba: Mamba layers, attention in one layer of eight"), ("zamba", "Zamba: Mamba layers and a "
        "shared attention block"), ("zamba2", "Zamba2: Mamba-2 layers and shared attention blocks"),
        ("bamba", "Bamba: Mamba-2 and attention layers"), ("falcon_h1", "Falcon-H1: Mamba-2 and attention heads "
        "side by side"), ("granitemoehybrid", "Granite-4 hybrid: Mamba-2 and attention layers"),
        ("nemotron_h", "Nemotron-H: Mamba-2 and attention layers"),
        ("lfm2", "LFM2: short convolutions and attention layers"))},
}
#: Config fields that give a number of attention heads (one of them is in every Transformer's config).
ATTENTION_FIELDS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "encoder_attention_heads",
                    "decoder_attention_heads", "num_attention_heads_per_layer")
#: The registry tag that lets an entry written by hand measure a model that is not a Transformer, as a control.
CONTROL_TAG = "control"


class UndetectableModel(ValueError):
    """The config does not say enough to write a registry entry; the message names the fields to add by hand."""


class NotATransformer(UndetectableModel):
    """The config is of a model that is not a Transformer; the message says what it is and how to run it anyway."""


def not_a_transformer(config: dict[str, Any]) -> str | None:
    """What a config's model is when it is not a Transformer (see :data:`NOT_TRANSFORMERS`), else None.

    A config whose ``model_type`` is neither a known Transformer here nor in :data:`NOT_TRANSFORMERS` and that
    has no attention-head field (:data:`ATTENTION_FIELDS`) is not one either: "no attention layers in its config".
    """
    model_type = config.get("model_type")
    if model_type in NOT_TRANSFORMERS:
        return NOT_TRANSFORMERS[model_type]
    if model_type not in _TYPES and not any(f in config for f in ATTENTION_FIELDS):
        return f"not a Transformer by its config: no attention layers (none of {', '.join(ATTENTION_FIELDS)})"
    return None


def transformer_problem(entry, model_type: str | None) -> str | None:
    """Why a registry entry declared ``architecture: transformer`` cannot be measured as one, or None.

    ``model_type`` is its model's config type once read. An entry tagged ``control`` is measured whatever it is.
    Returns a one-line reason naming the entry.
    """
    if entry.architecture != "transformer" or CONTROL_TAG in entry.tags or model_type not in NOT_TRANSFORMERS:
        return None
    return (f"{entry.id}: model_type {model_type!r} is {NOT_TRANSFORMERS[model_type]}; the claims are about "
            f"Transformers (tag the entry '{CONTROL_TAG}' to measure it as a control)")


def config_of(model: str) -> dict[str, Any]:
    """The config of a local folder (its ``config.json``), or of a hub id: from the local Hugging Face cache
    (revision ``main``), else from the hub where it is reachable (probed once, without retries).

    Raises UndetectableModel naming the folder or id when neither can be read (offline: at once, saying it is not
    cached here).
    """
    path = Path(model)
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise UndetectableModel(f"{path}: no config.json in this folder (a transformers model folder has one)")
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UndetectableModel(f"{cfg}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise UndetectableModel(f"{path}: config.json holds a JSON {type(data).__name__}, not an object of "
                                    "config fields")
        return data
    from .hubcache import hub_id_problem

    if hub_id_problem(model) is not None:
        repo, at, revision = model.rpartition("@")
        if at and repo and revision and hub_id_problem(repo) is None:  # `me/minilm@v1`: pip's form, not read here
            raise UndetectableModel(
                f"{model!r} is no registry id, no model folder and no hub id: @{revision} is not read as a revision "
                f"in a model argument (a hub id runs at revision main); to run {repo} at revision {revision!r}, give "
                f"a registry row whose source is {{kind: hub, repo: {repo}, revision: {revision}}} and run its id")
        raise UndetectableModel(f"{model!r} is no registry id, no model folder and no hub id")
    from transformers import AutoConfig

    from .hubcache import resolve_commit
    from .base import HubStatus

    if resolve_commit(model) is not None:  # in the local Hugging Face cache (downloaded or `aniso hub import`)
        try:
            return AutoConfig.from_pretrained(model, local_files_only=True).to_dict()
        except Exception as exc:  # noqa: BLE001 - a damaged snapshot: say which
            raise UndetectableModel(f"{model}: its config in the Hugging Face cache cannot be read "
                                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not HubStatus().reachable():  # at once, rather than huggingface_hub's retries over ~30 s
        from .hubcache import not_cached_hints

        raise UndetectableModel(f"{model}: not cached here and the hub cannot be reached (HF_HUB_OFFLINE=1 or no "
                                "network); offline, only registry models, local folders and models put in the cache "
                                f"with `aniso hub import` run{not_cached_hints(model)}")
    try:
        return AutoConfig.from_pretrained(model).to_dict()  # no remote code: trust_remote_code stays False
    except Exception as exc:  # noqa: BLE001 - offline, unknown id, gated: all mean "cannot read it here"
        raise UndetectableModel(f"{model}: cannot read its config from the hub ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}); offline, only registry models "
                                "and local folders run") from None


def entry_fields(config: dict[str, Any]) -> dict[str, str]:
    """``modality``, ``granularity``, ``architecture``, ``role`` and ``family`` from a transformers config dict.

    Raises UndetectableModel when the config has no ``model_type`` or one whose modality is not known here, and
    NotATransformer (a subclass) when the model is not a Transformer (:func:`not_a_transformer`).
    """
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise UndetectableModel("the config has no model_type; add a models.yaml entry with modality, granularity, "
                                "architecture, role and family")
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    if model_type in NOT_TRANSFORMERS or (model_type not in _TYPES and _looks_like_text(config)):
        what = not_a_transformer(config)
        if what is not None:
            raise NotATransformer(f"model_type {model_type!r} is {what}; the claims are about Transformers, so it is "
                                  f"not detected: to measure it as a control, write its models.yaml entry by hand "
                                  f"with tags: [{CONTROL_TAG}]")
    contradiction = architectures_problem(config)
    if contradiction is not None:
        raise UndetectableModel(contradiction)
    if model_type in _TYPES:
        modality, granularity, architecture = _TYPES[model_type]
    elif _looks_like_text(config):
        modality, granularity, architecture = "text", "subword", "transformer"
    else:
        raise UndetectableModel(f"model_type {model_type!r}: its modality is not known to aniso; add a models.yaml "
                                "entry with modality, granularity, architecture, role and family")
    if config.get("is_encoder_decoder"):
        role = "encoder-decoder"
    elif modality == "text" and (config.get("is_decoder") or any(a.endswith(("ForCausalLM", "LMHeadModel"))
                                                                 for a in architectures)):
        role = "decoder"
    else:
        role = "encoder"
    return {"modality": modality, "granularity": granularity, "architecture": architecture, "role": role,
            "family": model_type}


def architectures_problem(config: dict[str, Any]) -> str | None:
    """Why a config.json contradicts itself: every class its ``architectures`` names is, by transformers' auto
    mappings (:func:`_class_model_types`), a class of another model type than its ``model_type`` (``BertModel``
    with ``roberta``); None otherwise."""
    model_type = config.get("model_type")
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    if not isinstance(model_type, str) or not architectures:
        return None
    owners = _class_model_types()
    foreign = [a for a in architectures if a in owners and model_type not in owners[a]]
    if not foreign or len(foreign) != len(architectures):
        return None
    return (f"config.json says model_type {model_type!r} but architectures {foreign}, transformers' class(es) of "
            f"model_type {' or '.join(repr(t) for t in sorted(owners[foreign[0]]))}: the config contradicts itself, "
            "so what the model is (and which weights it holds) cannot be told; fix the one that is wrong")


def _transformers_models() -> Path:
    """The installed transformers' ``models/`` folder, found without importing transformers
    (``importlib.util.find_spec``), for the readers of its source as data (:func:`_lm_model_types`,
    :func:`_attribute_map`). Raises AttributeError or TypeError where transformers is not installed as a folder."""
    import importlib.util

    return Path(list(importlib.util.find_spec("transformers").submodule_search_locations)[0]) / "models"


@functools.cache
def _lm_model_types() -> tuple[frozenset[str], frozenset[str]]:
    """The model types transformers has a causal-LM class for and those it has a masked-LM class for (its
    ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and ``MODEL_FOR_MASKED_LM_MAPPING_NAMES``). Read from the installed
    ``transformers/models/auto/modeling_auto.py`` as data (:mod:`ast`), without importing it, which would import
    torch (``aniso list`` judges a row's role without it); imported where that file cannot be read so."""
    import ast

    names = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_MASKED_LM_MAPPING_NAMES")
    try:
        source = _transformers_models() / "auto" / "modeling_auto.py"
        found = {}
        for node in ast.parse(source.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in names and isinstance(node.value, ast.Call) and node.value.args:
                found[node.targets[0].id] = frozenset(k for k, _ in ast.literal_eval(node.value.args[0]))
        return found[names[0]], found[names[1]]
    except (AttributeError, IndexError, KeyError, OSError, SyntaxError, TypeError, ValueError):
        from transformers.models.auto import modeling_auto

        return frozenset(getattr(modeling_auto, names[0])), frozenset(getattr(modeling_auto, names[1]))


def role_told(config: dict[str, Any]) -> str | None:
    """The role a transformers config (its fields as a dict) shows its model has, where it shows one, else None:
    ``encoder-decoder`` (``is_encoder_decoder``); ``decoder`` (``is_decoder``, a causal-LM class among its
    ``architectures``, or a ``model_type`` transformers has a causal-LM class for and no masked-LM class: GPT-2,
    OPT, Llama...); ``encoder`` (a ``model_type`` transformers has a masked-LM class for: BERT, RoBERTa, ALBERT...,
    which are encoders unless the config says ``is_decoder``). Other types (speech, vision, unknown) tell none."""
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES = _lm_model_types()

    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    model_type = config.get("model_type")
    if config.get("is_encoder_decoder") is True:
        return "encoder-decoder"
    if config.get("is_decoder") is True or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        return "decoder"
    if not isinstance(model_type, str):
        return None
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "encoder"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "decoder"
    return None


def _model_type_name(name: str) -> str:
    return name.replace("-", "_")


def declared_problem(entry, config: dict[str, Any] | None, vocabulary: list[str] | None = None) -> str | None:
    """Where a registry row's ``modality``, ``architecture``, ``granularity``, ``role`` or ``family`` contradicts the
    config of the model it loads (``config``, its fields as a dict; None: not judged) or its tokenizer's
    ``vocabulary`` (its tokens, where read), in one phrase naming the registry file and row (where the row was read
    from a file), the fields and what the config says, else None. Claims are chosen by these fields: a decoder's
    claim decided on an encoder's weights, or a character-level claim on a subword model, would be a finding about
    another model. The modality, architecture and granularity are judged by :func:`_kind_contradictions`.

    Judged only where the config tells: the role where :func:`role_told` reads one; the family where both it and the
    config's ``model_type`` are model types transformers knows (``-`` read as ``_``) and neither name begins the
    other (``gemma3`` / ``gemma3_text``). Rows of role ``block`` (an untrained block built by the suite) are not
    judged. A row whose ``relation`` (``same``, ``converted``) says it is its seed row's own weights is judged
    against the seed's ``full`` config (:func:`_seed_size_contradiction`: width and number of layers)."""
    if config is None or entry.role == "block":
        return None
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    said = _kind_contradictions(entry, config, vocabulary)
    if said:  # another kind of model: its role and family are beside the point
        return _refusal(entry, said)
    said += _role_contradiction(entry, config)
    model_type = config.get("model_type")
    family = _model_type_name(entry.family)
    if isinstance(model_type, str) and family in CONFIG_MAPPING_NAMES and model_type in CONFIG_MAPPING_NAMES \
            and not (family.startswith(model_type) or model_type.startswith(family)):
        said.append(f"family {entry.family!r}, but its config.json says model_type {model_type!r}")
    if said:
        return _refusal(entry, said)
    return _seed_size_contradiction(entry, config)


#: The config fields compared between a row whose relation is ``same`` or ``converted`` and its seed row's ``full``
#: config, by their transformers names (a config class's ``attribute_map`` gives its own: ``n_embd``, ``n_layer``),
#: with the other names they go by where a class maps none, and the words a refusal says of them.
_SEED_SIZES = (("hidden_size", ("hidden_size", "n_embd", "d_model"), "wide"),
               ("num_hidden_layers", ("num_hidden_layers", "n_layer"), "layers"))


def _config_size(config: dict[str, Any], name: str, other_names: tuple[str, ...]) -> int | None:
    """The value of transformers' standard attribute ``name`` in ``config`` (a config's fields as a dict, with its
    ``model_type``), read from the field :func:`_config_field` names, else under ``other_names``; None where none is
    a whole number."""
    for key in (_config_field(config, name), *other_names):
        value = config.get(key)
        if type(value) is int:
            return value
    return None


def _seed_size_contradiction(entry, config: dict[str, Any]) -> str | None:
    """For a row whose ``relation`` (``same``, ``converted``) says its weights are its seed row's own, where its
    loaded config's width or number of layers differs from the seed row's ``full`` config (its seed noted when the
    registry was read, :func:`aniso.sources.base.seed_of`), the one-line refusal naming the row, ``stands_for``,
    ``relation`` and both sizes; else None."""
    from .base import row_of, seed_of

    seed = seed_of(entry)
    if entry.relation not in ("same", "converted") or seed is None or not seed.full or not seed.tiny:
        return None
    full_type = seed.full.get("model_type", seed.tiny.get("model_type"))
    differ = []
    for name, others, word in _SEED_SIZES:
        ours = _config_size(config, name, others)
        theirs = _config_size({"model_type": full_type, **seed.full}, name, others)
        if ours is not None and theirs is not None and ours != theirs:
            differ.append((word, ours, theirs))
    if not differ:
        return None
    sizes = lambda which: ", ".join(f"{d[which]} {d[0]}" for d in differ)  # noqa: E731
    return (f"{row_of(entry)}: stands_for {entry.stands_for!r}, relation {entry.relation!r} (the seed's own weights), "
            f"but its config.json is {sizes(1)} where the seed row's full config is {sizes(2)}: the row is not its "
            "seed's weights; give relation relative (or the right stands_for)")


def _role_contradiction(entry, config: dict[str, Any]) -> list[str]:
    """The row's ``role`` where the config tells another (:func:`role_told`), in one phrase, or nothing."""
    role = role_told(config)
    if role is None or role == entry.role:
        return []
    architectures = ", ".join(a for a in config.get("architectures") or [] if isinstance(a, str))
    return [f"role {entry.role!r}, but its config.json makes it {'an' if role[0] == 'e' else 'a'} {role} "
            f"(model_type {config.get('model_type')!r}" + (f", {architectures})" if architectures else ")")]


def kind_problem(entry, config: dict[str, Any] | None, vocabulary: list[str] | None = None) -> str | None:
    """What :func:`declared_problem` says of the row's ``modality``, ``architecture``, ``granularity`` and ``role``
    (all but the family), without naming the row (``modality 'speech', but its config.json is bert, a text model``;
    ``role 'decoder', but its config.json makes it an encoder ...``), else None: what ``aniso list`` shows beside the
    row (no torch import: :func:`role_told` reads transformers' model types as data), so that it lists a row ``aniso
    run`` refuses as refused."""
    if config is None or entry.role == "block":
        return None
    said = _kind_contradictions(entry, config, vocabulary)
    return "; ".join(said or _role_contradiction(entry, config)) or None


def _refusal(entry, said: list[str]) -> str:
    from .base import row_of

    return (f"{row_of(entry)}: " + "; ".join(said) + ": the row's claims would be decided on another kind of "
            "model; fix the row's fields or its source")


def folder_vocabulary(folder: Path) -> list[str] | None:
    """The tokens of a model folder's tokenizer, read from its files without building it: ``tokenizer.json``'s
    model vocabulary (WordPiece, BPE, Unigram), else ``vocab.txt`` (one token a line); None when neither is there or
    readable."""
    file = folder / "tokenizer.json"
    try:
        if file.is_file():
            vocab = json.loads(file.read_text(encoding="utf-8")).get("model", {}).get("vocab")
            if isinstance(vocab, dict):
                return [t for t in vocab if isinstance(t, str)]
            if isinstance(vocab, list):  # Unigram: [token, score] pairs
                return [t[0] for t in vocab if isinstance(t, list) and t and isinstance(t[0], str)]
        file = folder / "vocab.txt"
        if file.is_file():
            return file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return None
    return None


#: Most tokens a byte-level vocabulary has: 256 bytes and a few special or sentinel tokens (ByT5: 384).
BYTE_VOCABULARY_MAX = 512
#: Fewest tokens of several characters that make a vocabulary a subword one (a character-level vocabulary holds
#: single characters, and a few special tokens or SMILES brackets; WordPiece and BPE vocabularies hold thousands).
SUBWORD_TOKENS_MIN = 1000
#: Marks of a continuation or a leading space in subword vocabularies (WordPiece ``##``, GPT-2 ``Ġ``, SentencePiece
#: ``▁``), not counted as characters of a token.
_PIECE_MARKS = ("##", "\u0120", "\u2581")
#: How a message names an architecture.
_ARCHITECTURE_NOUNS = {"transformer": "Transformer", "cnn": "CNN"}


def _what_config_is(config: dict[str, Any]) -> tuple[str, str | None, str] | None:
    """(modality, granularity or None where the config alone does not tell, architecture) of a config, where it
    tells them: a ``model_type`` of :data:`_TYPES`, or a text Transformer's fields (a vocabulary and layers)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type in NOT_TRANSFORMERS:
        return None
    if model_type in _TYPES:
        return _TYPES[model_type]
    if _looks_like_text(config) and any(f in config for f in ATTENTION_FIELDS):
        return "text", None, "transformer"
    return None


def _long_tokens(vocabulary: list[str]) -> int:
    """How many tokens of a vocabulary are several characters long once a subword mark is taken off (special
    tokens in brackets, ``[CLS]`` or ``<s>``, not counted)."""
    count = 0
    for token in vocabulary:
        if not isinstance(token, str) or (token[:1], token[-1:]) in (("[", "]"), ("<", ">")):
            continue
        for mark in _PIECE_MARKS:
            token = token.removeprefix(mark)
        count += len(token) > 1
    return count


#: model_type → the architectures a row may declare for it besides the detected one: hybrids that papers count on
#: either side. CvT (convolutional token embeddings and projections inside Transformer blocks) is one of the CNNs of
#: Godey et al. 2024 §3.2 (Fig. 4: "ResNet-50, EfficientNet, CvT, ConvNeXt, VAN"), and detected as a vision
#: Transformer where no row says otherwise.
HYBRID_ARCHITECTURES: dict[str, frozenset[str]] = {"cvt": frozenset({"cnn"})}


def tiny_problem(entry) -> str | None:
    """Where a row's ``tiny`` config (the twin built for it, :mod:`aniso.sources.twin`) is another kind of model than
    the row declares (``modality: speech`` with ``tiny: {model_type: bert}``): one phrase naming the field and the
    model type, read as :func:`declared_problem` reads a loaded config; or where a key of ``tiny`` or ``full`` is a
    slip from a field of that model type's config (:func:`misspelt_config_key`); else None. A twin run of such a row measured
    the wrong kind of model, or failed later on files its kind lacks."""
    if not entry.tiny or entry.role == "block":
        return None
    model_type = entry.tiny.get("model_type")
    family = _model_type_name(str(entry.family))
    own = isinstance(model_type, str) and (family.startswith(model_type) or model_type.startswith(family))
    # full's keys are read as tiny's model type's only where that is the row's family's: a tiny of another type
    # (a BERT tiny on a GPT-2 row) is the twin's check to name, before full's GPT-2 names look misspelt
    for where, config in (("tiny", entry.tiny), ("full", (entry.full or {}) if own else {})):
        misspelt = misspelt_config_key(config, config.get("model_type", model_type), where)
        if misspelt is not None:
            return misspelt
    said = _kind_contradictions(entry, dict(entry.tiny), None)
    if not said:
        return None
    return "tiny: " + "; ".join(p.replace("its config.json is", "its model_type is") for p in said)


def _kind_contradictions(entry, config: dict[str, Any], vocabulary: list[str] | None) -> list[str]:
    """The phrases of :func:`declared_problem` for a row's ``modality``, ``architecture`` and ``granularity``: a
    modality or architecture other than the config's (:func:`_what_config_is`: ``modality speech, but its
    config.json is bert, a text model``); a granularity other than a character- or byte-level ``model_type``'s; a
    ``byte`` row whose config has more than :data:`BYTE_VOCABULARY_MAX` tokens; a ``byte`` or ``char`` row whose
    tokenizer holds :data:`SUBWORD_TOKENS_MIN` or more tokens of several characters (a subword vocabulary)."""
    told = _what_config_is(config)
    if told is None:
        return []
    modality, granularity, architecture = told
    model_type = config["model_type"]
    said = []
    if entry.modality != modality:
        said.append(f"modality {entry.modality!r}, but its config.json is {model_type}, a {modality} model")
    if entry.architecture != architecture and entry.architecture not in HYBRID_ARCHITECTURES.get(model_type, ()):
        said.append(f"architecture {entry.architecture!r}, but its config.json is {model_type}, a "
                    f"{_ARCHITECTURE_NOUNS.get(architecture, architecture)}")
    if said:
        return said
    if granularity in ("char", "byte") and entry.granularity != granularity:
        said.append(f"granularity {entry.granularity!r}, but its config.json is {model_type}, a {granularity}-level "
                    "model")
    elif granularity is None and entry.granularity in ("byte", "char"):
        size = config.get("vocab_size")
        long = _long_tokens(vocabulary) if vocabulary is not None else 0
        if long >= SUBWORD_TOKENS_MIN:
            said.append(f"granularity {entry.granularity!r}, but its tokenizer is a subword one ({len(vocabulary):,} "
                        f"tokens, {long:,} of them several characters long)")
        elif entry.granularity == "byte" and isinstance(size, int) and size > BYTE_VOCABULARY_MAX:
            said.append(f"granularity 'byte', but its config.json has vocab_size {size:,} (a byte-level model has "
                        f"256 byte tokens and a few special ones, at most {BYTE_VOCABULARY_MAX})")
    return said


@functools.lru_cache(maxsize=1)
def _class_model_types() -> dict[str, frozenset[str]]:
    """transformers' model classes by name, each with the model_types its auto mappings give it
    (``GPT2LMHeadModel`` → {gpt2, gpt-sw3})."""
    from transformers.models.auto import modeling_auto

    owners: dict[str, set[str]] = {}
    for name in dir(modeling_auto):
        mapping = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
            for model_type, classes in mapping.items():
                for cls in classes if isinstance(classes, (list, tuple)) else [classes]:
                    owners.setdefault(cls, set()).add(model_type)
    return {cls: frozenset(types) for cls, types in owners.items()}


def _looks_like_text(config: dict[str, Any]) -> bool:
    """Whether a config (its fields as a dict) has a vocabulary and a layer count: transformers' standard
    ``num_hidden_layers`` under the name its config class gives it (``PretrainedConfig.attribute_map``: DistilBERT's
    and XLM's ``n_layers``, GPT-2's ``n_layer``, T5's ``num_layers``, …)."""
    return _config_field(config, "vocab_size") in config and _config_field(config, "num_hidden_layers") in config


#: The layer-count names of configs of a ``model_type`` transformers does not know (its config class unknown).
_LAYER_COUNT_NAMES = ("num_hidden_layers", "n_layer", "n_layers", "num_layers")


def _config_field(config: dict[str, Any], name: str) -> str:
    """The field of ``config`` (a transformers config as a dict) that holds transformers' standard attribute
    ``name`` (``num_hidden_layers``, ``vocab_size``, …): ``name`` where the config has it, else the name the config
    class of its ``model_type`` maps it to (``PretrainedConfig.attribute_map``: :func:`_attribute_map`); for a model
    type transformers does not know, the first of the usual layer-count names the config has
    (:data:`_LAYER_COUNT_NAMES`)."""
    if name in config:
        return name
    attribute_map = _attribute_map(config.get("model_type"))
    if attribute_map is not None:
        return attribute_map.get(name, name)
    if name == "num_hidden_layers":
        return next((f for f in _LAYER_COUNT_NAMES if f in config), name)
    return name


@functools.cache
def _attribute_map(model_type: Any) -> dict[str, str] | None:
    """The ``attribute_map`` of transformers' config class of ``model_type`` (standard name -> its field), or None
    where transformers has no config class of that type. Read from the installed
    ``transformers/models/<type>/configuration_<type>.py`` as data (:mod:`ast`), without importing it, which would
    import torch (``aniso list`` judges a row without it); imported (``CONFIG_MAPPING``) where that folder's files
    cannot be read so; None where transformers has no folder of that name."""
    import ast

    if not isinstance(model_type, str):
        return None
    try:
        folder = _transformers_models() / model_type.replace("-", "_")
        for source in sorted(folder.glob("configuration_*.py")):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                fields = {t.id: n.value for n in node.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                          for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
                if isinstance(fields.get("model_type"), ast.Constant) and fields["model_type"].value == model_type:
                    return dict(ast.literal_eval(fields["attribute_map"])) if "attribute_map" in fields else {}
        if not folder.is_dir():  # no model folder of that name: a type transformers does not know (or names
            return None          # otherwise: the usual layer-count names are read then)
    except (AttributeError, IndexError, OSError, SyntaxError, TypeError, ValueError):
        pass
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        return dict(CONFIG_MAPPING[model_type].attribute_map)
    except (KeyError, ImportError, AttributeError):
        return None


#: Names other model types' configs give transformers' standard size attributes (GPT-2's ``n_layer``, T5's
#: ``d_model``, ...): in a config of a type whose fields do not hold them, a slip from another model's config.
_OTHER_TYPES_NAMES = {"n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers",
                      "n_embd": "hidden_size", "d_model": "hidden_size", "n_head": "num_attention_heads",
                      "num_heads": "num_attention_heads", "n_heads": "num_attention_heads",
                      "n_positions": "max_position_embeddings", "n_inner": "intermediate_size",
                      "d_ff": "intermediate_size", "ffn_dim": "intermediate_size"}


@functools.cache
def _config_fields(model_type: Any) -> frozenset[str] | None:
    """The fields transformers' config class of ``model_type`` declares (its annotated class attributes, those of
    ``PreTrainedConfig`` and its ``attribute_map``'s names), read from the installed sources as data (:mod:`ast`,
    without importing torch); None where they cannot be read so (then no key is judged)."""
    import ast

    if not isinstance(model_type, str):
        return None

    def declared(source: Path, match) -> set[str] | None:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and match(node):
                return {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)
                        and isinstance(n.target, ast.Name)}
        return None

    def of_type(node) -> bool:
        return any(isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Constant)
                   and n.value.value == model_type and any(isinstance(t, ast.Name) and t.id == "model_type"
                                                           for t in (n.targets if isinstance(n, ast.Assign)
                                                                     else [n.target])) for n in node.body)

    try:
        root = _transformers_models()
        own = next((f for source in sorted((root / model_type.replace("-", "_")).glob("configuration_*.py"))
                    for f in [declared(source, of_type)] if f), None)
        base = declared(root.parent / "configuration_utils.py", lambda node: node.name == "PreTrainedConfig")
    except (AttributeError, IndexError, OSError, SyntaxError, TypeError, ValueError):
        return None
    if not own or not base:  # a config class not written as annotated fields: nothing judged
        return None
    return frozenset(own | base | set(_attribute_map(model_type) or {}))


def misspelt_config_key(config: dict[str, Any], model_type: Any, where: str) -> str | None:
    """``"WHERE.KEY: no field of MODEL_TYPE's config; did you mean FIELD? …"`` for the first key of ``config`` that
    transformers' config class of ``model_type`` does not declare (:func:`_config_fields`) and that is one slip from
    one it does (``num_hidden_layer``, ``hidden_sise``): transformers would keep it as an unread attribute and build
    the default. A key near no field is left alone (a model's own extra field); None where nothing is misspelt."""
    import difflib

    fields = _config_fields(model_type)
    if fields is None:
        return None
    for key in config:
        if key == "model_type" or key in fields:
            continue
        standard = _OTHER_TYPES_NAMES.get(key)
        if standard is not None:  # `n_layer` (GPT-2's name) in a BERT config: not near any of its fields
            field = (_attribute_map(model_type) or {}).get(standard, standard)
            if field in fields:
                return (f"{where + '.' if where else ''}{key}: no field of {model_type}'s config (another model "
                        f"type's name for {standard}); write {field} (transformers would keep {key} unread and "
                        f"build its default {field})")
        close = difflib.get_close_matches(str(key), sorted(fields), n=1, cutoff=0.85)
        if close:
            return (f"{where + '.' if where else ''}{key}: no field of {model_type}'s config; did you mean {close[0]}? "
                    f"(transformers would "
                    f"keep {key} unread and build its default {close[0]})")
    return None


def registry_entry(model: str, config: dict[str, Any]) -> dict[str, Any]:
    """A registry row (as YAML data) for ``model`` (a local folder or hub id) with fields from ``config``.

    Raises UndetectableModel / NotATransformer as :func:`entry_fields`, the message prefixed with ``model``.
    """
    try:
        fields = entry_fields(config)
    except UndetectableModel as exc:
        raise type(exc)(f"{model}: {exc}") from None
    path = Path(model)
    ident = detected_id(path.name if path.is_dir() else model)
    source = {"kind": "local", "path": str(path.resolve())} if path.is_dir() else {"kind": "hub", "repo": model}
    return {"id": ident, "source": source, **fields,
            "description": f"run by `aniso run {model}`; fields detected from its config"}


#: The longest registry id (:data:`aniso.registry.entries.ID_MAX_LENGTH`), and the characters of a detected id kept
#: from the name when it is longer (the rest: ``-`` and 8 hex digits of the whole name's SHA-256).
DETECTED_ID_MAX = 128
_DETECTED_ID_KEPT = DETECTED_ID_MAX - 9


def detected_id(name: str) -> str:
    """The registry id of a model detected from a folder, file or hub id ``name``: its letters with accents as the
    letters without them (``é`` as ``e``), its other characters outside ``[A-Za-z0-9._-]`` as ``-``, beginning with a
    letter or digit (``"model"`` when none is left). When a letter or digit of the name has no such ASCII form (``模型``,
    ``ß``; a byte of a file name that is no UTF-8 counts as one), when nothing of the name is left (``🤗``, ``-.-``:
    ``model`` and the digest), or when the id is longer than a registry id may be, the id ends with ``-`` and 8 hex digits of the whole
    name's SHA-256 (kept to its first 119 characters before them), so that two names that differ only there get two
    ids rather than one, and no folder takes another's id by losing its letters. Always a valid registry id
    (:data:`aniso.registry.entries.ID_PATTERN`)."""
    import hashlib
    import unicodedata

    kept, lost = [], False
    for char in unicodedata.normalize("NFKD", name):
        if char.isascii():
            kept.append(char)
        elif unicodedata.combining(char):  # the accent of a letter kept above
            continue
        else:
            lost = lost or unicodedata.category(char)[0] in "LN" or unicodedata.category(char) == "Cs"
            kept.append("-")
    ident = re.sub(r"[^A-Za-z0-9._\-]", "-", "".join(kept)).lstrip("-._").rstrip("-")
    lost = lost or (not ident and name not in ("", "model"))  # nothing left of the name (🤗, -.-): its digest says it
    ident = ident or "model"
    if lost or len(ident) > DETECTED_ID_MAX:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        ident = f"{ident[:_DETECTED_ID_KEPT]}-{digest}"
    return ident


def link_problem(path: Path) -> str:
    """What a symbolic link that cannot be followed is, in one phrase: ``"a symbolic link to itself, or a loop of
    links"`` (the system's ELOOP), or ``"a symbolic link to TARGET, which does not exist"``."""
    import errno

    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link to itself, or a loop of links"
    return f"a symbolic link to {os.path.realpath(path)}, which does not exist"


def detect_entry(model: str) -> dict[str, Any]:
    """A registry row (as YAML data) for ``model``, a file, folder or hub id the registry lacks (``aniso run``).

    A file or folder is read by the first source kind of :data:`aniso.sources.SOURCE_KINDS` whose ``detect``
    recognises its format (a transformers folder, a llama2.c checkpoint, an ONNX CNN, ...); anything else is a hub id
    (:func:`config_of`, :func:`registry_entry`). The row's id is the file's stem or the folder's name.

    Raises UndetectableModel (one line, beginning with ``model``) when the path is a symbolic link that loops or
    leads nowhere (:func:`link_problem`), when it is no folder and no regular file (a FIFO, a device, a socket;
    before anything opens it), when it is a Git LFS pointer (a clone without git-lfs), when it is in no format a kind reads (naming the formats; for a folder that holds a
    file a kind reads, such as an ONNX file or a llama2.c checkpoint, naming that file and saying to give it; for a
    PEFT adapter, saying to merge it into its base model),
    when a kind recognises it but cannot tell what its entry needs, and as
    :func:`registry_entry` for a hub id.
    """
    from . import SOURCE_KINDS

    path = Path(model).expanduser()
    if not path.exists():
        if path.is_symlink():  # a link that loops or leads nowhere: no hub id, whatever its name
            raise UndetectableModel(f"{model} is {link_problem(path)}")
        return registry_entry(model, config_of(model))
    if not path.is_dir():  # a FIFO would block the open, a device never end: refused before any kind reads it
        from ..common.files import lfs_pointer, not_a_regular_file

        why = not_a_regular_file(path) or lfs_pointer(path)  # a clone without git-lfs: no format's bytes
        if why is not None:
            link = f" (a symbolic link to {os.path.realpath(path)})" if path.is_symlink() else ""
            raise UndetectableModel(f"{model}{link} {why}")
    kinds = [k for k in SOURCE_KINDS.values() if k.detect is not None]
    for kind in kinds:
        try:
            fields = kind.detect(path)
        except UndetectableModel as exc:
            raise type(exc)(f"{model}: {exc}") from None
        if fields is not None:
            name = path.name if path.is_dir() else path.stem
            ident = detected_id(name)
            return {"id": ident, **fields,
                    "description": f"run by `aniso run {model}`; fields detected from its {kind.name} files"}
    formats = [k.detects for k in kinds]
    if path.is_dir():
        module = _sentence_transformer_module(path)
        if module is not None:
            raise UndetectableModel(f"{model}: not in a format aniso reads as a folder (a transformers model folder has "
                                    f"config.json); it is a sentence-transformers folder whose modules.json puts its "
                                    f"Transformer in {module}/, a transformers model folder: give that folder "
                                    f"({os.path.join(model, module)})")
        from .hubcache import peft_adapter

        adapter = peft_adapter(path)
        if adapter is not None:
            raise UndetectableModel(f"{model}: {adapter}")
        inside = _model_file_inside(path, kinds)
        if inside is not None:
            name, what = inside
            raise UndetectableModel(f"{model}: not in a format aniso reads as a folder (a transformers model folder has "
                                    f"config.json); it holds {name}, {what}; give the file itself, "
                                    f"not its folder ({os.path.join(model, name)})")
    raise UndetectableModel(f"{model}: not in a format aniso reads: {', '.join(formats[:-1])} or {formats[-1]}")


def file_kind(path: Path) -> tuple[str, str, bool] | None:
    """The source kind of :data:`aniso.sources.SOURCE_KINDS` that reads the file ``path`` as a model file, as (its
    name, what it is: the kind's ``detects``, or the kind's one-line reason why its entry cannot be told, and
    whether it is the former), or None (a file no kind reads, or one that is no regular file: a FIFO would block, it
    is never opened)."""
    from . import SOURCE_KINDS
    from ..common.files import not_a_regular_file

    if path.is_dir() or not_a_regular_file(path) is not None:
        return None
    for kind in (k for k in SOURCE_KINDS.values() if k.detect is not None):
        try:
            fields = kind.detect(path)
        except UndetectableModel as exc:
            return kind.name, str(exc), False
        except OSError:
            return None
        if fields is not None:
            return kind.name, kind.detects, True
    return None


#: Most files of a folder in no format read one by one to tell whether one of them is a model file.
_FILES_LOOKED_AT = 64


def _sentence_transformer_module(folder: Path) -> str | None:
    """The sub-folder that a sentence-transformers folder's ``modules.json`` names for its Transformer module (the
    older layout: ``0_Transformer/``, with no config.json at the top) where it holds a config.json, else None."""
    import json

    from ..common.files import not_a_regular_file

    listing = folder / "modules.json"
    if not listing.is_file() or not_a_regular_file(listing) is not None or listing.stat().st_size > 1_000_000:
        return None
    try:
        modules = json.loads(listing.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    for module in modules if isinstance(modules, list) else []:
        if not isinstance(module, dict) or not str(module.get("type", "")).endswith(".Transformer"):
            continue
        sub = str(module.get("path") or "")
        if sub and not os.path.isabs(sub) and ".." not in Path(sub).parts and (folder / sub / "config.json").is_file():
            return sub
    return None


def _model_file_inside(folder: Path, kinds) -> tuple[str, str] | None:
    """The first file of ``folder`` (by name; regular files only, the first :data:`_FILES_LOOKED_AT`) that a kind
    of ``kinds`` reads as a model file, as (its name, what it is: the kind's ``detects``, or the kind's one-line
    reason why its entry cannot be told, e.g. a llama2.c checkpoint without its tokenizer), or None."""
    from ..common.files import not_a_regular_file

    try:
        names = sorted(os.listdir(folder))[:_FILES_LOOKED_AT]
    except OSError:
        return None
    for name in names:
        path = folder / name
        if path.is_dir() or not_a_regular_file(path) is not None:  # a FIFO would block: never opened
            continue
        for kind in kinds:
            try:
                fields = kind.detect(path)
            except UndetectableModel as exc:
                return name, str(exc)
            except OSError:
                break
            if fields is not None:
                return name, kind.detects
    return None


#: Files every tokenizer class may read (the fast tokenizer's, the settings): no sign of one class or another.
_SHARED_TOKENIZER_FILES = frozenset({"tokenizer.json", "tokenizer_config.json"})


@functools.lru_cache(maxsize=None)
def _vocabulary_files(class_name: str) -> frozenset[str] | None:
    """The vocabulary files transformers' tokenizer class ``class_name`` reads (its ``vocab_files_names``), less
    :data:`_SHARED_TOKENIZER_FILES`; None for a class that cannot be imported here."""
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    try:
        names = tokenizer_class_from_name(class_name).vocab_files_names
    except Exception:  # a class needing a library not installed (sentencepiece), or none
        return None
    return frozenset(v for v in (names or {}).values() if isinstance(v, str)) - _SHARED_TOKENIZER_FILES


def _tokenizer_classes(names: Any) -> list[str]:
    return [n for n in (names if isinstance(names, (list, tuple)) else [names]) if isinstance(n, str)]


def tokenizer_problem(folder: Path, config: dict[str, Any]) -> str | None:
    """Why the model folder ``folder`` cannot be measured as its config's ``model_type``: its tokenizer files are
    another model type's (a BERT folder, ``vocab.txt``, whose config.json says ``model_type: roberta``); None when
    they are its own, when its ``tokenizer_config.json`` names its tokenizer class, or when nothing tells.

    The model type's own tokenizer class and every other's vocabulary files are transformers'
    (``TOKENIZER_MAPPING_NAMES`` and each class's ``vocab_files_names``). A folder holding none of its own class's
    files but every file of another model type's class, and a ``tokenizer.json`` (which the config's class reads
    whatever tokenizer wrote it), was loaded under the config's classes without a word, and
    measured wrong: RoBERTa's position ids start after its padding id, so BERT weights loaded as RoBERTa read each
    token at the next position (layer 0 average cosine 0.18 instead of the model's own 0.05)."""
    import json

    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in TOKENIZER_MAPPING_NAMES:
        return None
    try:
        told = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        told = None
    if told:  # the folder names its tokenizer itself
        return None
    present = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    own_classes = _tokenizer_classes(TOKENIZER_MAPPING_NAMES[model_type])
    own = [files for files in map(_vocabulary_files, own_classes) if files]
    if not own or any(files & present for files in own) or "tokenizer.json" not in present:
        return None  # (without tokenizer.json the config's class cannot load, and says so)
    for names in TOKENIZER_MAPPING_NAMES.values():
        for name in _tokenizer_classes(names):
            if name in own_classes:
                continue
            files = _vocabulary_files(name)
            if files and files <= present and files not in own:
                wanted = " or ".join(", ".join(sorted(f)) for f in own)
                return (f"config.json says model_type {model_type!r}"
                        + (f" (architectures {config['architectures']})" if config.get("architectures") else "")
                        + f", but its tokenizer files ({', '.join(sorted(files))}, tokenizer.json) are {name}'s, "
                        f"and it has none of {model_type}'s ({wanted}): the weights are likely "
                        f"another model's, which would be measured wrong as {model_type}; fix config.json's "
                        "model_type and architectures to the model's own (or name the tokenizer in "
                        "tokenizer_config.json's tokenizer_class)")
    return None
