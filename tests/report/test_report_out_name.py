"""The report is an HTML page: `aniso report R --out r.pdf` (and `ClaimResults.report("r.pdf")`) is refused in one
line naming --out (the API's ``path``), nothing written; ``.html`` and ``.htm`` in any case are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main


def _results_file(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


@pytest.mark.parametrize("name, said", [("r.pdf", "its name ends in '.pdf'"), ("r.txt", "its name ends in '.txt'"),
                                        ("report", "its name has no ending")])
def test_report_out_not_named_html_is_refused_naming_out(tmp_path, capsys, name, said):
    results = _results_file(tmp_path)
    out = tmp_path / name
    assert main(["report", str(results), "--out", str(out)]) == 2
    printed, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"aniso report: --out {out}: {said}"), err
    assert "HTML" in lines[0] and ".html" in lines[0] and "Traceback" not in printed + err
    assert not out.exists()


@pytest.mark.parametrize("name", ["r.html", "R.HTML", "r.htm", ".html"])
def test_report_out_named_html_or_htm_is_written(tmp_path, capsys, name):
    results = _results_file(tmp_path)
    out = tmp_path / name
    assert main(["report", str(results), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    capsys.readouterr()


def test_claim_results_report_to_a_path_not_named_html_is_refused_naming_path(tmp_path):
    import aniso
    from aniso.judge.results import read_results

    results = _results_file(tmp_path)
    made = aniso.ClaimResults(results, read_results(results), 0, "m")
    with pytest.raises(ValueError, match=r"^path: .*r\.pdf: its name ends in '\.pdf', but the report is an HTML page"):
        made.report(tmp_path / "r.pdf")
    assert not (tmp_path / "r.pdf").exists()
    assert made.report(tmp_path / "r.html").is_file()


def test_a_folder_named_report_html_beside_the_results_asks_for_out(tmp_path, capsys):
    """A folder report.html beside the results: the line said to write report.html/report.html; it now says to pass
    --out FILE.html, and names a file beside the folder, not one inside it."""
    results = _results_file(tmp_path)
    (results.parent / "report.html").mkdir()
    assert main(["report", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "is a folder; pass --out FILE.html to write the report elsewhere (e.g. --out " in err[0], err
    assert "report.html/report.html" not in err[0] and err[0].endswith(f"{results.parent / 'report-run.html'})"), err
    out = tmp_path / "named.html"
    out.mkdir()
    assert main(["report", str(results), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "named.html/report.html" not in err and f"not a folder (e.g. --out {tmp_path / 'named-report.html'})" in err
