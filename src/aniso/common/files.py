"""File helpers shared by the cache, the sources and the miniatures: hashing in chunks, atomic writes."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
from pathlib import Path
from typing import Callable

__all__ = ["sha256_file", "hash_files", "check_readable", "atomic_write", "exclusive", "quarantine", "default_file_mode",
           "wide_unicode", "warn_as_file", "unwritable_path"]


def _opened(path: Path):
    """``path`` opened for reading in binary, once it is known to be a regular file (before opening it: a FIFO
    blocks the open, a device is read for ever). Raises OSError naming the file."""
    why = not_a_regular_file(path)
    if why is not None:
        raise OSError(f"{path} {why}")
    return open(path, "rb")


def _feed(h, path: Path) -> None:
    with _opened(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)


def check_readable(files: list[Path] | tuple[Path, ...]) -> None:
    """Check each file as :func:`hash_files` and :func:`sha256_file` do before they read it, without reading a byte:
    it is there and a regular file (checked before it is opened: a FIFO blocks the open) and it can be opened for
    reading. Raises the same OSError naming the file that hashing it would."""
    for p in files:
        with _opened(Path(p)):
            pass


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks, once per process for the same file: the digest is remembered
    under the file's resolved path, device, inode, size and modification time (ns), so a model file checked when its
    folder is located, hashed for the source fingerprint and checked again at load is read once, and a file that is
    replaced or rewritten is read again. Raises OSError naming the file if it cannot be read or is no regular file
    (a FIFO, a device, a folder: :func:`not_a_regular_file`; checked before it is opened)."""
    given = Path(path)
    path = given.resolve()
    st = path.stat()
    why = not_a_regular_file(path)
    if why is not None:
        raise OSError(f"{given} {why}")
    return _sha256_of(str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256_of(path: str, dev: int, ino: int, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    _feed(h, Path(path))
    return h.hexdigest()


def hash_files(files: list[Path], read: bool = True) -> str:
    """SHA-256 prefix (16 hex digits) over the files' names and bytes, in the given order. Raises OSError naming a
    file that cannot be read or is no regular file (checked before it is opened). ``read=False`` (a listing, which
    needs to know only that the files are there): each file is checked so (:func:`check_readable`), none is read,
    and the answer is ``unread``, no identity of the files."""
    if not read:
        check_readable(files)
        return "unread"
    h = hashlib.sha256()
    for p in files:
        h.update(Path(p).name.encode())
        _feed(h, Path(p))
    return h.hexdigest()[:16]


def default_file_mode() -> int:
    """The mode a plain ``open(path, "w")`` gives a new file: 0o666 less the process's umask (read without changing
    it where Linux reports it, else by setting and restoring it)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            umask = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
    except (OSError, StopIteration, ValueError):
        umask = os.umask(0o022)
        os.umask(umask)
    return 0o666 & ~umask


def line_ending(data: bytes) -> str:
    """The line ending of a text file's bytes, to write it back as it was: ``"\r\n"`` (Windows) or ``"\r"`` (old
    Mac OS) where its first line ends so, else ``"\n"`` (also for a file of one line). For ``open(...,
    newline=...)``, which writes each ``"\n"`` of the text as it."""
    end = data.find(b"\n")
    cr = data.find(b"\r")
    if cr == -1 or (end != -1 and end < cr):
        return "\n"
    return "\r\n" if data[cr + 1:cr + 2] == b"\n" else "\r"


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then move it onto ``path`` in one step, so a reader
    never sees a half-written file and an interrupted write leaves the old file (or none), and no temporary file:
    the temporary file is named before it is made (as :func:`tempfile.mkstemp` makes it: a random name, made only
    where none is, owner-only), so a Ctrl-C landing as it is made or written still finds it to remove. Creates the
    folder. The file keeps the permissions of the file it replaces (a private 0600 file stays private); a new file
    gets those of any new file under the user's umask (:func:`default_file_mode`), not the 0600 of a temporary file,
    also where ``write`` makes the file anew (safetensors' ``save_file`` writes 0600).
    Raises OSError where the folder or the file cannot be made or written (FileExistsError after 100 names taken)."""
    import secrets

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    tmp = None
    try:
        for _ in range(100):
            tmp = path.parent / f"{path.name}.{secrets.token_hex(4)}.tmp"
            try:
                os.close(os.open(tmp, flags, 0o600))
            except FileExistsError:  # another file of that name: not this write's to remove
                tmp = None
                continue
            break
        else:
            raise FileExistsError(f"no free temporary file name beside {path} after 100 tries")
        try:  # the mode of the file replaced, else a new file's
            mode = stat.S_IMODE(os.stat(path).st_mode) & 0o777
        except FileNotFoundError:
            mode = default_file_mode()
        os.chmod(tmp, mode | stat.S_IRUSR | stat.S_IWUSR)  # (writable by its owner while written)
        write(tmp)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):  # (moved onto path: nothing left)
                os.unlink(tmp)


#: Seconds a process waits for another's lock before it says that it is waiting (:func:`exclusive`).
LOCK_NOTICE_SECONDS = 10.0


@contextlib.contextmanager
def exclusive(path: Path, notice_after: float = LOCK_NOTICE_SECONDS):
    """A lock held while ``path`` is being made (``<path>.lock``, ``filelock``): processes sharing a cache folder
    (``pytest -n``, jobs of a cluster on a shared disk) make each entry once; the others wait, then read it. Use as
    ``with exclusive(path): ...``, checking again inside whether ``path`` exists. A process still waiting after
    ``notice_after`` seconds says so once (a RuntimeWarning naming the lock file), then waits on: the other process
    may be stopped (Ctrl-Z) or slow, and silence would look like a hang. A ``<path>.lock`` that is a symbolic link,
    a folder or a special file is no lock a process made: it is moved aside (:func:`quarantine`) with a
    RuntimeWarning naming it, and the lock made afresh."""
    import warnings

    from filelock import FileLock, Timeout

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = Path(str(path) + ".lock")
    if lock_path.is_symlink() or (lock_path.exists() and not lock_path.is_file()):
        # filelock makes regular files: a link or a folder here is no live lock; aside with it, as a corrupt entry
        what = ("a symbolic link" if lock_path.is_symlink() else "a folder" if lock_path.is_dir() else
                "a special file (a FIFO, a device or a socket)")
        warn_as_file(str(lock_path), f"{lock_path} is {what}, not a lock file aniso makes; "
                     f"{quarantine(lock_path)}", RuntimeWarning, __name__)
    lock = FileLock(str(lock_path))
    try:
        lock.acquire(timeout=notice_after)
    except Timeout:
        warn_as_file(str(lock.lock_file), f"waiting for another process that holds {lock.lock_file} (it is making "
                     "the same cache entry; a stopped one, Ctrl-Z, holds it until it goes on or ends)",
                     RuntimeWarning, __name__)
        lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


@contextlib.contextmanager
def _flock(path: Path, notice_after: float | None = None, waiting: str = ""):
    """An exclusive ``fcntl.flock`` of ``path`` itself (a file or a folder, opened read-only; no lock file beside
    it), held inside the block. With ``notice_after`` a process still waiting after that many seconds says so once
    (a RuntimeWarning: ``waiting``), then waits on. Where the system has no ``flock`` (not POSIX), nothing is
    locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if notice_after is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            import time
            import warnings

            deadline = time.monotonic() + notice_after
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        warn_as_file(str(path), waiting, RuntimeWarning, __name__)
                        fcntl.flock(fd, fcntl.LOCK_EX)
                        break
                    time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_lock(folder: Path, notice_after: float = LOCK_NOTICE_SECONDS, what: str = "writes into it"):
    """An exclusive lock on the folder ``folder`` itself (:func:`_flock`: no lock file, so nothing is left in the
    folder) held while a process writes into it: processes writing into one folder (two ``aniso hub import`` into one
    hub cache) take turns. A process still waiting after ``notice_after`` seconds says so once (a RuntimeWarning
    naming the folder and ``what`` the other process does), then waits on. The folder must exist. Where the system
    has no ``flock`` (not POSIX), nothing is locked."""
    with _flock(folder, notice_after, f"waiting for another process that holds the lock of {folder} (it {what}; a "
                                      "stopped one, Ctrl-Z, holds it until it goes on or ends)"):
        yield


@contextlib.contextmanager
def rewriting(path: Path):
    """An exclusive lock on the file ``path`` itself (:func:`_flock`; no lock file beside it) held while a process
    reads, checks and rewrites it (``aniso record`` into a registry): processes rewriting one file take turns, and
    one that waited reads the file afresh once it holds the lock, so neither writes over what the other wrote. The
    rewrite replaces the file (:func:`atomic_write`): a process waiting on the old file gets its lock when the first
    is done, and must then read ``path`` again (which names the new file) before deciding anything. Where the system
    has no ``flock`` (not POSIX), nothing is locked."""
    with _flock(path):
        yield


def quarantine(*paths: Path) -> str:
    """Move the files of a corrupt cache entry aside to ``<name>.corrupt``, so the entry is recomputed and written
    afresh and the bad bytes stay for inspection; returns what was done, in words. An entry found corrupt again
    goes to ``<name>.2.corrupt``, ``<name>.3.corrupt``, ...: the first number free for every file of the entry, so
    its files keep one number and no earlier copy is written over."""
    def target_of(path: Path, number: int) -> Path:
        return path.with_name(path.name + (".corrupt" if number == 1 else f".{number}.corrupt"))

    number = 1
    while any(os.path.lexists(target_of(path, number)) for path in paths):
        number += 1
    moved, failed = [], []
    for path in paths:
        if not os.path.lexists(path):  # a link to nothing is moved aside too
            continue
        target = target_of(path, number)
        try:
            os.replace(path, target)
            moved.append(target.name)
        except OSError as exc:
            failed.append(f"{path.name} ({exc.strerror or exc})")
    said = f"moved aside to {', '.join(moved)}" if moved else "nothing moved aside"
    return said + (f"; could not move {', '.join(failed)}" if failed else "")


#: The first bytes of compressed or archive formats, with their names: such a file is no text, whatever its name.
_COMPRESSED = ((b"\x1f\x8b", "gzip-compressed"), (b"BZh", "bzip2-compressed"), (b"\xfd7zXZ\x00", "xz-compressed"),
               (b"\x28\xb5\x2f\xfd", "zstd-compressed"), (b"PK\x03\x04", "a zip archive"),
               (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"), (b"\x04\x22\x4d\x18", "lz4-compressed"))


def through_descriptor(path: str | Path) -> str | None:
    """How ``path`` names an open stream rather than a file in a folder: ``"-"`` (the convention of many commands
    for standard input, which aniso's file arguments do not follow), or a name whose folder is no folder of files
    (``/dev/stdin``, ``/dev/fd/3``, ``/proc/self/fd/0``: the folder resolves to ``/dev``, ``/dev/fd`` or ``/proc``),
    which may be read but beside which nothing is written or looked for. A few words naming it (``standard input``,
    ``a stream or file descriptor in /proc/123/fd``); None for any other path."""
    text = os.fspath(path)
    if text == "-":
        return "standard input"
    if text in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
        return "standard input"
    try:
        folder = os.path.realpath(os.path.dirname(os.path.abspath(text)))
    except (OSError, ValueError):  # (a name the system refuses is named where it is read)
        return None
    if folder in ("/dev", "/dev/fd") or folder == "/proc" or folder.startswith("/proc/"):
        return f"a stream or file descriptor in {folder}"
    return None


#: Unicode categories of the characters a path setting or option may not hold: controls (C0 and C1: a line end, a
#: tab), format characters (invisible: a zero-width space, a byte-order mark, a direction mark, a soft hyphen) and the
#: line and paragraph separators. Such a character pasted or read into a path names a file or folder other than the
#: one meant, and shows nowhere on a terminal.
_UNSEEN = ("Cc", "Cf", "Zl", "Zp")


def _unseen(c: str) -> bool:
    import unicodedata

    return unicodedata.category(c) in _UNSEEN


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a one-line message shows it: as given, or as Python writes it (``repr``) when it holds a character
    that a terminal would not show as itself (a line end, which would break the line; an invisible character) or
    begins or ends with a blank (a path pasted with a trailing space, another path than the one without it)."""
    text = os.fspath(path)
    text = text if isinstance(text, str) else os.fsdecode(text)
    return text if all(c.isprintable() for c in text) and text == text.strip() else repr(text)


def tree_problem(folder: str | os.PathLike, exc: OSError) -> str:
    """Why the folder ``folder`` could not be listed to its end (``exc``, raised while walking it: a chain of
    sub-folders deeper than the system lets a path be, ``[Errno 36] File name too long``; a sub-folder that cannot
    be read), in one short line naming the folder and the sub-folder (its first 60 characters under ``folder`` and
    its length, not the whole path of thousands), with what to do. Nothing is measured or imported from a folder
    only part of which can be read."""
    import errno

    where = os.fsdecode(exc.filename) if exc.filename is not None else os.fspath(folder)
    top = os.fspath(folder)
    rel = where[len(top):].lstrip(os.sep) if where.startswith(top) else where
    rel = rel if len(rel) <= 60 else f"{rel[:60]}… ({len(where)} characters in all)"
    from .tables import printable

    if exc.errno == errno.ENAMETOOLONG:
        why = ("holds a chain of sub-folders deeper than the system lets a path be (File name too long), at "
               f"{printable(rel)}")
    else:
        why = f"holds a sub-folder that cannot be read ({exc.strerror or exc}): {printable(rel)}"
    return f"the folder {shown_path(top)} {why}; move it out of the folder, or give another folder"


def link_loop(path: str | os.PathLike) -> str | None:
    """The part of ``path`` (it, or a folder on its way) that is a symbolic link to itself or one of a loop of links
    (``a -> b -> a``), which nothing can be read from or created at, or None. Checked with ``os.stat`` (no
    ``Path.resolve``, which raises RuntimeError on a loop)."""
    import errno
    from pathlib import PurePath

    text = os.path.expanduser(os.fspath(path))
    for part in (text, *map(str, PurePath(text).parents)):
        if os.path.islink(part):
            try:
                os.stat(part)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return part
    return None


def path_text_problem(text: str) -> str | None:
    """Why the path ``text`` (a setting's or option's value, as given) is refused before it is used, or None: it holds
    a control character (a line end ``\\r`` or ``\\n``, a tab, ...: a value read from a file with Windows line ends,
    or pasted with its newline) or an invisible one (a zero-width space, a byte-order mark: Unicode's format
    characters), or begins or ends with blanks (a blank before an absolute path makes it relative to the working
    folder). Such a path would name a file or folder other than the one meant, and a folder that a run creates (a
    cache, a report) would be made afresh beside the real one. The value is shown as Python writes it (``repr``), so
    that a line end in it does not overwrite the message on a terminal and an invisible character is seen; the path
    without the characters is named where it exists."""
    bad = next((c for c in text if _unseen(c)), None)
    stripped = text.strip()
    if bad is None and stripped == text:
        return None
    if bad is None:
        what = "begins or ends with blanks"
    elif bad in "\r\n":
        what = f"holds the control character {bad!r} (a line end, as in a value read from a file with Windows line ends)"
    elif ord(bad) < 32 or 127 <= ord(bad) < 160:
        what = f"holds the control character {bad!r}"
    else:
        what = f"holds the invisible character U+{ord(bad):04X} ({_unicode_name(bad)})"
    clean = "".join(c for c in stripped if not _unseen(c)).strip()
    there = f"; {clean} exists" if clean and os.path.exists(clean) else ""
    return f"{text!r} {what}{there}: remove {'it' if len(text) - len(clean) == 1 else 'them'}"


def _unicode_name(c: str) -> str:
    import unicodedata

    return unicodedata.name(c, "a format character").lower()


#: A value that begins as a URL does (``https://``, ``s3://``, ``hf://``): a scheme of two letters or more (so that
#: ``C:/`` is no URL), then ``:/``, which is all that is left of ``://`` once the value is made a ``Path``.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def url_given(path: str | Path) -> str | None:
    """The URL that ``path`` is (``https://…``, ``s3://…``) when it names no file, else None. ``Path("https://x/y")``
    has already lost one slash (``https:/x/y``); both spellings are recognised and the URL is given back with
    ``://``, to be shown as the user wrote it."""
    text = str(path)
    m = _URL.match(text)
    if m is None or os.path.lexists(text):
        return None
    return text if text[m.end():].startswith("/") else text[:m.end()] + "/" + text[m.end():]


#: What a URL given where a file is read is told (after the URL): only local files are read.
URL_NOT_READ = "is a URL; only local files are read: download it first and give the downloaded file's path"


def unset_variables(value: str | Path) -> list[str]:
    """The environment variables ``value`` names (``$NAME`` or ``${NAME}``) that are not set, which
    :func:`os.path.expandvars` leaves in the path as they are (the path then names a folder called ``$NAME``)."""
    return [m.group(1) or m.group(2) for m in re.finditer(r"\$(?:\{(\w+)\}|(\w+))", os.fspath(value))
            if (m.group(1) or m.group(2)) not in os.environ]


def url_path_problem(value: str | Path, either: bool = False) -> str | None:
    """``"… is a URL; …"`` for a path field given a URL (:func:`url_given`), naming the file-system path a
    ``file://`` URL stands for; else None. ``either``: the path may be one that is written (a command's ``--out``),
    so the answer does not say to download it."""
    url = url_given(value)
    if url is None:
        return None
    if url.lower().startswith("file://"):
        from urllib.parse import unquote, urlparse

        return (f"{url} is a URL; give the file-system path it names, {unquote(urlparse(url).path)}")
    return (f"{url} is a URL; aniso reads and writes files on this machine only: give a path here" if either else
            f"{url} {URL_NOT_READ}")


#: How a Git LFS pointer file begins (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md): what a clone made
#: without git-lfs holds in place of each large file.
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def lfs_pointer(path: str | Path) -> str | None:
    """``"is a Git LFS pointer … not the file itself …"`` when the regular file ``path`` is a Git LFS pointer (a short
    text naming the object a clone without git-lfs did not fetch), else None. Reads at most 1 KiB of a file of at most
    1 KiB (pointers are about 130 bytes); never opens anything but a regular file."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 1024:
            return None
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    if not head.startswith(_LFS_POINTER):
        return None
    size = re.search(rb"^size (\d+)$", head, re.MULTILINE)
    of = f" of a {int(size.group(1)):,}-byte file" if size else ""
    return (f"is a Git LFS pointer{of}, not the file itself (a clone made without git-lfs): run git lfs pull in "
            "its repository, or download the file")


def not_a_regular_file(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as an input file, or None: it does not exist, is a folder, or is no regular file
    (a FIFO or pipe, which would block or be read once only, a device, a socket). Checked with ``os.stat``, which
    never blocks (opening a FIFO does)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if url_given(path) is not None:
            return URL_NOT_READ
        stripped = str(path).strip()
        if stripped and stripped != str(path) and os.path.exists(stripped):  # 'c.txt\r' from a file of CRLF lines
            return (f"does not exist: its name, {str(path)!r}, has blanks or a line end at its ends, and "
                    f"{stripped} exists (a value read from a file with Windows line ends?)")
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "is a folder; it must name a text file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO or pipe, not a regular file (it would block or be read once only); save it to a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    return None


def is_utf16(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) is UTF-16 text: a UTF-16 byte-order mark, or, without one, NUL bytes
    in one byte position of each pair (the high byte of Latin characters) and not in the other. A file of NUL bytes
    only is binary, not UTF-16."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    if len(head) < 4:
        return False
    even, odd = head[0::2], head[1::2]
    zeros = (even.count(0) / len(even), odd.count(0) / len(odd))
    return max(zeros) > 0.5 and min(zeros) < 0.1


def wide_unicode(head: bytes) -> tuple[str, str] | None:
    """Which wide Unicode encoding ``head`` (a file's first bytes) is in, as (what to call it, the name ``iconv -f``
    takes to convert it), or None for none: UTF-32 or UTF-16 with a byte-order mark (``UTF-32``/``UTF-16``: iconv
    reads the mark), or without one (``UTF-32LE``/``UTF-32BE``: three NUL bytes beside each Latin letter, in every
    4-byte unit's last bytes for little-endian; ``UTF-16LE``/``UTF-16BE``: :func:`is_utf16`). UTF-32-LE's mark
    (``FF FE 00 00``) begins with UTF-16-LE's (``FF FE``): it is checked first."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 (with its byte-order mark)", "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 (with its byte-order mark)", "UTF-16"
    units = head[: len(head) // 4 * 4]
    if len(units) >= 8:
        zeros = [units[i::4].count(0) / (len(units) // 4) for i in range(4)]
        for order, letter, high in (("LE", 0, (2, 3)), ("BE", 3, (0, 1))):
            if zeros[letter] < 0.1 and min(zeros[i] for i in high) > 0.9:  # no code point is above U+10FFFF
                try:
                    units.decode(f"utf-32-{order.lower()}")
                except UnicodeDecodeError:
                    continue
                return f"UTF-32{order} (no byte-order mark: three NUL bytes beside each Latin letter)", f"UTF-32{order}"
    if is_utf16(head):
        order = "LE" if head[1::2].count(0) > head[0::2].count(0) else "BE"
        return f"UTF-16{order} (no byte-order mark: a NUL byte beside each Latin letter)", f"UTF-16{order}"
    return None


def binary_kind(head: bytes) -> str | None:
    """What binary content ``head`` (a file's first bytes) begins with, in words (``"gzip-compressed"``, ...), or
    None for none this knows."""
    return next((name for magic, name in _COMPRESSED if head.startswith(magic)), None)


def warn_as_file(shown: str, message: str, category: type[Warning], module: str | None = None) -> None:
    """Warn ``message`` shown as the line of ``shown`` (a file or a model's id: ``"SHOWN:0: Category: message"``),
    with no line of the suite's source under it. The warning's formatter looks that line up with linecache, which
    would open and read a file of that name (and block on a FIFO, read a link to /dev/zero for ever): ``shown`` is
    entered in linecache as holding no lines. ``module``: the module the warning filters match (default: derived
    from ``shown``, as for any file; an explicit None would make ``warnings`` drop the warning)."""
    import linecache
    import warnings

    linecache.cache[shown] = (0, None, [], shown)
    warnings.warn_explicit(message, category, shown, 0, **({"module": module} if module is not None else {}))


def unwritable_path(path: str, how: str) -> str | None:
    """Why a path that pytest writes (``--junitxml``, ``--log-file``, ``--basetemp``, …) could not be written as
    ``how`` says (``"file"``, ``"file, made"``: pytest makes its missing folders, ``"folder"``, ``"folder, made"``),
    or None when it can: an existing file must take a write (a write of no bytes, which leaves a file as it is and
    which /dev/full refuses; a pipe nobody reads refuses it too); otherwise the nearest folder that exists on its way
    (or its own folder, where pytest makes none) must be a folder in which a probe file can be written and removed
    (nothing is left behind, nothing created); a file must not name a folder. One line, for the caller to prefix."""
    import tempfile

    target = Path(os.path.abspath(os.path.expanduser(os.path.expandvars(path))))
    if how.startswith("file") and target.is_dir():
        return f"{target} is a folder; name a file"
    if how.startswith("file") and os.path.lexists(target) and target.exists():
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
            try:
                os.write(fd, b"")
            finally:
                os.close(fd)
        except OSError as exc:
            return f"cannot write {target} ({exc.strerror or exc})"
        return None
    folder = target.parent if how != "folder, made" else target
    if how.endswith("made"):
        while not os.path.lexists(folder) and folder != folder.parent:
            folder = folder.parent
    if not os.path.lexists(folder):
        return f"its folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is {'a link to nothing' if not folder.exists() else 'a file'}, not a folder"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".aniso-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {folder} ({exc.strerror or exc})"
    return None
