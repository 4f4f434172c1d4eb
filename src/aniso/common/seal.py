"""Seals: keyed digests (HMAC-SHA256, :mod:`hmac`) that say a file was written by aniso on this installation.

A plain SHA-256 stored beside what it covers says that the file was not damaged, but anyone who edits the file can
recompute it. A seal is a digest keyed by a secret that aniso draws once (32 random bytes, :func:`secrets.token_bytes`)
and keeps in a key file readable by its owner only: an edit whose digest is recomputed without that key does not
verify. Two keys are used: one in the statistics cache folder (its entries: ``seal.key`` beside them, so that a
cache shared by the jobs of a cluster verifies on every node) and one in the user's state folder
(:func:`results_key_path`: ``results.json`` files, which ``aniso record`` writes into the registry only when a run on
this installation sealed them).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

__all__ = ["KEY_NAME", "SealKeyError", "load_key", "results_key_path", "seal", "verify"]

#: The name of a key file.
KEY_NAME = "seal.key"

#: Bytes of a key.
_KEY_BYTES = 32


class SealKeyError(OSError):
    """A key file that cannot be read or made (a read-only folder, a key of another length, a link)."""


def results_key_path() -> Path:
    """The key file that seals ``results.json`` files: ``seal.key`` in aniso's folder of the user's state
    (``platformdirs.user_state_path("aniso")``; on Linux ``$XDG_STATE_HOME/aniso``, by default
    ``~/.local/state/aniso``)."""
    from platformdirs import user_state_path

    return user_state_path("aniso") / KEY_NAME


#: The way out of a key file that cannot serve, said with its refusal: a key is never replaced behind the user's back
#: (what it sealed would silently stop verifying), but a new one is drawn where there is none.
_REMEDY = ("remove it and a new key is drawn on the next run (what the old key sealed is then computed or written "
           "again)")


def load_key(path: Path, *, create: bool = True) -> bytes:
    """The key in ``path`` (32 bytes), drawn and written there first when there is none and ``create``.

    The key file is written whole under a temporary name, then linked to ``path`` (:func:`os.link` fails where a
    key exists), so that processes sharing the folder all read the first key written, never a half-written one. The
    file is readable and writable by its owner only (0600).

    Raises :class:`SealKeyError` (one line naming ``path``) when the key cannot be read or written, is a symbolic
    link or no regular file, or is not 32 bytes long; and when there is none and not ``create``.
    """
    path = Path(path)
    for attempt in range(2):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            what = ("a symbolic link" if path.is_symlink() else "a folder" if path.is_dir() else
                    "a special file (a FIFO, a device or a socket)")
            raise SealKeyError(f"{path}: a seal key must be a regular file, not {what}; {_REMEDY}")
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            if not create or attempt:
                raise SealKeyError(f"{path}: no seal key") from None
            _write_new_key(path)
            continue
        except OSError as exc:
            raise SealKeyError(f"{path}: cannot read the seal key ({exc.strerror or exc})") from None
        if len(key) != _KEY_BYTES:
            raise SealKeyError(f"{path}: not a seal key ({len(key)} bytes, a key has {_KEY_BYTES}); {_REMEDY}")
        return key
    raise SealKeyError(f"{path}: no seal key")  # pragma: no cover - the loop returns or raises


def _write_new_key(path: Path) -> None:
    """Draw a key and publish it at ``path`` unless another process did first. Raises SealKeyError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as exc:
        raise SealKeyError(f"{path}: cannot write a seal key ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as handle:  # mkstemp makes it 0600
            handle.write(secrets.token_bytes(_KEY_BYTES))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process published its key first: read that one
        except OSError as exc:
            raise SealKeyError(f"{path}: cannot write a seal key ({exc.strerror or exc})") from None
    finally:
        os.unlink(tmp)


def seal(key: bytes, text: str) -> str:
    """The seal of ``text`` under ``key``: HMAC-SHA256 of its UTF-8 bytes, as 64 hexadecimal digits."""
    return hmac.new(key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def verify(key: bytes, text: str, given: object) -> bool:
    """Whether ``given`` is the seal of ``text`` under ``key`` (compared in constant time)."""
    return isinstance(given, str) and hmac.compare_digest(seal(key, text), given)
