"""The CTranslate2 model.bin reader: round trip, and bad files named."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from aniso.sources.ctranslate2_reader import read_ct2_model


def _ct2_string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _write_ct2(path: Path, variables: dict[str, np.ndarray], aliases=(), version: int = 6) -> None:
    ids = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
           np.dtype(np.float16): 4}
    out = struct.pack("<I", version) + _ct2_string("TestSpec") + struct.pack("<I", 1)
    out += struct.pack("<I", len(variables))
    for name, arr in variables.items():
        out += _ct2_string(name) + struct.pack("<B", arr.ndim) + struct.pack(f"<{arr.ndim}I", *arr.shape)
        out += struct.pack("<B", ids[arr.dtype]) + struct.pack("<I", arr.nbytes) + arr.tobytes()
    out += struct.pack("<I", len(aliases))
    for alias, target in aliases:
        out += _ct2_string(alias) + _ct2_string(target)
    path.write_bytes(out)


def test_ct2_reader_round_trip(tmp_path):
    v = {"a/weight": np.arange(6, dtype=np.float16).reshape(2, 3), "a/n": np.array(4, np.int16),
         "b": np.linspace(0, 1, 5, dtype=np.float32)}
    _write_ct2(tmp_path / "model.bin", v, aliases=[("c", "b")])
    m = read_ct2_model(tmp_path / "model.bin")
    assert (m.spec, m.revision, m.binary_version) == ("TestSpec", 1, 6)
    for k, arr in v.items():
        assert m.variables[k].dtype == arr.dtype and np.array_equal(m.variables[k], arr)
    assert m.variables["c"] is m.variables["b"]


def test_ct2_reader_names_the_file_on_bad_input(tmp_path):
    path = tmp_path / "model.bin"
    _write_ct2(path, {"x": np.zeros(3, np.float32)}, version=2)
    with pytest.raises(ValueError, match=r"model\.bin.*version 2"):
        read_ct2_model(path)
    _write_ct2(path, {"x": np.zeros(3, np.float32)})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"model\.bin: truncated"):
        read_ct2_model(path)
