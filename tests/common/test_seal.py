"""Seal keys and seals (:mod:`aniso.common.seal`)."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, strategies as st

from aniso.common.seal import SealKeyError, load_key, results_key_path, seal, verify


def test_a_key_is_made_once_owner_only_and_read_back(tmp_path):
    path = tmp_path / "sub" / "seal.key"
    key = load_key(path)
    assert len(key) == 32 and load_key(path) == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["seal.key"]  # no temporary file left


def test_processes_racing_to_make_a_key_all_read_the_first_one(tmp_path):
    path = tmp_path / "seal.key"
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: load_key(path), range(32)))
    assert len(keys) == 1


@pytest.mark.parametrize("bad", ["short", "link", "folder", "missing"])
def test_a_key_that_is_no_key_is_refused_naming_the_file(tmp_path, bad):
    path = tmp_path / "seal.key"
    if bad == "short":
        path.write_bytes(b"x" * 5)
    elif bad == "link":
        (tmp_path / "other").write_bytes(b"x" * 32)
        path.symlink_to(tmp_path / "other")
    elif bad == "folder":
        path.mkdir()
    with pytest.raises(SealKeyError, match=str(path)):
        load_key(path, create=bad != "missing")


def test_a_folder_that_cannot_be_written_is_named(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")  # the CI runner is not root
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(SealKeyError, match="cannot write a seal key"):
            load_key(tmp_path / "seal.key")
    finally:
        tmp_path.chmod(0o700)


def test_the_results_key_lives_in_the_users_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert results_key_path() == tmp_path / "aniso" / "seal.key"


@given(st.text(), st.text(min_size=1))
def test_a_seal_verifies_its_text_only_under_its_key(text, other):
    key, key2 = b"a" * 32, b"b" * 32
    mac = seal(key, text)
    assert verify(key, text, mac)
    assert not verify(key2, text, mac)
    assert not verify(key, text + other, mac)
    assert not verify(key, text, None) and not verify(key, text, mac.upper() + "0")
