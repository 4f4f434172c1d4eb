"""Source kind ``package``: model files shipped inside a pip package, in one of several formats.

``format`` says how the files are read, one row each in :data:`FORMATS`: ``transformers`` (a Hugging Face folder,
safetensors), ``ctranslate2-whisper`` (a CTranslate2 ``model.bin`` of a Whisper model, mapped onto transformers'
Whisper by :mod:`aniso.sources.ctranslate2_reader`), or ``state-dict`` (a PyTorch state dict ``file`` read with
``weights_only=True`` into the architecture named by ``builder``, see :mod:`aniso.sources.builders`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import Field, model_validator

from ..schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions
from .hub import from_pretrained
from .local import weight_files_fingerprint

__all__ = ["PackageSource", "KIND", "FORMATS", "load_ct2_whisper"]


class PackageSource(Strict):
    """A Python package that ships model files in ``subdir`` of its install folder, read as ``format`` says."""

    kind: Literal["package"]
    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    subdir: str = ""
    distribution: str | None = None  # the pip name, for the install hint
    format: Literal["transformers", "ctranslate2-whisper", "state-dict"] = "transformers"
    file: str | None = None
    builder: str | None = None

    @model_validator(mode="after")
    def _format_fields(self) -> "PackageSource":
        if self.format == "state-dict" and not (self.file and self.builder):
            raise ValueError("format 'state-dict' needs 'file' and 'builder'")
        if self.format != "state-dict" and self.builder:
            raise ValueError("'builder' is only used with format 'state-dict'")
        return self


@dataclass(frozen=True)
class _Format:
    """How one package format is found, fingerprinted and loaded."""

    needed: Callable[[PackageSource], str]  # the file that must exist in the folder
    fingerprint: Callable[[PackageSource, Path], str]
    load: Callable[[Any, Path, str], LoadedModel]  # (entry, folder, package version)


def _version(src: PackageSource) -> str:
    try:
        return importlib.metadata.version(src.distribution or src.package)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def directory(entry, ctx: SourceContext | None = None) -> Path:
    """The package's model folder. Raises ModelUnavailable naming the model (and the pip name) if the package is
    not installed or lacks the format's file."""
    src = entry.source
    try:
        module = importlib.import_module(src.package)
    except ImportError:
        raise ModelUnavailable(
            f"{entry.id}: Python package {src.package!r} is not installed (pip install {src.distribution or src.package})"
        ) from None
    path = Path(module.__file__).resolve().parent / src.subdir
    needed = FORMATS[src.format].needed(src)
    if not (path / needed).is_file():
        raise ModelUnavailable(f"{entry.id}: package {src.package!r} has no {needed} under {path}")
    return path


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


#: Package format → how it is found, fingerprinted and loaded.
FORMATS: dict[str, _Format] = {
    "transformers": _Format(lambda src: "config.json",
                            lambda src, path: f"package:{weight_files_fingerprint(path, ('model.bin',))}",
                            _load_transformers),
    "ctranslate2-whisper": _Format(lambda src: "model.bin",
                                   lambda src, path: f"package:{weight_files_fingerprint(path, ('model.bin',))}",
                                   _load_ct2),
    "state-dict": _Format(lambda src: src.file,
                          lambda src, path: f"package:{src.builder}:"
                                            f"{weight_files_fingerprint((path / src.file).parent, (Path(src.file).name,))}",
                          _load_state_dict),
}


def fingerprint(entry, ctx: SourceContext) -> str:
    check_permissions(entry)
    return FORMATS[entry.source.format].fingerprint(entry.source, directory(entry, ctx))


def load(entry, ctx: SourceContext) -> LoadedModel:
    check_permissions(entry)
    return FORMATS[entry.source.format].load(entry, directory(entry, ctx), _version(entry.source))


KIND = SourceKind("package", PackageSource, fingerprint, load)
