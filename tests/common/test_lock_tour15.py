"""A cache entry's ``.lock`` that is a symbolic link or a folder (no lock filelock makes) ended a run in filelock's
OSError traceback: it is moved aside with a warning naming it, and the lock made afresh; a link's target is left
alone."""

from __future__ import annotations

import os

import pytest

from aniso.common.files import exclusive


@pytest.mark.parametrize("kind", ["link", "dangling link", "folder"])
def test_a_lock_that_is_no_lock_file_is_moved_aside_and_the_entry_made(tmp_path, kind):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    entry = tmp_path / "cache" / "0123abcd"
    entry.parent.mkdir()
    lock = tmp_path / "cache" / "0123abcd.lock"
    if kind == "link":
        lock.symlink_to(victim)
    elif kind == "dangling link":
        lock.symlink_to(tmp_path / "nothing")
    else:
        lock.mkdir()
    what = "a folder" if kind == "folder" else "a symbolic link"
    with pytest.warns(RuntimeWarning, match=rf"0123abcd\.lock is {what}, not a lock file aniso makes; moved aside "
                                            r"to 0123abcd\.lock\.corrupt"):
        with exclusive(entry):
            entry.write_text("made")
    assert entry.read_text() == "made"
    assert victim.read_text() == "keep me\n"
    assert os.path.lexists(tmp_path / "cache" / "0123abcd.lock.corrupt")
    assert not lock.is_symlink() and not lock.is_dir()


def test_a_regular_lock_file_left_behind_is_used_without_a_word(tmp_path, recwarn):
    entry = tmp_path / "0123abcd"
    (tmp_path / "0123abcd.lock").write_text("")
    with exclusive(entry):
        entry.write_text("made")
    assert entry.read_text() == "made" and not [w for w in recwarn if "lock" in str(w.message)]
