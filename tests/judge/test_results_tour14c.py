"""A results file followed by something else: NUL bytes (a file padded by a crash or a copy) or other data (was
"Extra data: line 516 column 2", where an editor shows nothing). A row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

import pytest


def _results_file(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


def test_nul_bytes_after_the_results_are_named(clean_env, refused_line, tmp_path):
    path = _results_file(tmp_path)
    size = path.stat().st_size
    padded = tmp_path / "nulpad.json"
    padded.write_bytes(path.read_bytes() + b"\0" * 4096)
    for argv in (["report", str(padded), "--out", str(tmp_path / "r.html")], ["diff", str(path), str(padded)]):
        line = refused_line(argv)
        assert f"{padded}: cannot read results: 4,096 NUL byte(s) follow the results document (from byte " in line, line
        assert "Extra data" not in line, line
    from aniso.judge.results import read_results

    with pytest.raises(ValueError, match=rf"from byte {size - 1:,}|from byte {size:,}"):
        read_results(padded)


def test_other_data_after_the_results_is_named(tmp_path):
    from aniso.judge.results import read_results

    path = _results_file(tmp_path)
    doubled = tmp_path / "twice.json"
    doubled.write_bytes(path.read_bytes() + b"\n{\"again\": 1}\n")
    with pytest.raises(ValueError, match=r"bytes of other data follow the results document at byte [0-9,]+ "
                                         r"\(starting '\{\"again\""):
        read_results(doubled)
