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

import ast
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..common.settings import Settings
from .claimtests import SOURCE_TREE, default_claims_folder
from .entries import NotARegistry, Registry, RegistryError, load_registry

__all__ = ["DEFAULT_REGISTRY", "registry_path", "claims_folder", "holds_claim_tests", "marks_a_claim", "check_corpus",
           "open_registry", "registry_source", "settings_and_registry"]

#: The registry file read when none is given or set: ``models.yaml`` in the working folder, else the source tree's.
DEFAULT_REGISTRY = "models.yaml"


def _absolute(path: str | Path, root: Path) -> Path:
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else root / p


def _not_a_file(given: str | Path, path: Path) -> str:
    """Why ``path`` (``given`` made absolute) is no registry file, beginning with ``given``: ``is a symbolic link to
    T, which does not exist`` for a link to nothing (as the checks of the cache and report folders say it), ``does
    not exist`` or ``is not a file``; a relative ``given`` is followed by the absolute path looked at."""
    from ..common.files import URL_NOT_READ, link_loop, url_given

    url = url_given(given)
    if url is not None and not os.path.lexists(path):
        return f"{url} {URL_NOT_READ}"
    shown = str(given) if Path(os.path.expanduser(str(given))).is_absolute() else f"{given} ({path})"

    loop = link_loop(path)
    if loop is not None:
        return (f"{shown} is a symbolic link to itself, or one of a loop of links" if loop == str(path) else
                f"{shown}: {loop} is a symbolic link to itself, or one of a loop of links")
    if path.is_symlink() and not path.exists():
        return f"{shown} is a symbolic link to {os.readlink(path)}, which does not exist"
    return f"{shown} {'is not a file' if os.path.lexists(path) else 'does not exist'}"


def registry_path(given: str | Path | None = None, setting: str | Path | None = None, root: str | Path | None = None,
                  *, required: bool = True) -> Path | None:
    """The registry file, absolute (see the module docstring): ``given`` (an explicit argument), else ``setting``
    (setting ``registry``; None when it is not set), relative paths taken from the working folder (as a user typing
    them means, also under pytest, whose root folder may be another); ``root`` (default: the working folder) is
    where an unset registry is looked for as ``models.yaml``.

    Returns None when nothing is given or set and neither the working folder nor the source tree has a
    ``models.yaml``, unless ``required``. Raises :class:`~aniso.registry.entries.RegistryError` (one line) when a
    path given or set is not a file there (a setting of ``models.yaml`` in a folder without one included: only an
    unset setting falls back to the source tree's), when ``setting`` is set but empty (``""``: not the working
    folder), or when ``required`` and there is none.
    """
    here = Path.cwd()
    root = Path(root) if root is not None else here
    if given is not None:
        if not str(given).strip():  # Path("") is the working folder, which nobody named
            raise RegistryError(f"registry: an empty path ({str(given)!r}); give the registry file, or leave it out "
                                f"for {DEFAULT_REGISTRY} here")
        from ..common.files import path_text_problem

        problem = path_text_problem(str(given))  # 'models.yaml\r': the file without it is meant
        if problem is not None:
            raise RegistryError(f"registry: {problem}")
        path = _absolute(given, here)
        if not path.is_file():
            raise RegistryError(f"registry: {_not_a_file(given, path)}")
        return path
    if setting is not None:
        if not str(setting).strip():  # Path("") is the working folder, which nobody named
            raise RegistryError(f"setting registry (ANISO_REGISTRY, --aniso-registry) is set but empty "
                                f"({str(setting)!r}); give the registry file, or None for {DEFAULT_REGISTRY} here")
        path = _absolute(setting, here)
        if not path.is_file():
            raise RegistryError(f"setting registry (ANISO_REGISTRY, --aniso-registry): {_not_a_file(setting, path)}")
        return path
    for path in (root / DEFAULT_REGISTRY, SOURCE_TREE / DEFAULT_REGISTRY):
        if path.is_file():
            return path
    if required:
        raise RegistryError(f"registry: no {DEFAULT_REGISTRY} in {root} or in this package's source tree; give "
                            "--registry or set ANISO_REGISTRY")
    return None


#: The folders pytest does not collect from (its ``norecursedirs`` default), which :func:`holds_claim_tests` passes
#: over too.
_NOT_COLLECTED = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}", "__pycache__")

#: Most folders :func:`holds_claim_tests` looks through (a claims folder holds a few; ``--claims-dir /`` would
#: otherwise walk the whole disk), and the bytes it reads of each test module.
_MAX_FOLDERS = 2000
_MAX_READ = 1 << 20

#: The marks of a test a claims run measures: ``claim`` (a paper claim) and ``models`` (a test over registry rows
#: selected by tag, as the offline pipeline check of ``claims/``).
_CLAIMS_RUN_MARKS = ("claim", "models")
#: A line that applies one of those marks (``@pytest.mark.claim("...")``), looked for in a module that does not parse
#: (its syntax error is then named by the collection, as a claims module's).
_MARK_LINE = re.compile(rb"^[ \t]*@(?:pytest\.)?mark\.(claim|models)\(", re.MULTILINE)


def _is_mark(node, names: tuple[str, ...] = ("claim",)) -> bool:
    """Whether ``node`` (an expression) is ``pytest.mark.<name>(...)`` or ``mark.<name>(...)`` for one of ``names``."""
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr in names
            and ((isinstance(func.value, ast.Attribute) and func.value.attr == "mark")
                 or (isinstance(func.value, ast.Name) and func.value.id == "mark")))


def _module_marks(source: bytes) -> frozenset[str]:
    """Which of the marks :data:`_CLAIMS_RUN_MARKS` the Python ``source`` applies to a function or class (decorator,
    or ``pytestmark``), parsed once; in a module that does not parse, those :data:`_MARK_LINE` finds at a line's
    start."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset(m.decode() for m in _MARK_LINE.findall(source))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            marks = node.decorator_list
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                  for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
        else:
            continue
        found.update(m.func.attr for m in marks if _is_mark(m, _CLAIMS_RUN_MARKS))
        if len(found) == len(_CLAIMS_RUN_MARKS):
            break
    return frozenset(found)


def marks_a_claim(source: bytes) -> bool:
    """Whether the Python ``source`` of a test module marks a test with a claim: ``@pytest.mark.claim("<id>")`` on a
    function or class, or ``pytestmark = pytest.mark.claim(...)`` (or a list holding one). Parsed, not imported, so
    a mark written inside a string (a test that writes a claims module) does not count; a module that does not parse
    counts when a line of it starts with the decorator."""
    return "claim" in _module_marks(source)


def is_claims_module(source: bytes) -> bool:
    """Whether the Python ``source`` of a test module is one a claims run measures: it marks a test with
    ``@pytest.mark.claim(...)`` or ``@pytest.mark.models(...)`` (read as :func:`marks_a_claim` reads)."""
    return bool(_module_marks(source))


def _test_modules(folder: Path):
    """The test modules (``test_*.py``, ``*_test.py``) pytest collects under ``folder`` (folders it does not collect
    from passed over, at most :data:`_MAX_FOLDERS` folders, links to folders not followed), each with its first
    :data:`_MAX_READ` bytes, in a fixed order; unreadable ones left out."""
    import fnmatch

    stack, seen = [folder], 0
    while stack and seen < _MAX_FOLDERS:
        current = stack.pop()
        seen += 1
        try:
            with os.scandir(current) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            continue
        folders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not any(fnmatch.fnmatch(entry.name, pattern) for pattern in _NOT_COLLECTED):
                        folders.append(entry.path)
                elif (entry.name.endswith(".py") and (entry.name.startswith("test_") or entry.name.endswith("_test.py"))
                      and entry.is_file()):
                    with open(entry.path, "rb") as f:
                        source = f.read(_MAX_READ)
                    yield Path(entry.path), source
            except OSError:
                continue
        stack.extend(reversed(folders))


def _survey(folder: Path) -> tuple[bool, Path | None]:
    """One walk of the test modules under ``folder`` (:func:`_test_modules`), each parsed once: whether one marks a
    test with a claim (:func:`holds_claim_tests`), and the first that is no claims module (:func:`other_test_module`),
    stopping once both are known."""
    claim, other = False, None
    for path, source in _test_modules(folder):
        marks = _module_marks(source)
        claim = claim or "claim" in marks
        if other is None and not marks:
            other = path
        if claim and other is not None:
            break
    return claim, other


def holds_claim_tests(folder: Path) -> bool:
    """Whether ``folder`` (or a folder under it that pytest collects, at most :data:`_MAX_FOLDERS` of them) holds a
    test module (``test_*.py``, ``*_test.py``) that marks a test with a claim (:func:`marks_a_claim`). The modules
    are read (their first MiB) and parsed, not imported, so a folder of other tests runs none of them to find out."""
    return _survey(folder)[0]


def other_test_module(folder: Path) -> Path | None:
    """The first test module under ``folder`` (as :func:`holds_claim_tests` walks it) that is no claims module
    (:func:`is_claims_module`: it marks no test with ``claim`` or ``models``), or None. A claims run collects every
    test module of its folder, so such a module (a unit-test tree under the folder, ``--claims-dir .`` at a
    checkout's root) would be run as if it were a claim test."""
    return _survey(folder)[1]


def claims_folder(given: str | Path | None, registry: Path | None, option: str = "--claims-dir") -> Path:
    """The folder of claim tests: ``given``, else ``claims/`` beside ``registry``, else the source tree's. Raises
    ValueError (one line, naming ``option``: the CLI's ``--claims-dir``, the API's ``claims_dir``, and the folder)
    when there is none, when ``given`` is no folder, or when the folder holds no claim test
    (:func:`holds_claim_tests`): a folder of other tests (``--claims-dir tests``) would otherwise run them all as
    claims; and when a test module under it is no claims module (:func:`other_test_module`, named in the refusal):
    ``--claims-dir .`` at a checkout's root would otherwise run its unit tests under ``tests/`` too. Raises
    TypeError naming ``option`` when ``given`` is no str, path or None."""
    cli = option.startswith("--")
    if given is not None and not isinstance(given, (str, os.PathLike)):
        raise TypeError(f"{option}: {given!r:.60} ({type(given).__name__}); give the folder of the claim tests (a str "
                        f"or pathlib.Path), or None for claims/ beside the registry")
    if given is not None:
        path = Path(given)
        if not path.is_dir():
            if cli:
                raise ValueError(f"claims folder: {given} is not a folder (give {option})")
            raise ValueError(f"{option}: {given} is not a folder; give the folder of the claim tests, or leave "
                             f"{option} out for claims/ beside the registry")
    else:
        path = default_claims_folder(registry)
        if path is None:
            raise ValueError(f"no claims folder beside {registry} or in this package's source tree (give {option})")
    claim, other = _survey(path)  # one walk for both checks
    if not claim:
        what = "no claim tests in it (no test_*.py module marks a test with @pytest.mark.claim(\"<claim id>\"))"
    elif other is not None:
        where = other.relative_to(path) if other.is_relative_to(path) else other
        what = (f"{where} is no claims module (it marks no test with @pytest.mark.claim or @pytest.mark.models), and "
                f"a claims run runs every test module of its folder: a claims folder holds claim tests only")
    else:
        return path
    if cli:
        raise ValueError(f"claims folder {path}: {what}; give {option} the folder of the claim tests (claims/ of "
                         f"this suite), or leave it out for claims/ beside the registry")
    raise ValueError(f"{option}: {path}: {what}; give the folder of the claim tests (claims/ of this suite), or "
                     f"leave {option} out for claims/ beside the registry")


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


#: How a refusal names where a registry path came from: given (``--registry``, the ``registry`` argument), or set.
REGISTRY_GIVEN = "registry (--registry)"
REGISTRY_SETTING = "setting registry (ANISO_REGISTRY, --aniso-registry)"


def registry_source(given: str | Path | None, setting: str | Path | None) -> str | None:
    """Where the registry path of :func:`registry_path` came from, as a refusal names it: ``given`` (an explicit
    argument, ``--registry``), else setting ``registry``; None where neither (the default file)."""
    return REGISTRY_GIVEN if given is not None else REGISTRY_SETTING if setting is not None else None


def open_registry(path: Path | None, named: str | None = None) -> Registry:
    """The registry at ``path`` (:func:`~aniso.registry.entries.load_registry`), or an empty one for None. A file
    that is no registry but another of the suite's files (a results.json) is refused naming where the path came from,
    ``named`` (:data:`REGISTRY_GIVEN`, :data:`REGISTRY_SETTING`), where given."""
    try:
        return load_registry(path) if path is not None else Registry([], None)
    except NotARegistry as exc:
        if named is None:
            raise type(exc)(f"{exc}{_read_by_default(path)}") from None
        raise NotARegistry(f"{named}: {exc}") from None
    except RegistryError as exc:
        if named is not None:
            raise
        raise type(exc)(f"{exc}{_read_by_default(path)}") from None


def _read_by_default(path: Path | None) -> str:
    """`` (read as the registry because …)`` where ``path`` is the working folder's ``models.yaml``, taken as the
    registry because none was given (another tool's file of that name, say), not the source tree's; "" otherwise."""
    try:
        here = path is not None and path.resolve() == Path(DEFAULT_REGISTRY).resolve() and \
            path.resolve() != (SOURCE_TREE / DEFAULT_REGISTRY).resolve()
    except OSError:
        return ""
    return (" (read as the registry because it is the models.yaml of the working folder and none was given: give "
            "the registry with --registry, --aniso-registry under pytest, or ANISO_REGISTRY, or run elsewhere)"
            if here else "")


def settings_and_registry(options: dict[str, Any] | None = None, *, registry: str | Path | None = None,
                          root: str | Path | None = None, check_paths: bool = True,
                          required: bool = True, texts: dict[str, Any] | None = None,
                          check_models: bool = False, require_rows: bool = False) -> tuple[Settings, Registry]:
    """The run's settings (:meth:`Settings.from_sources` of ``options``, then the ``ANISO_*`` variables; unless
    ``check_paths`` is False, its paths and data folders checked and its corpus read, :func:`check_corpus`) and its registry (:func:`registry_path`; ``registry`` is an explicit
    path). ``texts``: ``--aniso-*`` option values as typed on a command line (:meth:`Settings.from_sources`). With
    ``check_models``, setting ``models`` must select at least one registry model; with it or ``require_rows``, the
    registry must hold a row. The settings' ``registry`` is the
    resolved file. Raises ValueError (one line; a :class:`~aniso.registry.entries.RegistryError` for the registry)
    naming the setting or file."""
    settings = Settings.from_sources(options, texts=texts)
    if check_paths:
        from ..inputs.media import DATA_FORMATS

        settings.check_paths(DATA_FORMATS)
        check_corpus(settings)
    path = registry_path(registry, settings.registry, root, required=required)
    named = registry_source(registry, settings.registry)
    if path is not None:
        settings = replace(settings, registry=str(path))
    opened = open_registry(path, named)
    if (check_models or require_rows) and path is not None and len(opened) == 0:
        # nothing for any setting to select: the file is at fault
        raise RegistryError(f"{path}: holds no models (its field models lists none); a registry lists at least one "
                            "model to measure")
    if check_models and path is not None:
        try:
            chosen, _ = opened.model_set(settings.models)
        except RegistryError as exc:  # what matches nothing: the setting is at fault, not the registry file
            said, here, other = str(exc).split(": ", 1)[-1].partition(" (the models.yaml in this folder")
            # the registry named apart, after the line's own words: never read as part of a suggested value
            raise RegistryError(f"setting models (ANISO_MODELS, --aniso-models) {settings.models!r}: {said} (in the "
                                f"registry {path}){here}{other}") from None
        if not list(chosen):
            raise ValueError(f"setting models (ANISO_MODELS, --aniso-models) must select at least one model of "
                             f"{path}, got {settings.models!r}, which selects none")
    return settings, opened
