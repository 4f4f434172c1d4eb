"""The local Hugging Face hub cache: import a model folder into it, read what it holds, say which weights are here.

A machine with no hub can still run the registry's hub rows when their weights are in the standard Hugging Face
cache (``$HF_HUB_CACHE``, by default ``~/.cache/huggingface/hub``). :func:`import_folder` writes a model folder into
the layout a download leaves (hidden files such as ``.gitattributes`` left out)::

    models--ORG--NAME/
        blobs/<sha256 of a Git LFS file (weights, 10 MB or more), git blob sha1 of any other file>
        snapshots/<commit>/<path>  -> ../../blobs/<hash>   (relative symlinks)
        refs/<revision>            (the commit, no newline)
        .aniso-import.json         {commit: {"imported_from": FOLDER, "revisions": [...], "files": {path: sha256}}}

Blob names follow huggingface_hub's convention (a file stored with Git LFS is named by its sha256, any other by its
git blob sha1, see ``huggingface_hub.utils.sha.git_hash``; which files the hub stores with LFS is approximated by
the hub's default ``.gitattributes`` suffixes and size, see :data:`LFS_SUFFIXES`). The commit is not a hub commit: it is the sha1 of the
sorted ``path sha256`` lines of the imported files, so importing the same files gives the same commit, and the
provenance file beside the snapshots (outside them, so ``scan_cache_dir`` and ``from_pretrained`` never see it) says
which folder it came from. ``from_pretrained(HUB_ID, local_files_only=True)`` and ``HF_HUB_OFFLINE=1`` then find it
as they find a downloaded model.

Pickle files (``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``, ``.pickle``) are left out when the folder has
safetensors weights, and a folder whose only weights are pickles is refused unless ``allow_pickle`` is given (the
suite's hub source still loads safetensors only).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HubCacheError", "Imported", "cache_root", "repo_dir", "import_folder", "resolve_commit",
           "import_provenance", "cached_state", "missing_weights", "cached_repos", "cached_revisions",
           "config_values_problem", "cache_inside_folder", "HUB_ID_PATTERN", "hub_id_problem", "safetensors_problem",
           "dangling_link", "link_to_nothing", "unreadable_model_file", "HUB_CACHE_VARIABLES", "hub_variable_problem",
           "file_in_the_way", "TWIN_MANIFEST", "kept_twin_manifest"]

#: A hub id: ``name`` or ``org/name`` (letters, digits, ``_ . -``).
HUB_ID_PATTERN = re.compile(r"[\w.\-]+(/[\w.\-]+)?")
#: Weight files that unpickle code when read.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
#: Suffixes the hub stores with Git LFS by default (its ``.gitattributes``); files of 10 MB or more are LFS too.
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".h5", ".onnx", ".msgpack",
                ".model", ".tflite", ".ot", ".arrow", ".parquet", ".pb", ".gz", ".zip", ".npy", ".npz", ".joblib",
                ".wasm", ".zst", ".xz", ".bz2", ".7z", ".tgz", ".gguf")
LFS_MIN_BYTES = 10 * 1024 * 1024
PROVENANCE_FILE = ".aniso-import.json"
_COMMIT = re.compile(r"[0-9a-f]{40}")


class HubCacheError(ValueError):
    """A folder cannot be imported, or a cache cannot be read; the one-line message names the folder, id or file."""


def hub_id_problem(hub_id: str) -> str | None:
    """Why ``hub_id`` is not an id the hub would accept (huggingface_hub's ``validate_repo_id``: ``name`` or
    ``org/name`` of letters, digits, ``_ . -``, not starting or ending with ``-`` or ``.``, no ``--`` or ``..``, at
    most 96 characters), or None."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(hub_id, str) or not HUB_ID_PATTERN.fullmatch(hub_id):
        return "expected org/name of letters, digits, '_', '.', '-'"
    for pair, other in (("..", "--"), ("--", "..")):
        if pair in hub_id:
            return f"{pair!r} (or {other!r}) is not allowed in a hub id"
    for part in hub_id.split("/"):
        if part[:1] in "-." or part[-1:] in "-.":
            return f"{part!r} begins or ends with '-' or '.', which a hub id's names may not"
        if len(part) > 96:
            return f"{shown(part)} is {len(part)} characters long, more than a hub id's names may be (96)"
    try:
        validate_repo_id(hub_id)
    except HFValidationError as exc:  # its whole reason, on one line (a reason may hold '. ' or '..')
        return " ".join(str(exc).split()).rstrip(".")
    return None


#: The longest revision (branch, tag or commit) a hub row or an import may name: the hub cache keeps each one as a
#: file name under ``refs/``.
MAX_REVISION = 255


def revision_problem(revision: str) -> str | None:
    """Why ``revision`` is not a revision of the hub's form (a branch, tag or commit: names of letters, digits,
    ``_ . -`` joined by ``/``, no ``..``, at most :data:`MAX_REVISION` characters), in one phrase, or None."""
    if not isinstance(revision, str) or not revision:
        return "no revision (a branch, tag or commit, e.g. main)"
    if len(revision) > MAX_REVISION:
        return f"{len(revision)} characters, more than a revision has ({MAX_REVISION} at most)"
    if not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)*", revision) or ".." in revision:
        return ("not a valid branch or tag name (letters, digits, '_', '.', '-' joined by '/', no '..'; a path "
                "is no revision)")
    return None


def shown(value: str, limit: int = 80) -> str:
    """``repr(value)``, cut to about ``limit`` characters with the length said (a message stays one short line)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(value)} characters)"


#: Bytes of a safetensors file's header-length field, and the largest header read (the format's own limit).
_ST_LEN, _ST_MAX_HEADER = 8, 100_000_000
_ST_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
              "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8, "C64": 8, "F4": 0.5,
              "F6_E2M3": 0.75, "F6_E3M2": 0.75}


def safetensors_problem(path: str | Path) -> str | None:
    """What is wrong with a ``.safetensors`` file, read from its header only (no tensor is loaded), or None: too
    short for a header, a header that is not a JSON object of tensors, a tensor whose dtype, shape and byte range
    disagree, tensors that do not tile the data, or a file shorter or longer than its header says (a truncated
    download or copy). The answer is one phrase, without the file name."""
    import math

    path = Path(path)
    size = path.stat().st_size
    if size < _ST_LEN:
        return f"{size} bytes, too short for a safetensors header"
    with path.open("rb") as f:
        n = int.from_bytes(f.read(_ST_LEN), "little")
        if n < 2 or n > _ST_MAX_HEADER or _ST_LEN + n > size:
            return (f"not a safetensors file, or truncated: its header claims {n} bytes, the file holds "
                    f"{size - _ST_LEN}")
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "not a safetensors file: its header is not JSON"
    if not isinstance(header, dict):
        return "not a safetensors file: its header is not a JSON object"
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
            return f"tensor {name!r} has no dtype, shape and data_offsets in the header"
        begin, end = info["data_offsets"]
        width = _ST_DTYPES.get(info["dtype"])
        if width is None or not all(isinstance(d, int) and d >= 0 for d in info["shape"]):
            return f"tensor {name!r}: dtype {info['dtype']!r} or shape {info['shape']} not understood"
        if not (0 <= begin <= end) or end - begin != math.ceil(math.prod(info["shape"]) * width):
            return f"tensor {name!r}: byte range {begin}..{end} does not fit dtype {info['dtype']} x {info['shape']}"
        spans.append((begin, end))
    spans.sort()
    data = size - _ST_LEN - n
    covered = 0
    for begin, end in spans:
        if begin != covered:
            return f"tensor bytes overlap or leave a gap at byte {covered} of the data"
        covered = end
    if covered != data:
        return (f"truncated: its header places {covered} bytes of tensors, the file holds {data}" if covered > data
                else f"{data - covered} bytes beyond the last tensor its header names")
    return None


@dataclass(frozen=True)
class Imported:
    """What :func:`import_folder` wrote: the ``repo`` folder, the ``commit`` (40 hex), the ``revision`` whose ref
    points at it, the imported ``files`` (relative paths), their total ``size`` in bytes, the pickle files it
    ``skipped``, the commit the ref named before, if another (``replaced``; that snapshot stays in the cache), and
    the repositories of a hub cache found inside the folder and left out (``caches``)."""

    repo: Path
    commit: str
    revision: str
    files: tuple[str, ...]
    size: int
    skipped: tuple[str, ...]
    replaced: str | None = None
    caches: tuple[str, ...] = ()


#: The environment variables huggingface_hub reads the hub cache folder from, in its order: the first one set names
#: it (``HF_HOME`` the folder above it, ``HF_HOME/hub``).
HUB_CACHE_VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME")


def hub_variable_problem() -> str | None:
    """The one-line refusal of an empty (or blank) hub cache variable, when the first of
    :data:`HUB_CACHE_VARIABLES` set in the environment is one: huggingface_hub would take it for the working folder
    (``HF_HUB_CACHE=''``: ``.``; ``HF_HOME=''``: ``./hub``) and read or write a hub cache there. None otherwise (an
    empty ``ANISO_*`` variable is refused the same way, :mod:`aniso.common.settings`); or of one that names a file
    (:func:`hub_variable_file`)."""
    for variable in HUB_CACHE_VARIABLES:
        if variable in os.environ:
            if os.environ[variable].strip():
                break
            return (f"environment variable {variable} is set but empty ({os.environ[variable]!r}), which would make "
                    f"the working folder the hub cache; unset it for the default (unset {variable}), or name a folder")
    return hub_variable_file()


def hub_variable_file() -> str | None:
    """The one-line refusal of a hub cache variable (the first of :data:`HUB_CACHE_VARIABLES` set) that names a
    file, or a folder below a file (``HF_HOME`` names the folder holding ``hub``): nothing can be cached or read
    there, and a model would be called "not cached here". None otherwise."""
    variable = next((v for v in HUB_CACHE_VARIABLES if os.environ.get(v, "").strip()), None)
    if variable is None:
        return None
    root = Path(os.path.expanduser(os.environ[variable])) / ("hub" if variable == "HF_HOME" else "")
    file = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), None)
    if file is None:
        return None
    return (f"environment variable {variable} ({os.environ[variable]}): {root} cannot be the hub cache: {file} is a "
            "file, not a folder")


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The hub cache folder: ``cache_dir`` if given, else huggingface_hub's ``HF_HUB_CACHE`` (set from
    ``HF_HUB_CACHE`` or ``HF_HOME``, default ``~/.cache/huggingface/hub``, as they were when huggingface_hub was
    first imported in this process). Raises HubCacheError, without ``cache_dir``, when the variable that names the
    cache is set but empty (:func:`hub_variable_problem`)."""
    if cache_dir is not None:
        return Path(os.path.expanduser(str(cache_dir)))
    empty = hub_variable_problem()
    if empty is not None:
        raise HubCacheError(empty)
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


#: The manifest a twin run writes beside its hub cache (``aniso run ID --twin --keep-twins FOLDER``: FOLDER/hub and
#: FOLDER/twin-manifest.json, which lists each twin's repo and commit under ``rows.<id>.imported``).
TWIN_MANIFEST = "twin-manifest.json"


def kept_twin_manifest(hub_id: str, commit: str, cache_dir: str | Path | None = None) -> Path | None:
    """The twin run's manifest (:data:`TWIN_MANIFEST`) beside the hub cache when the cache's snapshot ``commit`` of
    ``hub_id`` is one of that run's twins (random weights, kept by ``--keep-twins``), else None. A manifest that
    cannot be read, or says no commits, counts every snapshot of the cache as a twin's: nothing in that cache is
    measured as a real model unless the manifest says it is not a twin."""
    import json

    try:
        root = cache_root(cache_dir)
    except HubCacheError:
        return None
    manifest = root.parent / TWIN_MANIFEST
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        imported = [(i["repo"], i["commit"]) for row in data["rows"].values() for i in row["imported"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return manifest
    return manifest if not imported or (hub_id, commit) in imported else None


def repo_dir(hub_id: str, cache_dir: str | Path | None = None) -> Path:
    """``<cache>/models--ORG--NAME`` of a model's hub id (huggingface_hub's ``repo_folder_name``)."""
    return cache_root(cache_dir) / ("models--" + hub_id.replace("/", "--"))


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _git_sha1(path: Path) -> str:
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_lfs(rel: str, size: int) -> bool:
    return rel.lower().endswith(LFS_SUFFIXES) or size >= LFS_MIN_BYTES


def _link_leaves(folder: Path, path: Path) -> str | None:
    """Where ``path`` (under ``folder``; a symbolic link, or under one) leads when that is outside what an import may
    read, or None: a link may lead into ``folder``, or, when ``folder`` is a snapshot of a hub cache
    (``models--*/snapshots/<commit>``), into its repository's ``blobs/``."""
    target = path.resolve()
    allowed = [folder]
    if _in_hub_cache(folder):
        allowed.append(folder.parent.parent / "blobs")
    if any(target == root or root in target.parents for root in allowed):
        return None
    return str(target)


def _hub_cache_repo(folder: Path, rel: Path) -> str | None:
    """The first folder of ``rel`` (a path under ``folder``) that is a repository of a hub cache (a
    ``models--*``, ``datasets--*`` or ``spaces--*`` folder holding ``blobs`` or ``snapshots``), as a relative POSIX
    path, or None: a cache left in a model folder is no file of the model."""
    for i, part in enumerate(rel.parts):
        if part.startswith(("models--", "datasets--", "spaces--")):
            repo = folder.joinpath(*rel.parts[:i + 1])
            if (repo / "blobs").is_dir() or (repo / "snapshots").is_dir():
                return Path(*rel.parts[:i + 1]).as_posix()
    return None


#: The prefixes of a hub cache's repository folders (``models--org--name``; huggingface_hub's ``REPO_TYPES``).
_REPO_FOLDER_PREFIXES = ("models--", "datasets--", "spaces--")


def not_a_hub_cache(path: str | Path, listing: bool = False) -> str | None:
    """Why the folder ``path`` given as a hub cache (``--cache-dir``) is another folder, in words, or None: one
    repository's folder inside a hub cache (``models--org--name``), or its ``snapshots``/``blobs``/``refs`` folder or
    a snapshot (naming the cache folder to give), aniso's statistics cache (it holds ``seal.key``: setting
    ``cache_dir``), or, where a cache is to be listed (``listing``), a model folder (it holds ``config.json``: to be
    imported, not listed; an import into it is refused as a cache inside the folder imported). Read as given there, it would list nothing cached, or an import would write a cache inside a
    cache."""
    from ..common.seal import KEY_NAME

    where = Path(os.path.expanduser(str(path)))
    parts = [where, *where.parents][:3]
    for depth, folder in enumerate(parts):
        if folder.name.startswith(_REPO_FOLDER_PREFIXES) and (depth == 0 or parts[depth - 1].name in
                                                              ("snapshots", "blobs", "refs") or depth == 2):
            inner = "one repository's folder" if depth == 0 else f"inside the repository folder {folder.name}"
            return f"is {inner} of a hub cache; give the cache folder ({folder.parent})"
    if (where / KEY_NAME).is_file():
        return (f"is aniso's statistics cache (it holds {KEY_NAME}; setting cache_dir), not a hub cache; give the hub "
                "cache folder (HF_HUB_CACHE, default ~/.cache/huggingface/hub)")
    if listing and (where / "config.json").is_file() and not any(where.glob("models--*")):
        return ("is a model folder (it holds config.json), not a hub cache; give the hub cache folder (HF_HUB_CACHE, "
                "default ~/.cache/huggingface/hub), or import the folder into it: aniso hub import ORG/NAME FOLDER")
    return None


def cache_inside_folder(folder: str | Path, cache_dir: str | Path | None) -> str | None:
    """Where the hub cache an import writes in (``cache_dir``, else :func:`cache_root`) is ``folder`` itself or
    lies inside it, that cache's path; else None. Such an import would write the cache into the model folder, and a
    later import of the folder would copy that cache in turn."""
    src = Path(os.path.expanduser(str(folder))).resolve()
    root = cache_root(cache_dir).resolve()
    return str(root) if root == src or src in root.parents else None


def _folder_files(folder: Path, caches: list[str] | None = None) -> list[str]:
    """Relative POSIX paths of the regular files under ``folder`` (symlinks followed), hidden entries and the
    repositories of a hub cache found inside it (:func:`_hub_cache_repo`, appended to ``caches``) left out.
    Raises HubCacheError naming a symbolic link that leads outside the folder (:func:`_link_leaves`): its file would
    be copied into the cache; or naming the folder when a part of it cannot be listed (a chain of sub-folders deeper
    than the system lets a path be: :func:`aniso.common.files.tree_problem`)."""
    from ..common.files import tree_problem

    out = []
    try:
        paths = sorted(folder.rglob("*"))
    except OSError as exc:  # a chain of sub-folders deeper than a path may be: one line, not thousands of 'd's
        raise HubCacheError(f"{tree_problem(folder, exc)} (nothing was written)") from None
    for path in paths:
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        cache = _hub_cache_repo(folder, rel)
        if cache is not None:
            if caches is not None and cache not in caches:
                caches.append(cache)
            continue
        leaves = _link_leaves(folder, path)  # a link, or a file under a linked folder, that leads out
        if leaves is not None:
            raise HubCacheError(f"{folder}: {rel.as_posix()} is a symbolic link to {leaves}, outside the folder; "
                                "refused (copy the file into the folder if it belongs to the model)")
        if not path.is_file():
            continue
        out.append(rel.as_posix())
    return out


def file_in_the_way(repo: Path, revision: str) -> str | None:
    """Why an import cannot write into ``repo`` (a model's folder in the hub cache, :func:`repo_dir`) at
    ``revision``, in one line naming the path, or None: a file (or a link to a file) where the repository's folder,
    its ``blobs``, ``snapshots`` or ``refs`` folder (or a folder of a ref such as ``refs/pr/1``) belongs, or a folder
    where the ref file belongs."""
    ref = repo / "refs" / revision
    ref_folders = [repo / p for p in reversed(ref.relative_to(repo).parents[:-1])]  # refs, refs/pr of refs/pr/1
    folders = [repo, repo / "blobs", repo / "snapshots", *ref_folders]
    for folder in folders:
        if os.path.lexists(folder) and not folder.is_dir():
            what = "the repository's folder" if folder == repo else f"the folder {folder.relative_to(repo)}"
            kind = "a symbolic link to nothing" if not folder.exists() else "a file"
            return (f"{folder} is {kind} where {what} of the import belongs; move it away, or give another cache "
                    "folder (nothing was written)")
    if ref.is_dir():
        return (f"{ref} is a folder where the import's ref file (revision {revision}) belongs; move it away, or give "
                "another revision (nothing was written)")
    return None


@dataclass
class _CacheState:
    """What the cache held of one import's repository before it wrote anything, so that an import interrupted while
    it writes (Ctrl-C's KeyboardInterrupt, SIGTERM where the caller raises it as an exception, as ``aniso hub
    import`` does, or an OSError such as a full disk) leaves it as it was."""

    repo: Path
    snapshot: Path
    ref: Path
    repo_existed: bool
    snapshot_existed: bool
    blobs: frozenset[str]
    ref_text: bytes | None
    record_text: bytes | None

    @classmethod
    def of(cls, repo: Path, commit: str, revision: str) -> "_CacheState":
        def read(path: Path) -> bytes | None:
            return path.read_bytes() if path.is_file() else None

        blobs = repo / "blobs"
        return cls(repo, repo / "snapshots" / commit, repo / "refs" / revision, repo.exists(),
                   (repo / "snapshots" / commit).exists(),
                   frozenset(p.name for p in blobs.iterdir()) if blobs.is_dir() else frozenset(),
                   read(repo / "refs" / revision), read(repo / PROVENANCE_FILE))

    def restore(self) -> None:
        """Remove what the import wrote: the repository folder if it made it; else the snapshot folder it made, the
        blobs it added for it, any ``.incomplete`` file it left, and the ref and import record as they were. What
        an earlier import wrote stays."""
        if not self.repo_existed:
            shutil.rmtree(self.repo, ignore_errors=True)
            return
        if not self.snapshot_existed:
            shutil.rmtree(self.snapshot, ignore_errors=True)
        blobs = self.repo / "blobs"
        for path in (blobs.iterdir() if blobs.is_dir() else ()):
            if path.name not in self.blobs and (not self.snapshot_existed or path.name.endswith(".incomplete")):
                path.unlink(missing_ok=True)
        for path, text in ((self.ref, self.ref_text), (self.repo / PROVENANCE_FILE, self.record_text)):
            if text is None:
                path.unlink(missing_ok=True)
            elif not path.is_file() or path.read_bytes() != text:
                path.write_bytes(text)
        (self.repo / (PROVENANCE_FILE + ".incomplete")).unlink(missing_ok=True)


def import_folder(hub_id: str, folder: str | Path, revision: str = "main", cache_dir: str | Path | None = None,
                  allow_pickle: bool = False, check=None) -> Imported:
    """Write the model folder ``folder`` into the hub cache as ``hub_id`` at ``revision`` (see the module doc).

    Parameters
    ----------
    hub_id : ``org/name`` (or ``name``), as a registry hub row's ``repo``
    folder : a transformers model folder (with ``config.json``)
    revision : the branch or tag name whose ref is written (``main`` by default); not a 40-hex commit, since the
        commit is derived from the files
    cache_dir : the hub cache (default: ``HF_HUB_CACHE``, see :func:`cache_root`)
    allow_pickle : import a folder whose only weights are pickle files
    check : ``(folder, config) -> problem or None``, what a run of the folder would refuse, checked before a file
        is written (``aniso hub import`` passes :func:`aniso.sources.hub.import_problem`; this module does not
        import the hub source, which reads the cache through it); None: no such check

    Returns
    -------
    :class:`Imported`. Importing the same files again gives the same commit and rewrites nothing but the ref.

    Raises
    ------
    HubCacheError naming the id, folder or revision: malformed id (one the hub would refuse, see
    :func:`hub_id_problem`), no folder or no ``config.json``, a ``config.json`` that is not a JSON object, revision
    that looks like a commit or is no valid ref name, only pickle weights without ``allow_pickle``, no weights at all,
    a ``.safetensors`` file whose header is damaged or disagrees with its size (:func:`safetensors_problem`), a
    folder that ``check`` refuses (:func:`aniso.sources.hub.import_problem`: no tokenizer files, a config that does
    not fit the weights), a config no model can be built with (:func:`config_values_problem`), shards an index names
    that are not in the folder (:func:`missing_weights`), a hub cache inside the folder (:func:`cache_inside_folder`,
    before anything is written), a file in the cache where a folder of the import belongs (:func:`file_in_the_way`,
    before anything is read). The repositories of a hub cache found inside the folder are left out
    (``Imported.caches``). Two imports into one cache take turns on a lock of the cache folder
    (:func:`aniso.common.files.folder_lock`): the second waits (saying so after a while) and then writes its
    revision. An exception while it writes (KeyboardInterrupt, an OSError) is raised after what the
    import wrote is taken back (:class:`_CacheState`): the cache is as it was.
    """
    problem = hub_id_problem(hub_id)
    if problem is not None:
        raise HubCacheError(f"{shown(hub_id)}: not a hub id ({problem})")
    if _COMMIT.fullmatch(revision):
        raise HubCacheError(f"--revision {revision}: looks like a commit; the commit of an import is derived from its "
                            "files, so name a branch or tag (e.g. main)")
    problem = revision_problem(revision)
    if problem is not None:
        raise HubCacheError(f"--revision {shown(revision)}: {problem}")
    in_the_way = file_in_the_way(repo_dir(hub_id, cache_dir), revision)
    if in_the_way is not None:  # before any file is read: the import would fail writing, its clean-up after it
        raise HubCacheError(in_the_way)
    src = Path(os.path.expanduser(str(folder))).resolve()
    if not src.is_dir():
        from ..common.files import url_given

        url = url_given(folder)
        raise HubCacheError(f"{folder}: no such folder" if url is None else
                            f"{url} is a URL; the import reads a local folder: download the model's files first "
                            "(e.g. git clone, or a browser) and give that folder")
    inside = cache_inside_folder(src, cache_dir)
    if inside is not None:
        raise HubCacheError(f"{folder}: the hub cache {inside} is inside the folder imported; give a cache folder "
                            "outside it (nothing was written)")
    unreadable = unreadable_model_file(src)  # before any file is opened: a FIFO blocks, a device never ends
    if unreadable is not None:
        raise HubCacheError(f"{folder}: {unreadable}")
    if not (src / "config.json").is_file():
        raise HubCacheError(f"{folder}: {peft_adapter(src) or 'no config.json (a transformers model folder has one)'}")
    try:
        config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HubCacheError(f"{folder}: config.json is not valid JSON ({exc})") from None
    if not isinstance(config, dict):
        raise HubCacheError(f"{folder}: config.json holds a JSON {type(config).__name__}, not an object of config "
                            "fields")
    problem = config_values_problem(config)  # what no model can be built with, as a run of the folder says
    if problem is not None:
        raise HubCacheError(f"{folder}: {problem}; not imported, the cache is as it was")
    # only a config transformers' own classes read is checked: one without model_type may be read with the registry
    # row's (model_type:), and one with custom code (auto_map) is never run here
    problem = config_problem(src) if "model_type" in config and "auto_map" not in config else None
    if problem is not None:
        raise HubCacheError(f"{folder}: config.json: {problem}")
    caches: list[str] = []
    files = _folder_files(src, caches)
    safetensors = [f for f in files if f.endswith(".safetensors")]
    for f in safetensors:
        damaged = safetensors_problem(src / f)
        if damaged is not None:
            raise HubCacheError(f"{folder}: {f}: {damaged}")
    pickles = [f for f in files if f.lower().endswith(PICKLE_SUFFIXES)]
    if not safetensors and not pickles:
        raise HubCacheError(f"{folder}: no weights (no .safetensors file)")
    lacking = missing_weights(src) if safetensors else None  # shards an index names: as a run of the folder says
    if lacking is not None:
        raise HubCacheError(f"{folder}: {lacking}; not imported, the cache is as it was")
    if check is not None and safetensors and "model_type" in config and "auto_map" not in config:
        problem = check(src, config)  # what `aniso run` of the folder refuses, before a file is written
        if problem is not None:
            raise HubCacheError(f"{folder}: {problem}; not imported, the cache is as it was")
    skipped: list[str] = []
    if safetensors:
        skipped = pickles
    elif not allow_pickle:
        raise HubCacheError(f"{folder}: its only weights are pickle files ({', '.join(pickles)}), which run code when "
                            "read; convert them to safetensors, or pass --allow-pickle to import them anyway (the "
                            "suite's hub source still loads safetensors only)")
    files = [f for f in files if f not in skipped]

    sha256 = {f: _file_sha256(src / f) for f in files}
    commit = hashlib.sha1("".join(f"{f} {sha256[f]}\n" for f in sorted(files)).encode()).hexdigest()
    repo = repo_dir(hub_id, cache_dir)
    from ..common.files import folder_lock

    # imports into one cache take turns (two terminals, a script run twice): each writes, or takes back, only what
    # it wrote, and the state it restores is taken once it holds the lock; the lock is of the cache folder itself
    # (flock), so that nothing is left in the cache by it, and taking back an import never removes a lock another
    # import waits on
    repo.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(repo.parent, what="imports a model into this hub cache"):
        in_the_way = file_in_the_way(repo, revision)
        if in_the_way is not None:
            raise HubCacheError(in_the_way)
        before = _CacheState.of(repo, commit, revision)  # taken back as it was if the import is interrupted
        try:
            return _write_import(hub_id, src, files, sha256, commit, revision, cache_dir, skipped, caches)
        except BaseException:  # KeyboardInterrupt, SystemExit, a full disk: no half snapshot is left
            before.restore()
            raise



def _write_import(hub_id: str, src: Path, files: list[str], sha256: dict, commit: str, revision: str,
                  cache_dir: str | Path | None, skipped: list[str], caches: list[str]) -> Imported:
    """Write the checked files of :func:`import_folder` into the cache: blobs, snapshot links, ref, record."""
    repo = repo_dir(hub_id, cache_dir)
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    size = 0
    for f in files:
        path = src / f
        n = path.stat().st_size
        size += n
        blob = repo / "blobs" / (sha256[f] if _is_lfs(f, n) else _git_sha1(path))
        if not blob.is_file() or blob.stat().st_size != n:
            tmp = blob.with_name(blob.name + ".incomplete")
            shutil.copyfile(path, tmp)
            os.replace(tmp, blob)
        link = snapshot / f
        link.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(blob, link.parent)
        if link.is_symlink() and os.readlink(link) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(target, link)
    ref = repo / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    replaced = ref.read_text(encoding="utf-8").strip() if ref.is_file() else None
    ref.write_text(commit, encoding="utf-8")  # huggingface_hub writes refs without a newline
    record = import_provenance(hub_id, cache_dir)
    entry = record.get(commit, {})
    revisions = sorted(set(entry.get("revisions", [])) | {revision})
    record[commit] = {"imported_from": str(src), "revisions": revisions, "files": sha256}
    tmp = repo / (PROVENANCE_FILE + ".incomplete")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, repo / PROVENANCE_FILE)
    return Imported(repo, commit, revision, tuple(files), size, tuple(skipped),
                    replaced if replaced != commit else None, tuple(caches))


def import_provenance(hub_id: str, cache_dir: str | Path | None = None) -> dict:
    """``{commit: {"imported_from", "revisions", "files"}}`` of the imports of ``hub_id`` in the cache; ``{}`` when
    none (a downloaded model). Raises HubCacheError naming the file if it is not valid JSON."""
    path = repo_dir(hub_id, cache_dir) / PROVENANCE_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HubCacheError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HubCacheError(f"{path}: expected an object keyed by commit")
    return data


def config_problem(folder: Path) -> str | None:
    """Why transformers cannot read ``folder``'s ``config.json`` as its model type's config (a field of the wrong
    type, ``num_hidden_layers: "six"``; an unknown ``model_type``), in one line, or None. Reads the config only:
    no weights, no code of the folder (``trust_remote_code`` stays off)."""
    from transformers import AutoConfig
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its warnings about fields the weights' check then judges: no second line
    try:
        AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - transformers' and huggingface_hub's validation errors share no base
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:240]}"
    finally:
        hf_logging.set_verbosity(verbosity)
    return None


#: Config fields that give a count or a size a model is built with: a whole number of at least 1 where given.
POSITIVE_CONFIG_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
                          "max_position_embeddings", "num_key_value_heads", "head_dim", "n_embd", "n_layer", "n_head",
                          "n_positions", "n_inner", "d_model", "d_ff", "d_kv", "num_layers", "num_heads",
                          "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
                          "encoder_ffn_dim", "decoder_ffn_dim", "ffn_dim")
#: Config fields of the small number a normalisation adds to the variance before dividing by its root: above 0.
EPS_CONFIG_FIELDS = ("layer_norm_eps", "rms_norm_eps", "layer_norm_epsilon", "rms_norm_epsilon", "norm_eps",
                     "norm_epsilon", "layernorm_epsilon")


def config_values_problem(config: dict, prefix: str = "") -> str | None:
    """What in a model's ``config.json`` (the parsed object ``config``) no model can be built or run with, in one
    phrase naming the field, its value and what is allowed, or None. Read from the config only, before any model is
    built (a zero would divide by zero in the model's code, a negative epsilon give NaN in every layer, a padding id
    past the vocabulary stop the embedding's construction with an assertion):

    - the counts and sizes of :data:`POSITIVE_CONFIG_FIELDS` (``num_attention_heads``, ``hidden_size``, ...), where
      they are whole numbers: at least 1;
    - the epsilons of :data:`EPS_CONFIG_FIELDS` (``layer_norm_eps``, ``rms_norm_eps``, ...), where they are
      numbers: finite and above 0;
    - ``pad_token_id`` within the vocabulary (``vocab_size``): below it, and not below its negative (an embedding's
      padding index counts from the end when negative).

    The sub-configs of a composite model (``text_config``, ``vision_config``, ...) are checked the same way, their
    fields named ``text_config.hidden_size``."""
    import math

    def whole(name):
        value = config.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    for name in POSITIVE_CONFIG_FIELDS:
        value = whole(name)
        if value is not None and value < 1:
            return f"config.json {prefix}{name} {value}: must be a whole number of at least 1"
    for name in EPS_CONFIG_FIELDS:
        value = config.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not (math.isfinite(value) and value > 0):
            return (f"config.json {prefix}{name} {value}: must be a number > 0 (what a normalisation adds to the "
                    "variance before dividing by its square root)")
    pad, vocab = whole("pad_token_id"), whole("vocab_size")
    if pad is not None and vocab is not None and not -vocab <= pad < vocab:
        return (f"config.json {prefix}pad_token_id {pad} is past the vocabulary ({prefix}vocab_size {vocab}: token "
                f"ids 0 to {vocab - 1})")
    for key, value in config.items():
        if isinstance(value, dict) and key.endswith("_config") and key != "quantization_config":
            problem = config_values_problem(value, f"{prefix}{key}.")
            if problem is not None:
                return problem
    return None


def resolve_commit(hub_id: str, revision: str = "main", cache_dir: str | Path | None = None) -> str | None:
    """The commit the cache holds for ``hub_id`` at ``revision`` (a ref name, or a commit with a snapshot folder),
    or None when the cache does not hold it. Reads the cache only; no network. Raises HubCacheError naming the ref
    when the revision would lead out of the cache folder (``..``, an absolute path) or its ref file holds no commit
    (40 hex digits): a path built from it could name any folder of the machine."""
    repo = repo_dir(hub_id, cache_dir)
    if Path(revision).is_absolute() or ".." in Path(revision).parts:
        raise HubCacheError(f"{hub_id}: revision {revision!r} leads out of the hub cache's refs folder")
    ref = repo / "refs" / revision
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8", errors="replace").strip()
        if not _COMMIT.fullmatch(commit):
            raise HubCacheError(f"{ref} holds {commit[:60]!r}, not a commit (40 hex digits); import the model "
                                "again (aniso hub import) or delete the ref")
    else:
        commit = revision if _COMMIT.fullmatch(revision) else None
    if commit and (repo / "snapshots" / commit / "config.json").exists():
        return commit
    return None


#: Suffixes of the files of a model folder that a load or a fingerprint reads (weights, config, tokenizer).
MODEL_FILE_SUFFIXES = (".safetensors", ".json", ".txt", ".model", ".codes")


def link_to_nothing(path: Path) -> str | None:
    """``"NAME is a symbolic link to TARGET, which does not exist"`` when ``path`` is a symbolic link whose target
    (followed to the end, a relative one resolved) is not there, else None."""
    if path.is_symlink() and not path.exists():
        return f"{path.name} is a symbolic link to {path.resolve()}, which does not exist"
    return None


def dangling_link(folder: Path) -> str | None:
    """The first model file of ``folder`` (weights, config, tokenizer: :data:`MODEL_FILE_SUFFIXES`) that is a
    symbolic link to nothing, in one phrase (:func:`link_to_nothing`), or None."""
    for path in sorted(folder.iterdir()):
        if path.suffix in MODEL_FILE_SUFFIXES:
            broken = link_to_nothing(path)
            if broken is not None:
                return broken
    return None


def peft_adapter(folder: Path) -> str | None:
    """What to do with ``folder`` when it is a PEFT adapter (``adapter_config.json`` and no ``config.json``: the
    low-rank updates a fine-tuner saved, not a model), in one phrase naming its type and base model; else None."""
    config = folder / "adapter_config.json"
    if not config.is_file() or (folder / "config.json").exists():
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8")) if config.stat().st_size <= 2**20 else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = {}
    data = data if isinstance(data, dict) else {}
    kind, base = data.get("peft_type"), data.get("base_model_name_or_path")
    what = f"a PEFT {kind} adapter" if isinstance(kind, str) else "a PEFT adapter"
    of = f" of {base}" if isinstance(base, str) and base else ""
    return (f"{what}{of} (adapter_config.json), not a model: merge it into its base model (peft's "
            "merge_and_unload()), save the result with save_pretrained and give that folder")


def unreadable_model_file(folder: Path) -> str | None:
    """The first model file of ``folder`` (weights, config, tokenizer and preprocessing files:
    :data:`MODEL_FILE_SUFFIXES`) that cannot be read as a file, in one phrase naming it, or None: a symbolic link to
    nothing (:func:`link_to_nothing`), a folder (``tokenizer.json/``), a FIFO, a device (a link to ``/dev/zero``) or a
    socket (:func:`aniso.common.files.not_a_regular_file`), or a Git LFS pointer (:func:`aniso.common.files.lfs_pointer`:
    a clone without git-lfs). Checked with ``os.stat`` first: only a regular file of at most 1 KiB is opened (opening
    a FIFO blocks, and hashing a device never ends)."""
    from ..common.files import lfs_pointer, not_a_regular_file

    for path in sorted(folder.iterdir()):
        if path.suffix not in MODEL_FILE_SUFFIXES:
            continue
        broken = link_to_nothing(path)
        if broken is not None:
            return broken
        why = not_a_regular_file(path) or lfs_pointer(path)
        if why is not None:
            link = f" (a symbolic link to {os.path.realpath(path)})" if path.is_symlink() else ""
            return f"{path.name}{link} " + ("is a folder, not a file" if path.is_dir() else why)
    return None


def missing_weights(snapshot: Path) -> str | None:
    """What a snapshot or model folder lacks for the hub and local sources (which load safetensors only), or None: no
    ``.safetensors`` file (naming the weight files of other formats it holds), shards that its ``model.safetensors.index.json`` names but the cache does not hold (a
    download cut short; a symlink to a missing blob counts as missing), a ``model.safetensors`` beside such an
    index that does not name it (two weight sets: which one is measured would go unsaid), or ``.safetensors`` files
    under other names only and no index (``weights.safetensors``, shards without their index: transformers reads
    ``model.safetensors`` or the index, and would say "no file named model.safetensors", as if a download were
    missing), naming the files that look like weights (:data:`_WEIGHT_LOOKING`) and the names it reads."""
    index = snapshot / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            return f"{index.name} has no weight_map"
        absent = sorted(s for s in shards if not (snapshot / s).is_file())
        if absent and _in_hub_cache(snapshot):
            return f"{len(absent)} of {len(shards)} safetensors shards not cached ({absent[0]}...)"
        if absent:  # a model folder: no cache, its files are what is there
            more = f" (nor {len(absent) - 1} more of its {len(shards)} shards)" if len(absent) > 1 else \
                f" (1 of its {len(shards)} shards)"
            return f"{absent[0]}, named by {index.name}, is not in the folder{more}"
        if (snapshot / "model.safetensors").is_file() and "model.safetensors" not in shards:
            return (f"two weight sets: model.safetensors and the {len(shards)} shards {index.name} names; "
                    "transformers would load model.safetensors and leave the shards unread: keep one of them")
        return None
    if not any(p.is_file() for p in snapshot.glob("*.safetensors")):
        others = sorted(p.name for pattern in _OTHER_WEIGHTS for p in snapshot.glob(pattern) if p.is_file())
        if others:
            return (f"no .safetensors weights, only {', '.join(others[:3])}{'...' if len(others) > 3 else ''}, which "
                    "the suite does not load (pickled or framework-specific weights); convert them once, where you "
                    "trust them: model.save_pretrained(FOLDER, safe_serialization=True)")
        broken = [p for p in sorted(snapshot.glob("*.safetensors")) if link_to_nothing(p)]
        if broken:  # a blob of the hub cache deleted, or a folder's link to weights moved away
            return f"no .safetensors weights: {link_to_nothing(broken[0])}"
        return "no .safetensors weights (the suite loads safetensors only)"
    if not (snapshot / "model.safetensors").is_file():  # transformers reads no other name: it would say "not found"
        held = sorted(p.name for pattern in _WEIGHT_LOOKING for p in snapshot.glob(pattern) if p.is_file())
        shown_held = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
        rename = (f"rename {held[0]} to model.safetensors" if len(held) == 1 else
                  "rename its one weights file to model.safetensors, or give its shards their index")
        return (f"no model.safetensors nor model.safetensors.index.json, the names transformers reads weights from; "
                f"its weights files are {shown_held}, which it does not read: {rename}")
    return None


def _in_hub_cache(folder: Path) -> bool:
    """Whether ``folder`` is a snapshot of a hub cache (``models--*/snapshots/<commit>``), not a model folder."""
    return folder.parent.name == "snapshots" and folder.parent.parent.name.startswith(("models--", "datasets--"))


#: Weight files of other formats than safetensors, named when a folder holds only those.
_OTHER_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.h5", "*.msgpack", "*.pkl")
#: Files that look like a model's weights, named when none of them has a name transformers reads.
_WEIGHT_LOOKING = ("*.safetensors", "*.bin", "*.pt", "*.pth")


def cached_state(hub_id: str, revision: str = "main", cache_dir: str | Path | None = None) -> dict | None:
    """What the cache holds of ``hub_id`` at ``revision``: ``{"commit", "origin", "size", "missing"}``
    (``origin`` is ``"imported from FOLDER"`` or ``"downloaded"``, ``size`` the bytes of the snapshot's files,
    ``missing`` what it lacks to be loaded, see :func:`missing_weights`, or None), or None when it holds no
    snapshot of that revision. Raises HubCacheError when the import record is unreadable."""
    commit = resolve_commit(hub_id, revision, cache_dir)
    if commit is None:
        return None
    snapshot = repo_dir(hub_id, cache_dir) / "snapshots" / commit
    size = sum(p.stat().st_size for p in snapshot.rglob("*") if p.is_file())
    imported = import_provenance(hub_id, cache_dir).get(commit)
    origin = f"imported from {imported['imported_from']}" if imported else "downloaded"
    return {"commit": commit, "origin": origin, "size": size, "missing": missing_weights(snapshot)}


def cached_repos(cache_dir: str | Path | None = None) -> list[str]:
    """The hub ids of the models the cache holds (its ``models--ORG--NAME`` folders), sorted; ``[]`` when the
    cache folder does not exist."""
    root = cache_root(cache_dir)
    if not root.is_dir():
        return []
    return sorted(p.name[len("models--"):].replace("--", "/") for p in root.glob("models--*") if p.is_dir())


def cache_origin(cache_dir: str | Path | None = None) -> str:
    """Where the hub cache folder of :func:`cache_root` comes from, in one phrase: ``cache_dir`` given, the variable
    of :data:`HUB_CACHE_VARIABLES` that named it, or the default; and, when the variables now name another folder
    than the one huggingface_hub fixed when it was first imported (a variable set in ``os.environ`` after ``import
    aniso``, as in a notebook), which variable and that it was set too late to count."""
    if cache_dir is not None:
        return "the cache folder given"
    root = cache_root()
    for variable in HUB_CACHE_VARIABLES:
        value = os.environ.get(variable)
        if value is None:
            continue
        now = Path(os.path.expanduser(value)) / ("hub" if variable == "HF_HOME" else "")
        if os.path.abspath(now) == os.path.abspath(root):
            return f"set by {variable}"
        return (f"fixed when huggingface_hub was first imported in this process; {variable} now names {now}, set "
                "after that, so it is not read: set it before importing aniso (or in the shell), or restart")
    return "the default; HF_HUB_CACHE and HF_HOME are not set"


def unnamed_snapshots(hub_id: str, cache_dir: str | Path | None = None) -> list[str]:
    """The commits of the snapshots the cache holds for ``hub_id`` (with a ``config.json``) that no ref file of its
    ``refs/`` names (a refs folder deleted by hand), sorted: a revision name does not reach them."""
    repo = repo_dir(hub_id, cache_dir)
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return []
    named = set()
    for rev in cached_revisions(hub_id, cache_dir):
        try:
            named.add((repo / "refs" / rev).read_text(encoding="utf-8", errors="replace").strip())
        except OSError:
            continue
    return sorted(p.name for p in snapshots.iterdir()
                  if _COMMIT.fullmatch(p.name) and p.name not in named and (p / "config.json").exists())


def unnamed_snapshot_fix(hub_id: str, revision: str = "main", cache_dir: str | Path | None = None) -> str:
    """What to do about a snapshot no ref names (:func:`unnamed_snapshots`), in one phrase."""
    return (f"import the model again (aniso hub import {hub_id} FOLDER), write the commit into "
            f"{repo_dir(hub_id, cache_dir) / 'refs' / revision}, or give the commit as the revision (a registry hub "
            "row's revision:)")


def not_cached_hints(hub_id: str, revision: str = "main", cache_dir: str | Path | None = None) -> str:
    """What a refusal of ``hub_id`` at ``revision`` as not cached here adds, beginning ``"; "``: the cache folder
    looked in and where it comes from (:func:`cache_origin`); a snapshot of the model the cache holds without a
    ``refs/<revision>`` naming it (the refs folder deleted), with what to do; the other revisions the cache holds
    of ``hub_id`` (``aniso hub import ... --revision v1.0``), and the registry row that measures one of them; a
    cached hub id that differs only in case (the cache's folder names are case-sensitive). Never raises: a cache it
    cannot read adds less."""
    try:
        root = cache_root(cache_dir)
        said = f"; looked in the hub cache {root} ({cache_origin(cache_dir)})"
    except (HubCacheError, OSError):
        return ""
    try:
        repo = repo_dir(hub_id, cache_dir)
        held = unnamed_snapshots(hub_id, cache_dir)
        if held and not (repo / "refs" / revision).is_file() and not _COMMIT.fullmatch(revision):
            said += (f"; it holds snapshot {held[0]}{f' (and {len(held) - 1} more)' if len(held) > 1 else ''} of "
                     f"{hub_id}, but no refs/{revision} names a commit (its refs folder was deleted?): "
                     f"{unnamed_snapshot_fix(hub_id, revision, cache_dir)}")
        other = [r for r in cached_revisions(hub_id, cache_dir) if r != revision]
        full = short_commit_matches(hub_id, revision, cache_dir)
        if full:  # a short commit: the hub and its cache know a commit by its 40 digits only
            said += (f"; {revision!r} is the start of commit {' and '.join(full)}, which the cache holds, but a hub "
                     "revision is a branch, tag or whole 40-digit commit: give "
                     + (f"revision: {full[0]}" if len(full) == 1 else "the whole commit meant"))
        elif other:
            said += (f"; for {hub_id} it holds revision(s) {', '.join(other)} only, not {revision!r}: a registry row "
                     f"measures one of them, with source: {{kind: hub, repo: {hub_id}, revision: {other[0]}}}")
        if not repo.is_dir():
            same = [r for r in cached_repos(cache_dir) if r.casefold() == hub_id.casefold() and r != hub_id]
            if same:
                said += f"; did you mean {same[0]!r}, which the cache holds? (its folder names are case-sensitive)"
    except OSError:
        pass
    return said


def short_commit_matches(hub_id: str, revision: str, cache_dir: str | Path | None = None) -> list[str]:
    """The commits of the snapshots the cache holds for ``hub_id`` that ``revision`` is the start of, where
    ``revision`` reads as a short commit (7 to 39 lowercase hex digits), sorted; ``[]`` otherwise. The hub and its
    cache resolve a commit by its whole 40 digits only, so a short one is not loaded: it is named whole instead."""
    if not re.fullmatch(r"[0-9a-f]{7,39}", revision):
        return []
    snapshots = repo_dir(hub_id, cache_dir) / "snapshots"
    if not snapshots.is_dir():
        return []
    return sorted(p.name for p in snapshots.iterdir() if _COMMIT.fullmatch(p.name) and p.name.startswith(revision))


def cached_revisions(hub_id: str, cache_dir: str | Path | None = None) -> list[str]:
    """The revision names (``refs/``) the cache holds for ``hub_id``, sorted; ``[]`` when none."""
    refs = repo_dir(hub_id, cache_dir) / "refs"
    if not refs.is_dir():
        return []
    return sorted(p.relative_to(refs).as_posix() for p in refs.rglob("*") if p.is_file())
