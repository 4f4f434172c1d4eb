"""File helpers shared by the cache, the sources and the miniatures: hashing in chunks, atomic writes."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["sha256_file", "hash_files", "atomic_write", "exclusive"]


def _feed(h, path: Path) -> None:
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks. Raises OSError if it cannot be read."""
    h = hashlib.sha256()
    _feed(h, Path(path))
    return h.hexdigest()


def hash_files(files: list[Path]) -> str:
    """SHA-256 prefix (16 hex digits) over the files' names and bytes, in the given order."""
    h = hashlib.sha256()
    for p in files:
        h.update(Path(p).name.encode())
        _feed(h, Path(p))
    return h.hexdigest()[:16]


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then move it onto ``path`` in one step, so a reader
    never sees a half-written file and an interrupted write leaves the old file (or none). Creates the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def exclusive(path: Path):
    """A lock held while ``path`` is being made (``<path>.lock``, ``filelock``): processes sharing a cache folder
    (``pytest -n``, jobs of a cluster on a shared disk) make each entry once; the others wait, then read it. Use as
    ``with exclusive(path): ...``, checking again inside whether ``path`` exists."""
    from filelock import FileLock

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock")
