"""Source kind ``hub``: a model on the Hugging Face hub, loaded with ``from_pretrained`` at a revision.

The local Hugging Face cache is read first (the revision resolved to a commit there, no network; a model folder
gets there with ``aniso hub import``, see :mod:`aniso.sources.hubcache`); the hub only if it is reachable (probed once per
run), so an offline machine skips hub models at once, saying which weights are not cached here. Safetensors only;
remote code and credentials only with the entry's explicit opt-in.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions

__all__ = ["HubSource", "Placement", "KIND", "from_pretrained", "tokenizer_problem", "vocabulary_cover_problem",
           "placement_key", "folder_problem", "weights_problem",
           "integer_weights_problem", "unread_config_problem", "vocabulary_problem", "token_lines_problem", "cannot_build", "shape_fields",
           "NO_VOCABULARY_TOKENIZERS", "VOCABULARY_FILES"]


class Placement(Strict):
    """How a model's weights are held: ``dtype`` (float32, the default, or half precision for models too big for
    it) and ``device_map: auto`` (accelerate spreads the layers over every GPU of the node, then the CPU)."""

    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    device_map: Literal["auto"] | None = None


class HubSource(Placement):
    """A model on the Hugging Face hub, loaded with ``from_pretrained`` at ``revision``."""

    kind: Literal["hub"]
    repo: str = Field(min_length=1)
    revision: str = "main"

    @field_validator("repo")
    @classmethod
    def _hub_id(cls, value: str) -> str:
        """A repo id of the hub's form and length (:func:`aniso.sources.hubcache.hub_id_problem`), else ValueError
        (a path such as ``../evil`` would reach the hub cache's folders)."""
        from .hubcache import hub_id_problem, shown

        problem = hub_id_problem(value)
        if problem is not None:
            raise ValueError(f"{shown(value)} is not a hub repo id ({problem})")
        return value

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        """A branch, tag or commit of the hub's form and length (:func:`aniso.sources.hubcache.revision_problem`)."""
        from .hubcache import revision_problem, shown

        problem = revision_problem(value)
        if problem is not None:
            raise ValueError(f"{shown(value)}: {problem}")
        return value


def placement_key(source) -> str:
    """What a source's placement adds to its fingerprint: ``""`` for float32, else ``":<dtype>"`` (half precision
    changes the numbers; where the layers run does not)."""
    dtype = getattr(source, "dtype", "float32")
    return "" if dtype == "float32" else f":{dtype}"


#: Tokenizer classes that need no vocabulary file (characters or bytes are their own ids).
NO_VOCABULARY_TOKENIZERS = ("CanineTokenizer", "ByT5Tokenizer")
#: Files that hold a tokenizer's vocabulary (one of them is in every repository whose tokenizer needs one).
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "tokenizer.model",
                    "sentencepiece.bpe.model", "spm.model", "sentencepiece.model", "vocab.model", "bpe.codes")
#: Exceptions of a model's construction from a config that cannot be built (not OSError: files not found).
def _build_errors() -> tuple[type[BaseException], ...]:
    """What building a model from a config.json that does not fit its class raises: Python's errors, and the
    validation error of a config field of the wrong type (``num_hidden_layers: "six"``: huggingface_hub's strict
    dataclasses, not a ValueError)."""
    errors: tuple[type[BaseException], ...] = (ValueError, TypeError, KeyError, AttributeError, IndexError,
                                               AssertionError, RuntimeError)
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # an older huggingface_hub: no strict dataclasses
        return errors
    return errors + (StrictDataclassError,)


_BUILD_ERRORS = _build_errors()


def folder_problem(folder: str | Path, modality: str) -> str | None:
    """What a model folder lacks or has wrong for a faithful load, read from its files without loading a tensor, or
    None. Checked: every weights, config or tokenizer file is a regular file, not a symbolic link to nothing, a
    folder, a FIFO or a device (:func:`aniso.sources.hubcache.unreadable_model_file`); ``config.json`` is there
    and is a JSON object whose counts, sizes, epsilons and padding id a model can be built with
    (:func:`aniso.sources.hubcache.config_values_problem`) and asks for nothing the installed transformers no longer
    builds (:func:`unread_config_problem`); every ``.safetensors`` file's header agrees with its size
    (:func:`aniso.sources.hubcache.safetensors_problem`), the weights have a name transformers reads and the shards
    an index names are there (:func:`aniso.sources.hubcache.missing_weights`); the
    preprocessing files of ``modality`` are there: for text, the tokenizer's vocabulary (one of
    :data:`VOCABULARY_FILES`, unless the tokenizer class, from ``tokenizer_config.json``, needs none:
    :data:`NO_VOCABULARY_TOKENIZERS`, or is the repository's own code), for speech and vision
    ``preprocessor_config.json``. The answer is one phrase naming the file."""
    import json

    from .hubcache import (config_values_problem, missing_weights, peft_adapter, safetensors_problem,
                           unreadable_model_file)

    folder = Path(folder)
    broken = unreadable_model_file(folder)  # a link to nothing, a folder, a FIFO or a device: never opened
    if broken is not None:
        return broken
    config = folder / "config.json"
    if not config.is_file():
        return peft_adapter(folder) or "no config.json (a transformers model folder has one)"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"config.json is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return f"config.json holds a JSON {type(data).__name__}, not an object of config fields"
    nonsense = config_values_problem(data)  # a zero count, a negative epsilon, a padding id past the vocabulary
    if nonsense is not None:
        return nonsense
    unread = unread_config_problem(data)  # a field this transformers no longer builds by (relative positions)
    if unread is not None:
        return unread
    for path in sorted(folder.glob("*.safetensors")):
        damaged = safetensors_problem(path)
        if damaged is not None:
            return f"{path.name}: {damaged}"
    lacking = missing_weights(folder)
    if lacking is not None:
        return lacking
    return preprocessing_problem(folder, modality)


#: Config fields that choose how a model is built, whose values other than the default (the second item) a model
#: type's transformers code must name to build it so: an older transformers read them where this one may not.
_BUILD_CHOICES = (("position_embedding_type", "absolute"),)


def unread_config_problem(config: dict) -> str | None:
    """Where a config (its fields as a dict) asks for a way of building its model that the installed transformers'
    code of its ``model_type`` does not have (:data:`_BUILD_CHOICES`: e.g. BERT's ``position_embedding_type:
    relative_key``, which transformers 5 no longer reads, building absolute positions only): the model built would
    not be the one the config describes, and the weights of what it lacks (``distance_embedding``) would go unread.
    One phrase naming config.json, the field and its value, or None (also where the model type's code cannot be
    found here: the load says what is wrong)."""
    import importlib.util

    model_type = config.get("model_type")
    asked = [(f, config[f]) for f, default in _BUILD_CHOICES
             if isinstance(config.get(f), str) and config[f] != default]
    if not asked or not isinstance(model_type, str):
        return None
    try:
        from transformers import __version__
        from transformers.models.auto.configuration_auto import model_type_to_module_name

        module = model_type_to_module_name(model_type)
        spec = importlib.util.find_spec(f"transformers.models.{module}.modeling_{module}")
        code = Path(spec.origin).read_text(encoding="utf-8") if spec is not None and spec.origin else None
    except (ImportError, ValueError, OSError, AttributeError):
        return None
    if code is None:
        return None
    for field, value in asked:
        if f'"{value}"' not in code and f"'{value}'" not in code:
            default = dict(_BUILD_CHOICES)[field]
            built = (f"builds model_type {model_type!r} with {field} {default!r} only (its code does not read the "
                     "field)" if field not in code else f"has no {field} {value!r} for model_type {model_type!r}")
            return (f"config.json {field} {value!r}: transformers {__version__} {built}, so the model measured would "
                    f"not be the one its config describes, and the weights of its {value!r} positions would go "
                    f"unread (if the weights are of {default!r} ones, the field is wrong: set it to {default!r})")
    return None


def preprocessing_problem(folder: str | Path, modality: str) -> str | None:
    """What a model folder lacks of the files that turn its inputs into the model's (see :func:`folder_problem`):
    for text the tokenizer's vocabulary, for speech and vision ``preprocessor_config.json``; one phrase or None."""
    import json

    from ..inputs.forms import INPUT_FORMS

    folder = Path(folder)
    form = INPUT_FORMS.get(modality)  # the registry's modality names the kind of inputs it reads
    if form is None:
        return None
    if form.processor is None:  # a tokenizer reads them
        tokenizer_class, remote = None, False
        tokenizer_config = folder / "tokenizer_config.json"
        if tokenizer_config.is_file():
            try:
                tok = json.loads(tokenizer_config.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                return f"tokenizer_config.json is not valid JSON ({exc})"
            if isinstance(tok, dict):
                tokenizer_class, remote = tok.get("tokenizer_class"), "auto_map" in tok
        if remote or str(tokenizer_class or "").removesuffix("Fast") in NO_VOCABULARY_TOKENIZERS:
            return None
        if not any((folder / name).is_file() for name in VOCABULARY_FILES):
            return ("no tokenizer files: none of " + ", ".join(VOCABULARY_FILES[:5]) + "... (without them "
                    "transformers builds a tokenizer of a few tokens and every word becomes unknown)")
        for name in TOKENIZER_JSON_FILES:
            problem = _json_problem(folder / name)
            if problem is not None:
                return problem
        vocab = folder / "vocab.txt"
        if not (folder / "tokenizer.json").is_file() and vocab.is_file() and not _holds_text(vocab):
            return ("vocab.txt is empty: no tokens, not even the unknown-word token (a WordPiece vocabulary lists "
                    "one token a line)")
        return vocabulary_problem(folder)
    elif not (folder / "preprocessor_config.json").is_file():
        return f"no preprocessor_config.json (the {form.processor} of the model)"
    else:
        return _json_problem(folder / "preprocessor_config.json")
    return None


#: A sentence a loaded tokenizer must read (words, digits, an accent, a CJK character and a symbol that a vocabulary
#: may lack: a tokenizer without an unknown-word token fails on them as it would on the corpus).
TOKENIZER_PROBE = "The quick brown fox jumps over the lazy dog, 0123456789 times. Caf\u00e9 \u4e2d \u2603"

#: JSON files of a tokenizer, besides ``tokenizer_config.json`` (checked with the tokenizer class it names).
TOKENIZER_JSON_FILES = ("tokenizer.json", "special_tokens_map.json", "added_tokens.json", "vocab.json")


def _json_problem(path: Path) -> str | None:
    """``"NAME is not valid JSON (the error, with its line and column)"`` for a file that is there and is not JSON
    (or not UTF-8), else None."""
    import json

    if not path.is_file():
        return None
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"{path.name} is not valid JSON ({exc})"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror or type(exc).__name__})"
    return None


#: What follows a vocabulary's duplicates in the refusal: why the model cannot be measured faithfully with it.
_DUPLICATES_WRONG = ("a token listed twice keeps one id only and tokens sharing an id read as one, so the text reaches "
                     "the model as other ids than it was trained on; a vocabulary lists each token once, with an id "
                     "of its own")


class _JSONObject(dict):
    """A JSON object as :func:`vocabulary_problem` reads it: ``repeated`` holds its (key, value) pairs whose key an
    earlier pair of the object already gave (``json`` keeps the last value of a key and says nothing), and
    ``first_pairs`` all its pairs in order where there are such (else empty)."""

    repeated: tuple = ()
    first_pairs: tuple | list = ()


def _json_object(pairs: list) -> _JSONObject:
    obj = _JSONObject(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        obj.repeated = tuple((k, v) for k, v in pairs if k in seen or seen.add(k))
        obj.first_pairs = pairs  # to name both ids of the first key given twice
    return obj


def vocabulary_problem(folder: str | Path) -> str | None:
    """Whether a tokenizer's vocabulary in ``folder`` lists a token more than once or gives one id to several tokens
    (which the tokenizers read without a word: a repeated token keeps its last id, the others' ids are never given),
    as one phrase naming the file, how many duplicates and the first one; None if it does not, or if the file cannot be
    read (the tokenizer's load says so). Checked: the model's ``vocab`` in ``tokenizer.json`` (a mapping of
    WordPiece, BPE or WordLevel, or the pieces of a Unigram model); without ``tokenizer.json``, the files transformers
    builds the tokenizer from: ``vocab.json`` (a mapping) and ``vocab.txt`` (one token a line, as transformers'
    ``load_vocab`` reads it: every line, its newline stripped)."""
    import json

    folder = Path(folder)
    for name in ("tokenizer.json", "vocab.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_json_object)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        model = data.get("model") if name == "tokenizer.json" and isinstance(data, dict) else None
        vocab = model.get("vocab") if isinstance(model, dict) else data if name == "vocab.json" else None
        where = f"{name}: its model's vocab" if name == "tokenizer.json" else name
        problem = _mapping_duplicates(vocab, where) if isinstance(vocab, dict) else _pieces_duplicates(vocab, where)
        if problem is not None or name == "tokenizer.json":
            return problem  # with a tokenizer.json, the other vocabulary files are not read
    path = folder / "vocab.txt"
    if not path.is_file():
        return None
    try:
        with path.open(encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f.readlines()]
    except (OSError, UnicodeDecodeError):
        return None
    return token_lines_problem(tokens, "vocab.txt")


def token_lines_problem(tokens: list[str], name: str) -> str | None:
    """Whether a vocabulary of one token a line (``tokens``, the line number less one each token's id) lists a token
    more than once, as one phrase naming the file ``name``, how many duplicates and the first one (its two line
    numbers), or None. Used for ``vocab.txt`` (:func:`vocabulary_problem`) and the SMILES tokenizer's vocabulary."""
    first_line: dict[str, int] = {}
    duplicates, first = 0, None
    for number, token in enumerate(tokens, start=1):
        if token in first_line:
            duplicates += 1
            first = first or (token, first_line[token], number)
        else:
            first_line[token] = number
    if not duplicates:
        return None
    token, a, b = first
    return (f"{name} has {duplicates} duplicate entr{'ies' if duplicates != 1 else 'y'} of its {len(tokens)} lines "
            f"(the first: {token!r} on lines {a} and {b}): {_DUPLICATES_WRONG}")


def _mapping_duplicates(vocab: dict, where: str) -> str | None:
    """A token -> id mapping's keys given twice, or ids given to several tokens, as one phrase (see
    :func:`vocabulary_problem`), or None."""
    repeated = getattr(vocab, "repeated", ())
    if repeated:
        token = repeated[0][0]
        ids = [v for k, v in vocab.first_pairs if k == token][:2]
        n = len(repeated)
        return (f"{where} has {n} duplicate entr{'ies' if n != 1 else 'y'} of {len(vocab.first_pairs)} (the first: "
                f"{token!r}, given ids {ids[0]!r} and {ids[1]!r}): {_DUPLICATES_WRONG}")
    holders: dict = {}
    shared, first = 0, None
    for token, index in vocab.items():
        key = index if isinstance(index, (int, str)) else repr(index)
        if key in holders:
            shared += 1
            first = first or (index, holders[key], token)
        else:
            holders[key] = token
    if not shared:
        return None
    index, a, b = first
    return (f"{where} gives {shared} of its {len(vocab)} tokens an id another token has (the first: id {index!r} to "
            f"{a!r} and {b!r}): {_DUPLICATES_WRONG}")


def _pieces_duplicates(vocab, where: str) -> str | None:
    """A Unigram model's list of ``[piece, score]`` whose pieces repeat, as one phrase, or None (also for what is no
    such list)."""
    if not isinstance(vocab, list):
        return None
    first_place: dict = {}
    duplicates, first = 0, None
    for place, item in enumerate(vocab):
        if not isinstance(item, list) or not item or not isinstance(item[0], str):
            return None
        if item[0] in first_place:
            duplicates += 1
            first = first or (item[0], first_place[item[0]], place)
        else:
            first_place[item[0]] = place
    if not duplicates:
        return None
    piece, a, b = first
    return (f"{where} has {duplicates} duplicate entr{'ies' if duplicates != 1 else 'y'} of {len(vocab)} (the first: "
            f"{piece!r}, ids {a} and {b}): {_DUPLICATES_WRONG}")


def _holds_text(path: Path) -> bool:
    """Whether a text file holds anything but white space (read up to its first non-blank bytes)."""
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                if chunk.strip():
                    return True
    except OSError:  # unreadable: the tokenizer's load says so
        return True
    return False


def _read_by_tokenizer(modality: str) -> bool:
    """Whether the inputs of ``modality`` reach the model through a tokenizer (its row of
    :data:`aniso.inputs.forms.INPUT_FORMS` names no processor), not a feature extractor or image processor."""
    from ..inputs.forms import INPUT_FORMS

    form = INPUT_FORMS.get(modality)
    return form is not None and form.processor is None


def _preprocessing_files(folder: str | Path | None, modality: str) -> str:
    """The preprocessing files a folder holds for ``modality``, named for a refusal: ``"tokenizer_config.json,
    vocab.txt"``; ``"its tokenizer files"`` (``"its preprocessor_config.json"``) where there is no folder."""
    if not _read_by_tokenizer(modality):
        return "preprocessor_config.json"
    return _tokenizer_files(folder)


def _tokenizer_files(folder: str | Path | None) -> str:
    """The tokenizer files a folder holds, named for a refusal (``"its tokenizer files"`` where there is none)."""
    names = ("tokenizer_config.json", *VOCABULARY_FILES, "special_tokens_map.json", "added_tokens.json", "merges.txt")
    held = [name for name in dict.fromkeys(names) if folder is not None and (Path(folder) / name).is_file()]
    return ", ".join(held) if held else "its tokenizer files"


def weights_problem(model: Any, info: dict) -> str | None:
    """Whether every weight of a loaded model came from its files, from ``from_pretrained``'s loading info: None,
    or one phrase saying which weights the config builds that the files lack (they would be randomly initialised),
    which weights the files hold for modules of the model that it does not build (the config names fewer layers or
    other sizes), or which differ in shape. Weights of a head the base model does not have (e.g. ``lm_head``,
    ``cls``, ``classifier``) are not the model's, and a saved buffer the model recomputes is not a weight."""
    def listed(keys) -> str:
        keys = sorted(keys)
        return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")

    mismatched = list(info.get("mismatched_keys") or [])
    if mismatched:
        names = [k[0] if isinstance(k, (tuple, list)) else k for k in mismatched]
        return f"{len(names)} weight(s) of another shape than its config builds ({listed(names)})"
    missing = list(info.get("missing_keys") or [])
    if missing:
        return (f"{len(missing)} weight(s) its config builds are not in the weights files, so they would be randomly "
                f"initialised ({listed(missing)}): the config does not match the weights")
    children = {name for name, _ in model.named_children()} | {name for name, _ in model.named_parameters(recurse=False)}
    buffers = {name for name, _ in model.named_buffers()}
    prefix = f"{getattr(model, 'base_model_prefix', '') or ''}."  # a head model's checkpoint: bert.encoder...
    unexpected = [k.removeprefix(prefix) if prefix != "." else k for k in info.get("unexpected_keys") or []]
    own = [k for k in unexpected if k.split(".")[0] in children and k not in buffers]
    if own:
        return (f"the weights files hold {len(own)} weight(s) of modules its config does not build ({listed(own)}): "
                "the config names fewer layers or other modules than the weights")
    errors = [str(e).splitlines()[0] for e in info.get("error_msgs") or [] if str(e).strip()]
    if errors:
        return f"loading reported: {errors[0]}"
    return None


#: safetensors dtypes of whole numbers and truth values (no float parameter of a model is saved as one of them).
_WHOLE_NUMBER_DTYPES = ("BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64")
_DTYPE_NAMES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "I32": "int32",
                "U32": "uint32", "I64": "int64", "U64": "uint64"}


def integer_weights_problem(folder: str | Path, model: Any) -> str | None:
    """Whether the ``.safetensors`` files of ``folder`` hold, for float parameters of ``model`` (built from the
    folder's config: its floating-point ``named_parameters``, with or without its ``base_model_prefix``), tensors of
    whole numbers (int8, int64, bool, ...; read from the files' headers, no tensor loaded): transformers casts them
    to the model's float dtype without a word, so rounded or scaled integers would be measured as the model's
    weights. One phrase naming the file, how many such tensors, their dtype and the first, or None (a model's integer
    buffers, such as ``position_ids``, are no parameters and are not judged; nor are the integer parameters of a
    quantised model)."""
    from safetensors import safe_open

    params = {name for name, p in model.named_parameters() if p.is_floating_point()}
    prefix = f"{getattr(model, 'base_model_prefix', '') or ''}."
    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            hits = [(key, f.get_slice(key).get_dtype()) for key in f.keys()]
        hits = [(key, dtype) for key, dtype in hits if dtype in _WHOLE_NUMBER_DTYPES
                and (key in params or (prefix != "." and key.removeprefix(prefix) in params))]
        if hits:
            dtypes = ", ".join(sorted({_DTYPE_NAMES.get(dtype, dtype) for _, dtype in hits}))
            return (f"{path.name} holds {len(hits)} tensor(s) of whole numbers ({dtypes}; e.g. {hits[0][0]}) where "
                    f"{type(model).__name__} has float parameters: they are no weights of this model (float weights "
                    "saved as integers lost their values; save the float weights)")
    return None


def import_problem(folder: str | Path, config: dict) -> str | None:
    """What ``aniso run FOLDER`` would refuse in a model folder, checked before ``aniso hub import`` writes it into
    the hub cache (so that a folder the suite cannot load faithfully never becomes a revision): the files of its
    detected modality (:func:`preprocessing_problem`: e.g. no tokenizer files) and the weights its config builds
    (:func:`weights_problem`: e.g. a gpt2 config over BERT weights), the model built on the meta device (its
    weights' names and shapes are read from the files, no tensor). One phrase, or None; None too where the folder
    cannot be checked here (its model type unknown to transformers, a shard absent), as the run then says."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from . import no_loading_bars
    from .detect import UndetectableModel, entry_fields

    unread = unread_config_problem(config)  # a model that would not be the one its config describes
    if unread is not None:
        return unread
    try:
        modality = entry_fields(config)["modality"]
    except UndetectableModel:
        modality = None
    if modality is not None:
        problem = preprocessing_problem(folder, modality)
        if problem is not None:
            return problem

    from .hubcache import missing_weights

    if missing_weights(Path(folder)) is not None:  # shards the index names are absent: the import says which first
        return None

    def load(**extra):
        return AutoModel.from_pretrained(str(folder), device_map="meta", use_safetensors=True, output_loading_info=True,
                                         local_files_only=True, trust_remote_code=False, dtype="float32", **extra)

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers' table of missing weights: the one phrase says it
    try:
        with no_loading_bars():
            model, info = load()
            missing = list(info.get("missing_keys") or [])
            if missing and all(k.split(".")[0] == "pooler" for k in missing) \
                    and _accepts(type(model), "add_pooling_layer"):
                model, info = load(add_pooling_layer=False)
    except _BUILD_ERRORS as exc:
        return cannot_build(exc, str(folder), local_files_only=True, trust_remote_code=False)
    except Exception:  # noqa: BLE001 - what cannot be checked here is left to the run, which says it
        return None
    finally:
        hf_logging.set_verbosity(verbosity)
    problem = weights_problem(model, info) or integer_weights_problem(folder, model)
    if problem is None and modality is not None and _read_by_tokenizer(modality):  # is the tokenizer the model's?
        try:
            from transformers import AutoTokenizer

            with no_loading_bars():
                tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
        except Exception:  # noqa: BLE001 - a tokenizer that cannot load is the run's to name, as it does
            return None
        problem = tokenizer_problem(model, tokenizer, folder)
    return problem


#: Most builds of a model on the meta device tried to tell which config field gives a weight its shape.
_MAX_FIELD_TRIALS = 8


def cannot_build(exc: BaseException, where: str, **kwargs: Any) -> str:
    """Why a model cannot be built from its config.json and weights (``exc``, one of :data:`_BUILD_ERRORS`, raised by
    ``AutoModel.from_pretrained(where, **kwargs)``), as one phrase: ``"the model cannot be built from its config.json
    and weights: "`` followed by what is wrong, named in config.json's terms where it can be told:

    * weights of another shape than the config builds (transformers' "look at the above report!"):
      ``"config.json vocab_size 100, but embeddings.word_embeddings.weight is 30522 x 384 in the weights (the config
      builds 100 x 384)"`` (:func:`shape_fields`);
    * a config value transformers has no entry for (``KeyError: 'foo'``): the field, its value and, for an
      activation function, the values allowed (transformers' ``ACT2CLS``);

    otherwise the error's type and first 240 characters, on one line. Never raises."""
    head = "the model cannot be built from its config.json and weights"
    try:
        named = _mismatched_shapes(where, kwargs) if "ignore_mismatched_sizes" in str(exc) else \
            _unknown_value(exc, where, kwargs) if isinstance(exc, KeyError) else None
    except Exception:  # noqa: BLE001 - the error as transformers says it, below
        named = None
    if named:
        return f"{head}: {named}"
    text = " ".join(str(exc).split())  # one line: a field's validation error spans several
    return f"{head} ({type(exc).__name__}: {text[:240]})"


def _mismatched_shapes(where: str, kwargs: dict) -> str | None:
    """The weights whose shape differs from the model its config builds, read from transformers' loading info of a
    build on the meta device (no tensor read), named by :func:`shape_fields`; None if none is found."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from . import no_loading_bars

    extra = {k: v for k, v in kwargs.items() if k not in ("dtype", "device_map", "ignore_mismatched_sizes")}
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers' table: the phrase says it
    try:
        with no_loading_bars():
            model, info = AutoModel.from_pretrained(where, device_map="meta", ignore_mismatched_sizes=True,
                                                    use_safetensors=True, output_loading_info=True, **extra)
    finally:
        hf_logging.set_verbosity(verbosity)
    mismatched = [(k[0], tuple(k[1]), tuple(k[2])) for k in info.get("mismatched_keys") or []
                  if isinstance(k, (tuple, list)) and len(k) == 3]
    return shape_fields(model, mismatched) if mismatched else None


def _dims(shape) -> str:
    return " \u00d7 ".join(str(n) for n in shape) or "a scalar"


def shape_fields(model: Any, mismatched: list[tuple[str, tuple, tuple]]) -> str:
    """One phrase naming, for weights whose shape in the files differs from the one ``model``'s config builds
    (``mismatched``: ``(name, shape in the weights, shape built)``, as transformers' loading info lists them), the
    config field that makes the difference: ``"config.json max_position_embeddings 8, but
    embeddings.position_embeddings.weight is 512 x 384 in the weights (the config builds 8 x 384)"``.

    A field is named only where it is shown to be the one: an integer field whose value is the built size of the
    differing axis and which, set to the weights' size, gives the weight the weights' shape in a model built again
    on the meta device (no architecture's table of fields). A weight no field is found for is named with both
    shapes. Fields found for several weights are said once, with how many more weights differ."""
    import copy

    import torch

    config = model.config
    fields = {k: v for k, v in config.to_dict().items() if isinstance(v, int) and not isinstance(v, bool)}
    prefix = f"{getattr(model, 'base_model_prefix', '') or ''}."
    trials = 0
    found: list[str] = []

    def shape_in(built_model, name: str):
        for key in (name, name.removeprefix(prefix)):
            try:
                return tuple(built_model.get_parameter(key).shape)
            except AttributeError:
                try:
                    return tuple(built_model.get_buffer(key).shape)
                except AttributeError:
                    continue
        return None

    def field_for(name: str, ckpt: tuple, built: tuple) -> str | None:
        nonlocal trials
        axes = [i for i, (a, b) in enumerate(zip(ckpt, built)) if a != b] if len(ckpt) == len(built) else []
        if len(axes) != 1:
            return None
        axis = axes[0]
        for field in found:  # a field already shown to size other weights: not built again
            if fields[field] == built[axis]:
                return field
        for field, value in fields.items():
            if value != built[axis] or trials >= _MAX_FIELD_TRIALS:
                continue
            trials += 1
            changed = copy.deepcopy(config)
            setattr(changed, field, ckpt[axis])
            try:
                with torch.device("meta"):
                    rebuilt = type(model)(changed)
            except Exception:  # noqa: BLE001 - that value cannot build the model: not this field
                continue
            if shape_in(rebuilt, name) == ckpt:
                found.append(field)
                return field
        return None

    said: dict[str, str] = {}
    unnamed: list[str] = []
    for name, ckpt, built in sorted(mismatched):
        field = field_for(name, ckpt, built) if len(said) + len(unnamed) < 3 else None
        if field is not None:
            said.setdefault(field, f"config.json {field} {fields[field]}, but {name} is {_dims(ckpt)} in the weights "
                                   f"(the config builds {_dims(built)})")
        elif len(unnamed) < 1 and not said:
            unnamed.append(f"{name} is {_dims(ckpt)} in the weights but {_dims(built)} as config.json builds it")
        if len(said) + len(unnamed) >= 3:
            break
    parts = list(said.values()) or unnamed
    more = len(mismatched) - len(parts)
    return "; ".join(parts) + (f" ({more} more weight(s) of another shape)" if more > 0 else "")


def _unknown_value(exc: KeyError, where: str, kwargs: dict) -> str | None:
    """A config.json value the model's code looks up and does not find (``KeyError: 'foo'``), named with its field;
    for an activation function (the lookup in transformers' ``ACT2FN``), with the values allowed. None when no
    field of the config holds the missing key."""
    from transformers import AutoConfig

    key = exc.args[0] if exc.args else None
    if not isinstance(key, (str, int, float)):
        return None

    def holds(value) -> bool:  # the same value of the same type (a field of 1 is no True)
        return type(value) is type(key) and value == key

    extra = {k: v for k, v in kwargs.items() if k not in ("dtype", "device_map", "ignore_mismatched_sizes",
                                                          "add_pooling_layer", "output_loading_info")}
    config = AutoConfig.from_pretrained(where, **extra).to_dict()
    fields = [name for name, value in config.items() if holds(value)]
    fields += [f"{name}.{inner}" for name, value in config.items() if isinstance(value, dict)
               for inner, v in value.items() if holds(v)]
    if not fields:
        return None
    said = " and ".join(fields)
    if _raised_by_activation_table(exc):
        from transformers.activations import ACT2CLS

        return (f"config.json {said} {key!r} is not an activation function transformers knows (one of "
                f"{', '.join(sorted(ACT2CLS))})")
    return f"config.json {said} {key!r} is not a value the model's code knows (KeyError: {key!r})"


def _raised_by_activation_table(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by a lookup in transformers' table of activation functions (``ACT2FN[...]``)."""
    try:
        from transformers.activations import ClassInstantier
    except ImportError:
        return False
    code = ClassInstantier.__getitem__.__code__
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return True
        tb = tb.tb_next
    return False


def _accepts(model_class, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(model_class.__init__).parameters
    except (TypeError, ValueError):
        return False


@contextmanager
def _held_load_reports():
    """Hold back transformers' "LOAD REPORT" tables (logged as warnings by ``from_pretrained``: weights missing,
    unexpected or of another shape) while a model loads. Yields the list of held log records; when the block raises
    (the load refused, in one line that says what the table would) they are dropped, else they are logged as
    transformers would have."""
    import logging

    from transformers.utils import logging as hf_logging

    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if "LOAD REPORT" in str(record.msg):
            held.append(record)
            return False
        return True

    handlers = list(hf_logging.get_logger().handlers)  # transformers' own handler, on its library logger
    for handler in handlers:
        handler.addFilter(hold)
    try:
        yield held
    finally:
        for handler in handlers:
            handler.removeFilter(hold)
    for record in held:  # the load went through: its table as it would have been shown
        logging.getLogger(record.name).handle(record)


def from_pretrained(entry, where: str, folder: str | Path | None = None, **kwargs: Any) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, processor)`` from a Hugging Face folder or hub id: the model (safetensors, eval mode, in
    the source's ``dtype`` and ``device_map``, see :class:`Placement`) and, by the entry's modality, its tokenizer (text), feature extractor (speech) or image processor
    (vision, PIL backend).

    The load is faithful or refused: ``folder`` (``where`` itself when it is a folder; the snapshot of a hub cache)
    is checked first (:func:`folder_problem`), and every weight of the model must come from the files
    (:func:`weights_problem`). A pooler the base model adds and the checkpoint does not hold (a checkpoint of a
    head model, e.g. RoBERTa's masked-LM weights) is not built at all (``add_pooling_layer=False``) rather than
    initialised at random: it is no hidden state.

    Raises OSError as transformers does when the files cannot be found; :class:`~aniso.sources.base.ModelRefused`
    (one line naming the folder or id and what is wrong) when the files are there but cannot be loaded faithfully,
    also when the tokenizer or processor of a folder cannot be loaded from its files (naming them and the first line
    of the error, :func:`_preprocessing_refused`).
    """
    from pathlib import Path as _Path

    from transformers import AutoFeatureExtractor, AutoModel, AutoTokenizer

    from ..inputs.processors import pretrained_image_processor
    from .base import ModelRefused

    if folder is None and _Path(where).is_dir():
        folder = where
    label = str(folder or where)
    if folder is not None:
        problem = folder_problem(folder, entry.modality)
        if problem is not None:
            raise ModelRefused(f"{entry.id}: {label}: {problem}")
    common = dict(trust_remote_code=entry.trust_remote_code, **kwargs)
    if entry.use_auth_token:
        common["token"] = True
    placement = {"dtype": getattr(entry.source, "dtype", "float32")}
    if getattr(entry.source, "device_map", None):
        placement["device_map"] = entry.source.device_map

    def load(**extra):
        import torch

        try:
            return AutoModel.from_pretrained(where, use_safetensors=True, output_loading_info=True, **placement,
                                             **common, **extra)
        except (OSError, torch.OutOfMemoryError):
            raise
        except _BUILD_ERRORS as exc:
            raise ModelRefused(f"{entry.id}: {label}: {cannot_build(exc, where, **common, **extra)}") from None
        except ImportError as exc:  # a config asking for what this installation lacks (flash_attention_2)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelRefused(f"{entry.id}: {label}: the model cannot be built here: {first} (config.json asks "
                               "for it: remove the field, e.g. _attn_implementation, or install what it needs)") \
                from None

    with _held_load_reports() as reports:  # a refusal's one line says what transformers' table would
        model, info = load()
        missing = list(info.get("missing_keys") or [])
        if missing and all(k.split(".")[0] == "pooler" for k in missing) and _accepts(type(model), "add_pooling_layer"):
            reports.clear()  # the table of the load without a pooler is the one that counts
            model, info = load(add_pooling_layer=False)
        config = getattr(model, "config", None)  # (a download: the folder's config.json was read before loading)
        problem = unread_config_problem(config.to_dict()) if folder is None and config is not None else None
        problem = problem or weights_problem(model, info)
        if problem is None and folder is not None:  # float weights saved as integers: cast without a word
            problem = integer_weights_problem(folder, model)
        if problem is not None:
            raise ModelRefused(f"{entry.id}: {label}: {problem}")
        unused = sorted(info.get("unexpected_keys") or [])
        if reports and unused:  # every weight came from the files: the table lists only weights left unread (a
            reports.clear()     # task head's), said in one line instead of transformers' table of ~15 lines
            from ..common.files import warn_as_file

            heads = sorted({k.split(".")[0] for k in unused})
            warn_as_file(str(entry.id), f"{len(unused)} weight(s) of its files are no part of "
                         f"{type(model).__name__} and were not read ({', '.join(h + '.*' for h in heads[:4])}: a "
                         "task head's, not a hidden state's); every weight of the model came from its files",
                         RuntimeWarning, __name__)
    if folder is not None:  # safetensors are read; weights also saved as a pickle are not, whatever they hold
        from .hubcache import PICKLE_SUFFIXES

        pickles = sorted(p.name for p in Path(folder).iterdir() if p.name.lower().endswith(PICKLE_SUFFIXES))
        if pickles:
            from ..common.files import warn_as_file

            warn_as_file(str(entry.id), f"{', '.join(pickles[:3])} in its folder left out (pickle, never read): the "
                         "safetensors weights are measured", RuntimeWarning, __name__)
    model.eval()
    if getattr(getattr(model, "config", None), "return_dict", True) is False:  # the output's form, not the model's:
        model.config.return_dict = True  # the extraction reads its fields by name (config.json "return_dict": false)
    preprocessors = {
        "speech": lambda: (None, AutoFeatureExtractor.from_pretrained(where, **common)),
        "vision": lambda: (None, pretrained_image_processor(where, **common)),
        "text": lambda: (AutoTokenizer.from_pretrained(where, **common), None),
    }
    try:
        tokenizer, processor = preprocessors[entry.modality]()
        if tokenizer is not None and callable(tokenizer):
            # a vocabulary that loads but cannot read text (a WordPiece vocabulary without its unknown-word token
            # fails on the first word it lacks): said here, not in the middle of a claim
            tokenizer(TOKENIZER_PROBE)
    except OSError as exc:
        if folder is None:  # a download: not found or not reachable, as transformers says
            raise
        _preprocessing_refused(entry, label, folder, exc)
    except ImportError:  # a package the tokenizer class needs (sentencepiece, ...): not the files' fault
        raise
    except BaseException as exc:  # noqa: BLE001 - also the Rust tokenizers' PanicException, not an Exception
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit
        _preprocessing_refused(entry, label, folder, exc)
    if tokenizer is not None:
        problem = tokenizer_problem(model, tokenizer, folder)
        if problem is not None:
            raise ModelRefused(f"{entry.id}: {label}: {problem}")
    return model, tokenizer, processor


_GENERIC_TOKENIZERS = ("TokenizersBackend", "PreTrainedTokenizerBase", "PreTrainedTokenizer",
                       "PreTrainedTokenizerFast", "PythonBackend", "SentencePieceBackend")


def _shared_tokenizers() -> set[str]:
    """The tokenizer classes transformers lists for no model type of its own: a tokenizer that checkpoints of
    another type's architecture use (ByT5's bytes with ``model_type: t5``, BERTweet's with ``roberta``, HerBERT's,
    PhoBERT's, BertJapanese's with ``bert``), which a family check cannot judge."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES

    own = {v for k, v in TOKENIZER_MAPPING_NAMES.items() if k in CONFIG_MAPPING_NAMES}
    return {v for k, v in TOKENIZER_MAPPING_NAMES.items() if k not in CONFIG_MAPPING_NAMES and v} - own


def _tokenizer_config(folder: str | Path | None) -> dict:
    """The folder's ``tokenizer_config.json`` as a dict ({} when there is none or it is no JSON object)."""
    import json

    if folder is None:
        return {}
    try:
        data = json.loads((Path(folder) / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _declared_tokenizer_class(folder: str | Path | None) -> str | None:
    """The ``tokenizer_class`` field of the folder's ``tokenizer_config.json`` (None when there is none)."""
    name = _tokenizer_config(folder).get("tokenizer_class")
    return name if isinstance(name, str) and name else None


def tokenizer_problem(model: Any, tokenizer: Any, folder: str | Path | None = None) -> str | None:
    """Why a loaded tokenizer is not the model's own, as one phrase naming the file and field, else None.

    First, a tokenizer text file that begins with a UTF-8 byte-order mark while a token of the vocabulary carries the
    mark (a vocab.txt saved with one: its first token reads '\ufeff[PAD]') is named as the cause: the files are the
    model's own, saved with the mark. Then four checks, each one a tokenizer of another model fails while every
    model's own passes:

    - the class ``tokenizer_config.json``'s ``tokenizer_class`` names belongs to another model family than the
      config's ``model_type`` (transformers' tokenizer of that type; neither class derives from the other; a generic
      class such as ``PreTrainedTokenizerFast``, a type transformers maps to none, or a tokenizer transformers lists
      for no model type of its own, :func:`_shared_tokenizers`, is not judged);
    - the tokenizer's padding token has another id than ``config.json``'s ``pad_token_id`` (both given): the
      model was trained padding with the config's id, the inputs would carry another token there;
    - a token of the tokenizer's own vocabulary (added tokens aside) has an id past the input embedding's rows,
      while the vocabulary has no more tokens than the embedding has rows (a config too small for its tokenizer is
      another fault, named with ``vocab_size`` when the extraction meets such an id);
    - the tokenizer holds fewer tokens (added ones included) than :data:`MIN_VOCABULARY_COVER` of the input
      embedding's rows: a truncated vocabulary, whose words are cut into pieces the model was not trained on (a
      twin's tokenizer, marked by :data:`aniso.sources.twin.TWIN_TOKENIZER_FIELD`, is trained short of its
      rows by design).

    ``model``: a transformers model (``config``, ``get_input_embeddings``); ``tokenizer``: a transformers
    tokenizer; ``folder``: where ``tokenizer_config.json`` lies (None: the class is not judged).
    """
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES, tokenizer_class_from_name

    config = getattr(model, "config", None)
    files = _tokenizer_files(folder)
    marked = _byte_order_marked(folder)
    if marked:
        token = next((t for t in _vocabulary(tokenizer) if isinstance(t, str) and t.startswith(_BOM)), None)
        if token is not None:
            return (f"{_listed(marked)} {'begins' if len(marked) == 1 else 'begin'} with a UTF-8 byte-order mark, so "
                    f"the tokenizer's token {token!r} reads the mark as part of it: save "
                    f"{'it' if len(marked) == 1 else 'them'} as UTF-8 without the mark")
    # a fast tokenizer with its tokenizer.json beside the line files reads that file, not them (its tokens as saved)
    read_from_json = getattr(tokenizer, "is_fast", False) and folder is not None and \
        (Path(folder) / "tokenizer.json").is_file()
    inside = None if read_from_json else _byte_order_mark_inside(folder)
    if inside is not None:
        name, number, line = inside
        return (f"{name} line {number} holds a UTF-8 byte-order mark ({line!r}), which the tokenizer reads as part "
                "of that token (files joined together?): remove the mark")
    model_type = getattr(config, "model_type", None)
    declared = _declared_tokenizer_class(folder)
    own = TOKENIZER_MAPPING_NAMES.get(model_type) if isinstance(model_type, str) else None
    if declared is not None and isinstance(own, str):
        try:
            have, want = tokenizer_class_from_name(declared), tokenizer_class_from_name(own)
        except (ImportError, ValueError, AttributeError):
            have = want = None
        if (have is not None and want is not None
                and not {have.__name__, want.__name__} & set(_GENERIC_TOKENIZERS)
                and have.__name__ not in _shared_tokenizers()
                and not issubclass(have, want) and not issubclass(want, have)):
            return (f"tokenizer_config.json field tokenizer_class {declared!r} is a tokenizer of another model "
                    f"family than config.json's model_type {model_type!r} (its tokenizer is {own}): the inputs "
                    "would be cut into another model's tokens; remove the field or give the model's own tokenizer")
    pad = getattr(config, "pad_token_id", None)
    tok_pad = getattr(tokenizer, "pad_token_id", None)
    if isinstance(pad, int) and isinstance(tok_pad, int) and pad != tok_pad:
        return (f"the tokenizer ({files}) pads with {tokenizer.pad_token!r}, id {tok_pad}, but config.json field "
                f"pad_token_id is {pad}: the tokenizer is not the model's own; give the model's tokenizer files")
    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):  # a model without one table of token embeddings (CANINE's hashes)
        embeddings = None
    rows = getattr(embeddings, "num_embeddings", None)
    if isinstance(rows, int):
        vocab = _vocabulary(tokenizer)
        past = [(i, t) for t, i in vocab.items() if isinstance(i, int) and i >= rows]
        if past and len(vocab) <= rows:  # more tokens than rows: the config is too small, as the extraction says
            i, token = max(past)
            return (f"the tokenizer ({files}) gives the token {token!r} the id {i}, past the input embedding's "
                    f"{rows} rows ({len(past)} token(s) past them): the tokenizer's vocabulary is not the model's; "
                    "give the model's own tokenizer files")
        short = vocabulary_cover_problem(model, tokenizer, folder)
        if short is not None:
            return (f"the tokenizer ({files}) {short} (a tokenizer must cover at least {MIN_VOCABULARY_COVER:.0%} of "
                    "the embedding's rows; a truncated download?); give the model's own tokenizer files")
    return None


def vocabulary_cover_problem(model: Any, tokenizer: Any, folder: str | Path | None = None) -> str | None:
    """Whether ``tokenizer`` holds fewer tokens (added ones included) than :data:`MIN_VOCABULARY_COVER` of the
    input embedding's rows of ``model``: one phrase, "holds 300 tokens, but config.json vocab_size is 30522: the
    tokenizer is not the model's whole vocabulary", else None. A twin's tokenizer, marked by
    :data:`aniso.sources.twin.TWIN_TOKENIZER_FIELD` in ``folder``'s ``tokenizer_config.json`` or in the loaded
    tokenizer's own settings, is trained short of its rows by design and passes; so does a model without one table of
    token embeddings, or a tokenizer whose size cannot be read."""
    from .twin import TWIN_TOKENIZER_FIELD

    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    rows = getattr(embeddings, "num_embeddings", None)
    try:
        size = len(tokenizer)
    except TypeError:
        return None
    init = getattr(tokenizer, "init_kwargs", None)
    if (not isinstance(rows, int) or not isinstance(size, int) or not 0 < size < MIN_VOCABULARY_COVER * rows
            or TWIN_TOKENIZER_FIELD in _tokenizer_config(folder)
            or (isinstance(init, dict) and TWIN_TOKENIZER_FIELD in init)):
        return None
    config = getattr(model, "config", None)
    field = (f"config.json vocab_size is {config.vocab_size}" if getattr(config, "vocab_size", None) == rows
             else f"the input embedding has {rows} rows")
    return f"holds {size} tokens, but {field}: the tokenizer is not the model's whole vocabulary"


def _vocabulary(tokenizer: Any) -> dict:
    """A tokenizer's own vocabulary, ``{token: id}`` (added tokens aside; {} when it cannot be read)."""
    try:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        return (backend.get_vocab(with_added_tokens=False) if backend is not None
                else dict(getattr(tokenizer, "vocab", None) or tokenizer.get_vocab()))
    except (AttributeError, TypeError, NotImplementedError):
        return {}


_BOM = "\ufeff"
#: The tokenizer files that are text, read as UTF-8 without a byte-order mark: a vocab.txt saved with one reads its
#: first token as '\ufeff[PAD]' (a JSON file with one does not parse, and is named as not valid JSON).
_TOKENIZER_TEXT_FILES = ("vocab.txt", "merges.txt", "bpe.codes", "tokenizer.json", "vocab.json")


#: The tokenizer files read one token (or merge) per line, in which a byte-order mark past the first line is a
#: token's first character: the mark of a file joined onto another (JSON files may hold the character as a token).
_TOKENIZER_LINE_FILES = ("vocab.txt", "merges.txt", "bpe.codes")


def _byte_order_mark_inside(folder: str | Path | None) -> tuple[str, int, str] | None:
    """The first line past the first of a line-per-token tokenizer file of ``folder`` (:data:`_TOKENIZER_LINE_FILES`)
    that holds a UTF-8 byte-order mark, as (file name, line number from 1, the line); None when none does."""
    if folder is None:
        return None
    mark = _BOM.encode()
    for name in _TOKENIZER_LINE_FILES:
        try:
            data = (Path(folder) / name).read_bytes()
        except OSError:
            continue
        at = data.find(mark, 1)
        if at > 0:
            number = data.count(b"\n", 0, at) + 1
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            return name, number, data[start:end if end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    return None


def _byte_order_marked(folder: str | Path | None) -> list[str]:
    """The tokenizer text files of ``folder`` that begin with a UTF-8 byte-order mark."""
    if folder is None:
        return []
    marked = []
    for name in _TOKENIZER_TEXT_FILES:
        try:
            with open(Path(folder) / name, "rb") as f:
                if f.read(3) == _BOM.encode():
                    marked.append(name)
        except OSError:
            continue
    return marked


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


#: The least share of the input embedding's rows (config.json ``vocab_size``) a model's tokenizer holds
#: (:func:`tokenizer_problem`): checkpoints pad ``vocab_size`` a little above their tokenizer (to a multiple of 64 or
#: 128: whisper 51,865 for 51,864 tokens, OPT 50,272 for 50,265) but a tokenizer of far fewer tokens (a vocab.txt of
#: 3,000 lines for 30,522 rows) is not the model's whole vocabulary: its words are cut into pieces the model was not
#: trained on.
MIN_VOCABULARY_COVER = 0.9


def _preprocessing_refused(entry, label: str, folder, exc: BaseException) -> None:
    """Raise :class:`~aniso.sources.base.ModelRefused`: the preprocessing files of a model cannot be loaded (a
    tokenizer's vocabulary that transformers or tokenizers rejects); one line naming the model, the folder, the files
    and the first line of the error."""
    from .base import ModelRefused

    what = "tokenizer" if _read_by_tokenizer(entry.modality) else "preprocessor"  # read from the files, or tried
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    files = _preprocessing_files(folder, entry.modality)
    raise ModelRefused(f"{entry.id}: {label}: its {what} cannot be loaded from {files}, or cannot read text "
                       f"({type(exc).__name__}{': ' + first[:240] if first else ''})") from None


def fingerprint(entry, ctx: SourceContext) -> str:
    """``hub:<repo>@<revision>`` (pin a commit hash as revision for exact reproducibility), followed by
    ``#<commit>`` when the local Hugging Face cache resolves the revision to a commit (read from the cache, no
    network), so statistics of an imported folder and of a later download of the same revision are kept apart."""
    from .hubcache import HubCacheError, resolve_commit

    _check_variables(entry)
    check_permissions(entry, download=False)
    src = entry.source
    try:
        commit = resolve_commit(src.repo, src.revision)
    except (HubCacheError, OSError):
        commit = None
    _check_twin(entry, commit, ctx)
    pinned = f"#{commit}" if commit and commit != src.revision else ""
    return f"hub:{src.repo}@{src.revision}{pinned}{placement_key(src)}"


def _not_cached(entry) -> ModelUnavailable:
    from .hubcache import not_cached_hints

    src = entry.source
    return ModelUnavailable(  # (the hints name the revisions the cache holds of it)
        f"{entry.id}: hub id {src.repo!r} at revision {src.revision!r} is not cached here and "
        f"the hub cannot be reached (HF_HUB_OFFLINE=1 or no network); `aniso hub import {src.repo} FOLDER"
        f"{'' if src.revision == 'main' else f' --revision {src.revision}'}` puts a model folder there"
        f"{not_cached_hints(src.repo, src.revision)}"
    )


def _check_variables(entry) -> None:
    """ModelRefused naming the row when the environment variable that names the hub cache is set but empty
    (:func:`aniso.sources.hubcache.hub_variable_problem`): the working folder would be read as the cache."""
    from .base import ModelRefused
    from .hubcache import hub_variable_problem

    problem = hub_variable_problem()
    if problem is not None:
        raise ModelRefused(f"{entry.id}: {problem}")


def kept_twin_problem(entry, commit: str | None, ctx: SourceContext | None = None) -> str | None:
    """One line naming the row and the snapshot folder when the hub cache's snapshot ``commit`` of the row's hub id
    is a twin's random weights that ``aniso run --twin --keep-twins`` kept there
    (:func:`aniso.sources.hubcache.kept_twin_manifest`), and ``ctx`` is not the twin run of that manifest
    (``ctx.twin_manifest``): such weights are never measured as the real model. None otherwise."""
    from .hubcache import kept_twin_manifest, repo_dir

    if not commit:
        return None
    manifest = kept_twin_manifest(entry.source.repo, commit)
    if manifest is None:
        return None
    own = getattr(ctx, "twin_manifest", None)
    if own is not None and Path(os.path.expanduser(os.fspath(own))).resolve() == manifest.resolve():
        return None
    return (f"{entry.id}: {repo_dir(entry.source.repo) / 'snapshots' / commit} is a twin's random weights, kept by "
            f"aniso run --twin --keep-twins ({manifest}): run it with --twin, or import the real model")


def _check_twin(entry, commit: str | None, ctx: SourceContext | None) -> None:
    """ModelRefused with :func:`kept_twin_problem`'s line, if any."""
    from .base import ModelRefused

    problem = kept_twin_problem(entry, commit, ctx)
    if problem is not None:
        raise ModelRefused(problem)


def _check_row(entry, snapshot: Path, commit: str) -> None:
    """ModelRefused naming the row when the cached snapshot of its hub id is another model than the row says
    (:func:`aniso.sources.hubrow.row_problem`: a folder imported under the row's hub id by hand; a twin of the row,
    as twin runs import, passes)."""
    from .base import ModelRefused
    from .hubrow import row_problem

    problem = row_problem(entry, snapshot, twins=True)
    if problem is not None:
        raise ModelRefused(f"{entry.id}: the hub cache's snapshot of {entry.source.repo}@{entry.source.revision} "
                           f"(commit {commit}) is not the row's model: {problem}")


def load(entry, ctx: SourceContext) -> LoadedModel:
    """From the local Hugging Face cache (the revision resolved there, no network), else from the hub if
    reachable. ``origin`` names the repo, revision and commit, and whether the snapshot was downloaded or
    imported from a folder (``aniso hub import``). Raises ModelUnavailable naming the model: not cached here and
    the hub unreachable (at once, no retries), or a load error; ModelRefused when a snapshot imported from a folder
    lacks what a load needs (:func:`aniso.sources.hubcache.missing_weights`: the hub cannot complete it)."""
    from .base import ModelRefused
    from .hubcache import HubCacheError, cached_state

    _check_variables(entry)
    check_permissions(entry, download=False)  # a gated model's credentials: only to download it (below)
    src = entry.source
    try:
        state = cached_state(src.repo, src.revision)
    except HubCacheError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    if state is not None and state["missing"] and state["origin"] != "downloaded":  # no hub completes an import
        raise ModelRefused(f"{entry.id}: hub id {src.repo!r} at revision {src.revision!r} is in the hub cache (commit "
                           f"{state['commit']}) but {state['missing']}; it was {state['origin']}, and no hub completes "
                           "an import: fix the folder and import it again")
    if state is not None and state["missing"]:  # a download cut short: the hub may complete it
        if not ctx.hub.reachable():
            raise ModelUnavailable(f"{entry.id}: hub id {src.repo!r} at revision {src.revision!r} is in the hub "
                                   f"cache (commit {state['commit']}) but {state['missing']}, and the hub cannot be "
                                   "reached")
        state = None
    if state is None:
        if not ctx.hub.reachable():
            raise _not_cached(entry)
        check_permissions(entry)
        try:
            model, tok, proc = from_pretrained(entry, src.repo, revision=src.revision)
        except OSError as exc:
            raise ModelUnavailable(f"{entry.id}: could not load {src.repo!r}@{src.revision}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        state = cached_state(src.repo, src.revision)
        where = "hub"
    else:
        try:
            from .hubcache import repo_dir

            snapshot = repo_dir(src.repo) / "snapshots" / state["commit"]
            _check_twin(entry, state["commit"], ctx)
            _check_row(entry, snapshot, state["commit"])
            model, tok, proc = from_pretrained(entry, src.repo, folder=snapshot, revision=state["commit"],
                                               local_files_only=True)
        except OSError as exc:
            raise ModelUnavailable(f"{entry.id}: {src.repo!r}@{src.revision} is in the hub cache "
                                   f"(commit {state['commit']}) but cannot be loaded from it: "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        where = "hub cache"
    origin = f"{where}: {src.repo}@{src.revision}"
    if state is not None:
        origin += f" (commit {state['commit']}, {state['origin']})"
    return LoadedModel(entry, model, tok, origin, proc)


KIND = SourceKind("hub", HubSource, fingerprint, load, twins=True, hub_access=True,
                  model_code=lambda source: "its repository")
