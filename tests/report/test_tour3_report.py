"""`aniso report` on an --out the system refuses (a file name or a path too long): one line naming --out, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main


def _results_file(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


@pytest.mark.parametrize("tail", ["a" * 300 + ".html", "/".join(["d" * 200] * 25) + "/r.html"],
                         ids=["file-name", "path"])
def test_an_out_name_too_long_is_one_line_naming_out(tmp_path, capsys, tail):
    results = _results_file(tmp_path)
    assert main(["report", str(results), "--out", str(tmp_path / tail)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso report: --out "), err[-2000:]
    assert "File name too long" in lines[0] and len(lines[0]) < 400
    assert "Traceback" not in out + err


def test_write_html_report_refuses_a_name_too_long_with_a_value_error(tmp_path):
    from aniso.report import write_html_report

    results = _results_file(tmp_path)
    with pytest.raises(ValueError, match=r"the report file .*\(File name too long\); name another file"):
        write_html_report(results, tmp_path / ("a" * 300 + ".html"))
