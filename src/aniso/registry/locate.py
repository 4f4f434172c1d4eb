"""Where the registry and the claim tests are: the one resolver every door uses (``aniso`` commands, the pytest
plugin, the Python API).

The registry file is, in order: the path given to the command or function (``--registry``, ``registry=``); else
setting ``registry`` (``ANISO_REGISTRY``, ``--aniso-registry``, ``settings={"registry": ...}``) when it is set; else
``models.yaml`` in the working folder (pytest: its root folder); else the ``models.yaml`` of the source tree this
package runs from (an editable install). A path given explicitly, or set, must be a file, relative paths taken from
the working folder: a setting that names ``models.yaml`` where there is none is refused, never read as the source
tree's. The claim tests are the ``claims/`` folder beside the registry, else that of the source tree.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..common.settings import Settings
from .entries import Registry, RegistryError, load_registry

__all__ = ["DEFAULT_REGISTRY", "registry_path", "claims_folder", "check_corpus", "open_registry",
           "settings_and_registry"]

#: The registry file read when none is given or set: ``models.yaml`` in the working folder, else the source tree's.
DEFAULT_REGISTRY = "models.yaml"

#: The source tree this package runs from (``<tree>/src/aniso/registry/locate.py``).
_TREE = Path(__file__).resolve().parents[3]


def _absolute(path: str | Path, root: Path) -> Path:
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else root / p


def _not_a_file(given: str | Path, path: Path) -> str:
    """Why ``path`` (``given`` made absolute) is no registry file, beginning with ``given``: ``is a symbolic link to
    T, which does not exist`` for a link to nothing (as the checks of the cache and report folders say it), ``does
    not exist`` or ``is not a file``; a relative ``given`` is followed by the absolute path looked at."""
    shown = str(given) if Path(os.path.expanduser(str(given))).is_absolute() else f"{given} ({path})"
    if path.is_symlink() and not path.exists():
        return f"{shown} is a symbolic link to {os.readlink(path)}, which does not exist"
    return f"{shown} {'is not a file' if os.path.lexists(path) else 'does not exist'}"


def registry_path(given: str | Path | None = None, setting: str | Path | None = None, root: str | Path | None = None,
                  *, required: bool = True) -> Path | None:
    """The registry file, absolute (see the module docstring): ``given`` (an explicit argument), else ``setting``
    (setting ``registry``; None when it is not set), relative paths taken from ``root`` (default: the working
    folder).

    Returns None when nothing is given or set and neither the working folder nor the source tree has a
    ``models.yaml``, unless ``required``. Raises :class:`~aniso.registry.entries.RegistryError` (one line) when a
    path given or set is not a file there (a setting of ``models.yaml`` in a folder without one included: only an
    unset setting falls back to the source tree's), or when ``required`` and there is none.
    """
    root = Path(root) if root is not None else Path.cwd()
    if given is not None:
        path = _absolute(given, root)
        if not path.is_file():
            raise RegistryError(f"registry: {_not_a_file(given, path)}")
        return path
    if setting is not None:
        path = _absolute(setting, root)
        if not path.is_file():
            raise RegistryError(f"setting registry (ANISO_REGISTRY, --aniso-registry): {_not_a_file(setting, path)}")
        return path
    for path in (root / DEFAULT_REGISTRY, _TREE / DEFAULT_REGISTRY):
        if path.is_file():
            return path
    if required:
        raise RegistryError(f"registry: no {DEFAULT_REGISTRY} in {root} or in this package's source tree; give "
                            "--registry or set ANISO_REGISTRY")
    return None


def claims_folder(given: str | Path | None, registry: Path | None, option: str = "--claims-dir") -> Path:
    """The folder of claim tests: ``given``, else ``claims/`` beside ``registry``, else the source tree's. Raises
    ValueError (one line, naming ``option``: the CLI's ``--claims-dir``, the API's ``claims_dir``) when there is
    none."""
    if given is not None:
        path = Path(given)
        if not path.is_dir():
            if option.startswith("--"):
                raise ValueError(f"claims folder: {given} is not a folder (give {option})")
            raise ValueError(f"{option}: {given} is not a folder; give the folder of the claim tests, or leave "
                             f"{option} out for claims/ beside the registry")
        return path
    for path in ([registry.parent / "claims"] if registry is not None else []) + [_TREE / "claims"]:
        if path.is_dir():
            return path
    raise ValueError(f"no claims folder beside {registry} or in this package's source tree (give {option})")


def check_corpus(settings: Settings) -> None:
    """Read setting ``corpus`` (when set) as a run will, before the run starts: a file that is missing, a folder,
    blank, UTF-16 or not UTF-8 raises ValueError, one line naming the setting and the file
    (:func:`aniso.inputs.text.corpus_paragraphs`)."""
    from ..inputs.text import CorpusError, corpus_paragraphs

    if settings.corpus:
        try:
            corpus_paragraphs(settings.corpus)
        except CorpusError as exc:
            raise ValueError(f"setting corpus (ANISO_CORPUS, --aniso-corpus): {exc}") from None


def open_registry(path: Path | None) -> Registry:
    """The registry at ``path`` (:func:`~aniso.registry.entries.load_registry`), or an empty one for None."""
    return load_registry(path) if path is not None else Registry([], None)


def settings_and_registry(options: dict[str, Any] | None = None, *, registry: str | Path | None = None,
                          root: str | Path | None = None, check_paths: bool = True,
                          required: bool = True, texts: dict[str, Any] | None = None,
                          check_models: bool = False) -> tuple[Settings, Registry]:
    """The run's settings (:meth:`Settings.from_sources` of ``options``, then the ``ANISO_*`` variables; unless
    ``check_paths`` is False, its paths and data folders checked and its corpus read, :func:`check_corpus`) and its registry (:func:`registry_path`; ``registry`` is an explicit
    path). ``texts``: ``--aniso-*`` option values as typed on a command line (:meth:`Settings.from_sources`). With
    ``check_models``, setting ``models`` must select at least one registry model. The settings' ``registry`` is the
    resolved file. Raises ValueError (one line; a :class:`~aniso.registry.entries.RegistryError` for the registry)
    naming the setting or file."""
    settings = Settings.from_sources(options, texts=texts)
    if check_paths:
        from ..inputs.media import DATA_FORMATS

        settings.check_paths(DATA_FORMATS)
        check_corpus(settings)
    path = registry_path(registry, settings.registry, root, required=required)
    if path is not None:
        settings = replace(settings, registry=str(path))
    opened = open_registry(path)
    if check_models and path is not None:
        chosen, _ = opened.model_set(settings.models)  # RegistryError naming what matches nothing
        if not list(chosen):
            raise ValueError(f"setting models (ANISO_MODELS, --aniso-models) must select at least one model of "
                             f"{path}, got {settings.models!r}, which selects none")
    return settings, opened
