"""A results file that is compressed, from a newer aniso, with a schema version no aniso wrote, or an HTML report
given in its place: one line saying which, with the advice that fits (not "not UTF-8", not "re-run the claims")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.judge.results import SCHEMA_VERSION, ResultsDocument, provenance, read_results, write_results


def _results_file(tmp_path: Path) -> Path:
    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


def test_a_gzipped_results_file_is_named_as_gzip(tmp_path, capsys):
    results = _results_file(tmp_path)
    packed = tmp_path / "r.json"
    packed.write_bytes(gzip.compress(results.read_bytes()))
    with pytest.raises(ValueError, match=r"r\.json: cannot read results: it is gzip-compressed; decompress it first"):
        read_results(packed)
    assert main(["report", str(packed), "--out", str(tmp_path / "r.html")]) == 2
    assert "gzip-compressed" in capsys.readouterr().err


@pytest.mark.parametrize("version, message", [
    (SCHEMA_VERSION + 1, f"schema version {SCHEMA_VERSION + 1} comes from a newer aniso; this aniso reads "
                         f"{SCHEMA_VERSION}: upgrade aniso to read it"),
    (99999999999999999999999, "schema version 99999999999999999999999 is not a schema version any aniso wrote"),
    (0, "schema version 0 is not a schema version any aniso wrote"),
    (-3, "schema version -3 is not a schema version any aniso wrote"),
], ids=["newer", "absurd", "zero", "negative"])
def test_a_newer_or_impossible_schema_version_is_not_told_to_re_run(tmp_path, version, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": version, "provenance": {}, "results": []}))
    with pytest.raises(ValueError, match=message) as err:
        read_results(path)
    assert "re-run" not in str(err.value)


def test_an_older_schema_version_is_still_told_to_re_run(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION - 1, "provenance": {}, "results": []}))
    with pytest.raises(ValueError, match="re-run the claims"):
        read_results(path)


def test_an_html_report_given_for_results_points_at_the_results_json(tmp_path, capsys):
    results = _results_file(tmp_path)
    assert main(["report", str(results)]) == 0
    report = results.with_name("report.html")
    capsys.readouterr()
    assert main(["report", str(report), "--out", str(tmp_path / "again.html")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "that is an HTML report" in lines[0] and f"beside it ({results})" in lines[0], lines
