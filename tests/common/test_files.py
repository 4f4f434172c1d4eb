"""File helpers: the SHA-256 of a file is read once per process, and again when the file changes."""

from __future__ import annotations

import hashlib
import os

from aniso.common import files


def test_sha256_file_reads_a_file_once_and_again_when_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"a" * 3000)
    reads = []
    feed = files._feed
    monkeypatch.setattr(files, "_feed", lambda h, p: reads.append(p) or feed(h, p))
    first = files.sha256_file(path)
    assert first == hashlib.sha256(b"a" * 3000).hexdigest()
    assert files.sha256_file(tmp_path / "." / "weights.bin") == first and len(reads) == 1  # same file: not read again
    path.write_bytes(b"b" * 3000)  # same size, rewritten: a new modification time
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert files.sha256_file(path) == hashlib.sha256(b"b" * 3000).hexdigest() and len(reads) == 2


def test_a_process_waiting_for_a_cache_lock_says_so(tmp_path):
    """A second `aniso stats` waited in silence while the first, stopped (Ctrl-Z), held the entry's lock."""
    import threading

    import pytest

    from aniso.common.files import exclusive

    held, release = threading.Event(), threading.Event()

    def holder():
        with exclusive(tmp_path / "entry"):
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    threading.Timer(0.5, release.set).start()
    with pytest.warns(RuntimeWarning, match=r"waiting for another process that holds .*entry\.lock"):
        with exclusive(tmp_path / "entry", notice_after=0.1):
            pass
    t.join(10)


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    """A file replaced by :func:`files.atomic_write` took a new file's mode (a private 0600 file became 0644); it
    keeps its own now, and a new file still gets a new file's mode."""
    import stat

    path = tmp_path / "private.yaml"
    path.write_text("old\n")
    os.chmod(path, 0o600)
    files.atomic_write(path, lambda tmp: tmp.write_text("new\n"))
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o640)
    files.atomic_write(path, lambda tmp: tmp.write_bytes(b"newer\n"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.yaml"
    files.atomic_write(fresh, lambda tmp: tmp.write_text("x\n"))
    assert stat.S_IMODE(fresh.stat().st_mode) == files.default_file_mode()
