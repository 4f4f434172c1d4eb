"""Model sources: turn a registry entry into a loaded model and its preprocessor.

Hub ids load with transformers ``from_pretrained`` at the entry's revision,
first from the local Hugging Face cache and, if the hub is reachable, from the
hub. Local directories and Python packages that ship Hugging Face-format files
load the same way. Weights are read from safetensors, or from formats that
hold no code: a CTranslate2 ``model.bin``, a PyTorch state dict read with
``weights_only=True``, an ONNX graph (protobuf) run by onnxruntime. Remote code
is never run unless the entry opts in (``trust_remote_code: true``).

A model that cannot be had raises :class:`ModelUnavailable` with a reason that
names the model; the claims report it as skipped with that reason.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..registry import HubSource, LocalSource, ModelEntry, OnnxSource, PackageSource
from ..stats import sha256_file

__all__ = ["ModelUnavailable", "LoadedModel", "HubStatus", "load_model", "load_ct2_whisper", "resolve_directory",
           "resolve_model_file", "source_fingerprint"]


class ModelUnavailable(RuntimeError):
    """The weights of a registry model cannot be loaded here; the message says why."""


class InputsMissing(ModelUnavailable):
    """A model cannot be measured here for want of inputs (a data folder), not of weights or code; the message
    names the setting that supplies them."""


@dataclass
class LoadedModel:
    """A model ready for extraction.

    ``model`` is a transformers ``PreTrainedModel`` (or a module that answers
    like one, see :mod:`aniso.sources.builders`) in eval mode, float32, on CPU;
    ``tokenizer`` its tokenizer (text) and ``processor`` its feature extractor
    (speech) or image processor (vision); ``origin`` says where the weights came from.
    (:func:`source_fingerprint` identifies the weights without loading them.)
    """

    entry: ModelEntry
    model: Any
    tokenizer: Any
    origin: str
    processor: Any = None  # feature extractor (speech) or image processor (vision)
    meta: dict = field(default_factory=dict)  # goes into the statistics' meta (e.g. a miniature's training log)


class HubStatus:
    """Whether the Hugging Face hub can be reached, probed once and remembered.

    ``HF_HUB_OFFLINE=1`` means unreachable without probing. The probe resolves
    and connects with a short timeout (``timeout`` seconds), so an offline
    machine learns it at once rather than through a network time-out per model.
    """

    def __init__(self, host: str = "huggingface.co", timeout: float = 3.0):
        self.host = host
        self.timeout = timeout
        self._reachable: bool | None = None

    def reachable(self) -> bool:
        if self._reachable is None:
            self._reachable = self._probe()
        return self._reachable

    def _probe(self) -> bool:
        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
            return False
        result: list[bool] = []

        def attempt() -> None:
            try:
                with socket.create_connection((self.host, 443), timeout=self.timeout):
                    result.append(True)
            except OSError:
                result.append(False)

        t = threading.Thread(target=attempt, daemon=True)
        t.start()
        t.join(self.timeout + 0.5)  # name resolution is not covered by the socket timeout
        return bool(result and result[0])


def _hash_weight_files(directory: Path, extra: tuple[str, ...] = ()) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in directory.iterdir()
                   if p.suffix in (".safetensors", ".json", ".txt", ".model") or p.name in extra)
    for p in files:
        h.update(p.name.encode())
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def resolve_directory(entry: ModelEntry, registry_dir: Path | None = None) -> Path:
    """The local directory of a ``local`` or ``package`` source.

    Raises ModelUnavailable naming the model if the directory or package is missing.
    """
    src = entry.source
    if isinstance(src, LocalSource):
        path = Path(os.path.expandvars(os.path.expanduser(src.path)))
        if not path.is_absolute() and registry_dir is not None:
            path = registry_dir / path
        if not path.is_dir():
            raise ModelUnavailable(f"{entry.id}: local model directory {path} does not exist")
        return path
    if isinstance(src, PackageSource):
        try:
            module = importlib.import_module(src.package)
        except ImportError:
            dist = src.distribution or src.package
            raise ModelUnavailable(
                f"{entry.id}: Python package {src.package!r} is not installed (pip install {dist})"
            ) from None
        path = Path(module.__file__).resolve().parent / src.subdir
        needed = {"transformers": "config.json", "ctranslate2-whisper": "model.bin"}.get(src.format, src.file)
        if not (path / needed).is_file():
            raise ModelUnavailable(f"{entry.id}: package {src.package!r} has no {needed} under {path}")
        return path
    raise TypeError(f"{entry.id}: source kind {src.kind!r} has no local directory")


def resolve_model_file(entry: ModelEntry, models_dir: str | Path | None) -> Path:
    """The file of an ``onnx`` source: its path, relative to the models folder (setting ``models_dir``) unless
    absolute. Raises ModelUnavailable naming the model if the folder is not set or the file is missing."""
    src = entry.source
    path = Path(os.path.expanduser(src.path))
    if not path.is_absolute():
        if models_dir is None:
            raise ModelUnavailable(f"{entry.id}: {src.path} is relative to the models folder, which is not set "
                                   "(--aniso-models-dir or ANISO_MODELS_DIR, e.g. ../shared/models)")
        path = Path(models_dir) / path
    if not path.is_file():
        raise ModelUnavailable(f"{entry.id}: model file {path} does not exist (models folder: {models_dir})")
    return path


def source_fingerprint(entry: ModelEntry, registry_dir: Path | None = None,
                       models_dir: str | Path | None = None) -> str:
    """An identifier of the exact weights an entry points at, computed without loading them.

    Hub: ``hub:<repo>@<revision>`` (pin a commit hash as revision for exact
    reproducibility); local directory or package: a hash of its weight,
    config and tokenizer files; onnx: the file's sha256 and the preprocessing.
    Raises ModelUnavailable as :func:`load_model` does.
    """
    _check_permissions(entry)
    src = entry.source
    if isinstance(src, HubSource):
        return f"hub:{src.repo}@{src.revision}"
    if isinstance(src, OnnxSource):
        pre = f"{src.resize}{src.resize_to}/{src.image_size}/{src.image_mean}/{src.image_std}"
        return f"onnx:{sha256_file(resolve_model_file(entry, models_dir))[:16]}:{pre}"
    directory = resolve_directory(entry, registry_dir)
    if isinstance(src, PackageSource) and src.format == "state-dict":
        directory = (directory / src.file).parent
        return f"{src.kind}:{src.builder}:{_hash_weight_files(directory, (Path(src.file).name,))}"
    return f"{src.kind}:{_hash_weight_files(directory, ('model.bin',))}"


def _check_permissions(entry: ModelEntry) -> None:
    if entry.needs_remote_code and not entry.trust_remote_code:
        raise ModelUnavailable(
            f"{entry.id}: needs custom code from its repository; not run unless its registry entry opts in "
            "with trust_remote_code: true"
        )
    if entry.gated and not entry.use_auth_token:
        raise ModelUnavailable(
            f"{entry.id}: gated model; credentials are not used unless its registry entry opts in with use_auth_token: true"
        )


def _from_pretrained(entry: ModelEntry, where: str, **kwargs: Any) -> tuple[Any, Any, Any]:
    """(model, tokenizer, processor): the tokenizer for text, the feature extractor (speech) or image processor."""
    from transformers import AutoFeatureExtractor, AutoModel, AutoTokenizer

    from ..inputs.processors import pretrained_image_processor

    common = dict(trust_remote_code=entry.trust_remote_code, **kwargs)
    if entry.use_auth_token:
        common["token"] = True
    model = AutoModel.from_pretrained(where, use_safetensors=True, dtype="float32", **common)
    model.eval()
    if entry.modality == "speech":
        return model, None, AutoFeatureExtractor.from_pretrained(where, **common)
    if entry.modality == "vision":
        return model, None, pretrained_image_processor(where, **common)
    return model, AutoTokenizer.from_pretrained(where, **common), None


def load_model(entry: ModelEntry, hub: HubStatus, registry_dir: Path | None = None,
               models_dir: str | Path | None = None) -> LoadedModel:
    """Load the model of a registry entry.

    Parameters
    ----------
    entry : the registry row
    hub : the session's :class:`HubStatus`
    registry_dir : folder of the registry file, for relative local paths
    models_dir : the models folder (setting ``models_dir``), for relative paths of ``onnx`` sources

    Raises
    ------
    ModelUnavailable naming the model and saying why (offline and not cached,
    package not installed, remote code or credentials not opted in, load error).
    """
    _check_permissions(entry)
    src = entry.source
    if isinstance(src, HubSource):
        try:
            model, tok, proc = _from_pretrained(entry, src.repo, revision=src.revision, local_files_only=True)
            origin = f"hub cache: {src.repo}@{src.revision}"
        except OSError:
            if not hub.reachable():
                raise ModelUnavailable(
                    f"{entry.id}: weights not available offline (hub id {src.repo!r} at revision {src.revision!r} "
                    "is not in the local Hugging Face cache and the hub cannot be reached)"
                ) from None
            try:
                model, tok, proc = _from_pretrained(entry, src.repo, revision=src.revision)
            except OSError as exc:
                raise ModelUnavailable(f"{entry.id}: could not load {src.repo!r}@{src.revision}: {exc}") from None
            origin = f"hub: {src.repo}@{src.revision}"
        commit = getattr(model.config, "_commit_hash", None)
        if commit:
            origin += f" (commit {commit})"
        return LoadedModel(entry, model, tok, origin, proc)
    if isinstance(src, OnnxSource):
        return _load_onnx(entry, src, resolve_model_file(entry, models_dir))
    path = resolve_directory(entry, registry_dir)
    version = ""
    if isinstance(src, PackageSource):
        try:
            version = importlib.metadata.version(src.distribution or src.package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        if src.format == "ctranslate2-whisper":
            model, tok, proc = load_ct2_whisper(path)
            return LoadedModel(entry, model, tok, f"package: {path / 'model.bin'} {version} (CTranslate2 -> "
                               "transformers WhisperModel, float16 -> float32)".strip(), proc)
        if src.format == "state-dict":
            return _load_state_dict(entry, src, path, version)
    try:
        model, tok, proc = _from_pretrained(entry, str(path), local_files_only=True)
    except OSError as exc:
        raise ModelUnavailable(f"{entry.id}: could not load from {path}: {exc}") from None
    return LoadedModel(entry, model, tok, f"{src.kind}: {path} {version}".strip(), proc)


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


def _load_onnx(entry: ModelEntry, src: OnnxSource, path: Path) -> LoadedModel:
    from .onnx_cnn import OnnxTappedCNN, onnx_image_processor

    try:
        model = OnnxTappedCNN(path)
    except ImportError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    except Exception as exc:  # onnx / onnxruntime raise their own types for unreadable graphs
        raise ModelUnavailable(f"{entry.id}: could not read {path} as a quantised ONNX CNN: "
                               f"{str(exc)[:300]}") from None
    processor = onnx_image_processor(src.image_size, src.resize, src.resize_to, src.image_mean, src.image_std)
    return LoadedModel(entry, model, None, f"onnx: {path} (onnxruntime, int8 maps dequantised, "
                       f"{len(model.taps)} maps)", processor)


def _load_state_dict(entry: ModelEntry, src: PackageSource, path: Path, version: str) -> LoadedModel:
    import torch

    from .builders import BUILDERS

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
