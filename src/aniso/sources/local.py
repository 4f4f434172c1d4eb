"""Source kind ``local``: a folder in Hugging Face format (config, safetensors weights, tokenizer/processor)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..common.files import hash_files
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions
from .hub import Placement, from_pretrained, placement_key

__all__ = ["LocalSource", "KIND", "weight_files_fingerprint"]


class LocalSource(Placement):
    """A directory in Hugging Face format; a relative path is relative to the registry file."""

    kind: Literal["local"]
    path: str = Field(min_length=1)


def weight_files_fingerprint(directory: Path, extra: tuple[str, ...] = (), read: bool = True) -> str:
    """Hash of a model folder's weight, config and tokenizer files (``.safetensors``, ``.json``, ``.txt``,
    ``.model``) and of the files named in ``extra``, in name order. ``read=False`` (a context's ``read_weights``):
    the files are checked as hashing them would (:func:`~aniso.common.files.check_readable`) but not read, and the
    answer is ``unread``."""
    return hash_files(sorted(p for p in directory.iterdir()
                             if p.suffix in (".safetensors", ".json", ".txt", ".model") or p.name in extra), read)


def directory(entry, ctx: SourceContext) -> Path:
    """The entry's folder. Raises ModelUnavailable naming the model if it does not exist, or if ``source.path`` is a
    URL (``file:///…`` copied from a file browser: :func:`aniso.common.files.url_path_problem`)."""
    from ..common.files import url_path_problem

    url = url_path_problem(entry.source.path)
    if url is not None:
        raise ModelUnavailable(f"{entry.id}: source.path: {url}")
    path = Path(os.path.expandvars(os.path.expanduser(entry.source.path)))
    if not path.is_absolute() and ctx.registry_dir is not None:
        path = Path(ctx.registry_dir) / path
    from ..common.files import shown_path

    if os.path.lexists(path) and not path.is_dir():
        raise ModelUnavailable(f"{entry.id}: local model directory {shown_path(path)} {_not_a_folder(path)}")
    if not path.is_dir():
        from ..common.files import unset_variables

        unset = unset_variables(entry.source.path)
        if unset:
            raise ModelUnavailable(f"{entry.id}: source.path {entry.source.path!r} names the environment variable "
                                   f"${unset[0]}, which is not set: set it, or write the path out")
        bare = Path(str(path).strip())
        blank = (f"; {shown_path(bare)}, without the blanks around it, is a folder: write source.path without them"
                 if bare != path and bare.is_dir() else "")
        raise ModelUnavailable(f"{entry.id}: local model directory {shown_path(path)} does not exist{blank}")
    return path


def _not_a_folder(path: Path) -> str:
    """Why ``path``, which is there, is no model folder, and what to give instead: a file (a model file another source
    kind reads: that kind; else its folder, where that is a transformers model folder), or a symbolic link to
    nothing."""
    from .detect import file_kind

    if not path.exists():
        return f"is a symbolic link to {os.path.realpath(path)}, which does not exist"
    said = "is a file, not a folder (source kind local reads a transformers model folder, with config.json)"
    kind = file_kind(path)
    if kind is not None and kind[2]:
        return f"{said}; it is {kind[1]}: source kind {kind[0]} reads it (or `aniso run {path}`)"
    if kind is not None:
        return f"{said}; source kind {kind[0]} reads files of its format, but {kind[1]}"
    if (path.parent / "config.json").is_file():
        return f"{said}; give its folder, path: {path.parent}"
    return said


def _no_code_of_its_own(entry, path: Path) -> None:
    """Raise ModelRefused naming the row and the folder when the row declares ``needs_remote_code: true`` but the
    folder's ``config.json`` (a regular file of at most 1 MiB, else left to the loader) names no code of its own (no
    ``auto_map``): transformers builds it with its own classes, and the row would be listed as needing custom code
    it does not have."""
    import json

    from .base import ModelRefused

    config = path / "config.json"
    if not entry.needs_remote_code or config.is_symlink() or not config.is_file() or config.stat().st_size > 2**20:
        return
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and "auto_map" not in data:
        raise ModelRefused(f"{entry.id}: needs_remote_code: true, but {config} names no code of its own (no "
                           "auto_map): transformers builds it with its own classes; remove needs_remote_code (and "
                           "trust_remote_code) from the row")


def fingerprint(entry, ctx: SourceContext) -> str:
    """``local:`` and the hash of the folder's files (:func:`weight_files_fingerprint`). Raises ModelRefused naming
    the folder and the file when one of them is no regular file (a symbolic link to nothing, a folder, a FIFO, a
    device: :func:`aniso.sources.hubcache.unreadable_model_file`), before any file is opened: it cannot be hashed,
    nor the model loaded."""
    from .base import ModelRefused
    from .hubcache import unreadable_model_file

    path = directory(entry, ctx)
    _no_code_of_its_own(entry, path)
    check_permissions(entry)
    broken = unreadable_model_file(path)
    if broken is not None:
        raise ModelRefused(f"{entry.id}: {path}: {broken}")
    return f"local:{weight_files_fingerprint(path, read=ctx.read_weights)}{placement_key(entry.source)}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    """Load the folder's model and preprocessor. Raises ModelUnavailable naming the model if the folder is missing,
    cannot be loaded, or its ``config.json`` is of a model that is not a Transformer (before reading the weights;
    :func:`aniso.sources.detect.transformer_problem`); ModelRefused naming the file when a model file is no regular
    file (:func:`aniso.sources.hubcache.unreadable_model_file`), before any file is opened, or whose config.json
    contradicts itself (:func:`aniso.sources.detect.architectures_problem`) or whose tokenizer files are another
    model type's than its config's (:func:`aniso.sources.detect.tokenizer_problem`), before the weights are read."""
    import json

    from .detect import architectures_problem, tokenizer_problem, transformer_problem

    from .base import ModelRefused
    from .hubcache import unreadable_model_file

    path = directory(entry, ctx)
    _no_code_of_its_own(entry, path)
    check_permissions(entry)
    broken = unreadable_model_file(path)  # before config.json is read: a FIFO blocks, a device never ends
    if broken is not None:
        raise ModelRefused(f"{entry.id}: {path}: {broken}")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        model_type = config.get("model_type")
    except (OSError, ValueError, AttributeError):
        config, model_type = None, None  # from_pretrained says what is wrong with it
    problem = transformer_problem(entry, model_type)
    if problem:
        raise ModelUnavailable(f"{problem} ({path / 'config.json'})")
    told = (architectures_problem(config) or tokenizer_problem(path, config)) if isinstance(config, dict) else None
    if told is not None:
        raise ModelRefused(f"{entry.id}: {path}: {told}")
    try:
        model, tok, proc = from_pretrained(entry, str(path), local_files_only=True)
    except OSError as exc:
        raise ModelUnavailable(f"{entry.id}: could not load from {path}: {exc}") from None
    return LoadedModel(entry, model, tok, f"local: {path}", proc)


def detect(path: Path) -> dict | None:
    """The registry fields of a transformers model folder (one with ``config.json``), from its config
    (:func:`aniso.sources.detect.entry_fields`); None for anything else. Raises UndetectableModel as that does, when
    its tokenizer files are another model type's than its config's (:func:`aniso.sources.detect.tokenizer_problem`),
    and
    naming ``config.json`` when it is no regular file (a symbolic link to a device or to nothing, a FIFO, a folder),
    before anything opens it."""
    from .detect import UndetectableModel, config_of, entry_fields, tokenizer_problem

    if not (path.is_dir() and os.path.lexists(path / "config.json")):
        return None
    if not (path / "config.json").is_file():  # a link to a device or to nothing, a FIFO, a folder: never opened
        from .hubcache import unreadable_model_file

        raise UndetectableModel(unreadable_model_file(path) or "config.json is no regular file")
    config = config_of(str(path))
    fields = entry_fields(config)
    problem = tokenizer_problem(path, config)
    if problem is not None:
        raise UndetectableModel(problem)
    return {"source": {"kind": "local", "path": str(path.resolve())}, **fields}


KIND = SourceKind("local", LocalSource, fingerprint, load, detect=detect,
                  detects="a transformers model folder with config.json",
                  transformers_folder=lambda entry, ctx: Path(entry.source.path),
                  model_code=lambda source: "its folder")
