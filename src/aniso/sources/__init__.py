"""Model sources: turn a registry entry into a loaded model and its preprocessor.

Hub ids load with transformers ``from_pretrained`` at the entry's revision,
first from the local Hugging Face cache and, if the hub is reachable, from the
hub. Local directories and Python packages that ship Hugging Face-format files
load the same way. Weights are read from safetensors only; remote code is
never run unless the entry opts in (``trust_remote_code: true``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..registry import HubSource, LocalSource, ModelEntry, PackageSource

__all__ = ["ModelUnavailable", "LoadedModel", "HubStatus", "load_model", "resolve_directory", "source_fingerprint"]


class ModelUnavailable(RuntimeError):
    """The weights of a registry model cannot be loaded here; the message says why."""


@dataclass
class LoadedModel:
    """A model ready for extraction.

    ``model`` is a transformers ``PreTrainedModel`` in eval mode, float32, on CPU;
    ``tokenizer`` its tokenizer; ``origin`` says where the weights came from.
    (:func:`source_fingerprint` identifies the weights without loading them.)
    """

    entry: ModelEntry
    model: Any
    tokenizer: Any
    origin: str


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


def _hash_weight_files(directory: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in directory.iterdir() if p.suffix in (".safetensors", ".json", ".txt", ".model"))
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
        if not (path / "config.json").exists():
            raise ModelUnavailable(f"{entry.id}: package {src.package!r} has no config.json under {path}")
        return path
    raise TypeError(f"{entry.id}: source kind {src.kind!r} has no local directory")


def source_fingerprint(entry: ModelEntry, registry_dir: Path | None = None) -> str:
    """An identifier of the exact weights an entry points at, computed without loading them.

    Hub: ``hub:<repo>@<revision>`` (pin a commit hash as revision for exact
    reproducibility); local directory or package: a hash of its weight,
    config and tokenizer files. Raises ModelUnavailable as :func:`load_model` does.
    """
    _check_permissions(entry)
    src = entry.source
    if isinstance(src, HubSource):
        return f"hub:{src.repo}@{src.revision}"
    return f"{src.kind}:{_hash_weight_files(resolve_directory(entry, registry_dir))}"


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


def _from_pretrained(entry: ModelEntry, where: str, **kwargs: Any) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    common = dict(trust_remote_code=entry.trust_remote_code, **kwargs)
    if entry.use_auth_token:
        common["token"] = True
    model = AutoModel.from_pretrained(where, use_safetensors=True, dtype="float32", **common)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(where, **common)
    return model, tokenizer


def load_model(entry: ModelEntry, hub: HubStatus, registry_dir: Path | None = None) -> LoadedModel:
    """Load the model of a registry entry.

    Parameters
    ----------
    entry : the registry row
    hub : the session's :class:`HubStatus`
    registry_dir : folder of the registry file, for relative local paths

    Raises
    ------
    ModelUnavailable naming the model and saying why (offline and not cached,
    package not installed, remote code or credentials not opted in, load error).
    """
    _check_permissions(entry)
    src = entry.source
    if isinstance(src, HubSource):
        try:
            model, tok = _from_pretrained(entry, src.repo, revision=src.revision, local_files_only=True)
            origin = f"hub cache: {src.repo}@{src.revision}"
        except OSError:
            if not hub.reachable():
                raise ModelUnavailable(
                    f"{entry.id}: weights not available offline (hub id {src.repo!r} at revision {src.revision!r} "
                    "is not in the local Hugging Face cache and the hub cannot be reached)"
                ) from None
            try:
                model, tok = _from_pretrained(entry, src.repo, revision=src.revision)
            except OSError as exc:
                raise ModelUnavailable(f"{entry.id}: could not load {src.repo!r}@{src.revision}: {exc}") from None
            origin = f"hub: {src.repo}@{src.revision}"
        commit = getattr(model.config, "_commit_hash", None)
        if commit:
            origin += f" (commit {commit})"
        return LoadedModel(entry, model, tok, origin)
    path = resolve_directory(entry, registry_dir)
    try:
        model, tok = _from_pretrained(entry, str(path), local_files_only=True)
    except OSError as exc:
        raise ModelUnavailable(f"{entry.id}: could not load from {path}: {exc}") from None
    version = ""
    if isinstance(src, PackageSource):
        try:
            version = importlib.metadata.version(src.distribution or src.package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
    return LoadedModel(entry, model, tok, f"{src.kind}: {path} {version}".strip())
