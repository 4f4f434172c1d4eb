"""Bad results files and report paths given to `aniso report`, `aniso diff` and `aniso record`: one line naming the
file, exit code 2, nothing written over; and `aniso diff` of runs measured on different inputs says so. Each case is
a row of docs/bad-input.md."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.judge.results import (ClaimResult, ResultsDocument, Uncertainty, content_digest, provenance, read_results,
                                 write_results)

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = str(ROOT / "models.yaml")


def _one_line(capsys) -> str:
    """Standard error of a command that must have stopped with one line and no traceback."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso "), err[-3000:]
    assert "Traceback" not in out + err, (out + err)[-3000:]
    return lines[0]


def _result(**kw) -> ClaimResult:
    base = dict(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                model_id="m", test="claims/t.py::t[m]", verdict="holds", inputs="wikitext-103-validation@fc03b3e1",
                measured={"max_avg_cos": 0.27, "q95": 0.08, "avg_cos_per_layer": [0.05, 0.27]},
                uncertainty=Uncertainty(statistic="max avg cos", value=0.27, low=0.25, high=0.29, threshold=0.08,
                                        holds_if=">", n_boot=100))
    return ClaimResult(**(base | kw))


def _written(path: Path, **kw) -> Path:
    """A results file as a run writes it (with its digest), of one result (``kw``: its fields)."""
    write_results(path, ResultsDocument(provenance=provenance(path.parent, {}, None), results=[_result(**kw)]))
    return path


def _edited(path: Path, change, digest: bool = True) -> Path:
    """``path``'s document edited by ``change`` (a function of its JSON data), its digest made to match again (or,
    ``digest`` False, taken out)."""
    data = json.loads(path.read_text())
    change(data)
    data.pop("digest", None)
    if digest:
        data["digest"] = content_digest(data)
    path.write_text(json.dumps(data))
    return path


def test_report_out_that_is_the_results_file_or_no_earlier_report_is_refused_and_nothing_written_over(tmp_path,
                                                                                                      capsys):
    results = _written(tmp_path / "results.json")
    before = results.read_bytes()
    assert main(["report", str(results), "--out", str(results)]) == 2
    assert "is the results file" in _one_line(capsys) and results.read_bytes() == before
    link = tmp_path / "link.html"  # a link to the results file is the results file
    link.symlink_to(results)
    assert main(["report", str(results), "--out", str(link)]) == 2
    assert "is the results file" in _one_line(capsys) and results.read_bytes() == before
    other = _written(tmp_path / "other" / "results.json")  # another run's results: never written over
    kept = other.read_bytes()
    assert main(["report", str(results), "--out", str(other)]) == 2
    line = _one_line(capsys)
    assert f"{other} exists and is not a report aniso wrote" in line and other.read_bytes() == kept
    notes = tmp_path / "notes.html"
    notes.write_text("<html>my notes</html>")
    assert main(["report", str(results), "--out", str(notes)]) == 2
    assert "not a report aniso wrote" in _one_line(capsys) and notes.read_text() == "<html>my notes</html>"
    page = tmp_path / "page.html"  # an earlier report (or an empty file) is written anew
    assert main(["report", str(results), "--out", str(page)]) == 0
    assert main(["report", str(results), "--out", str(page)]) == 0
    (tmp_path / "empty.html").touch()
    assert main(["report", str(results), "--out", str(tmp_path / "empty.html")]) == 0
    assert (tmp_path / "empty.html").read_text().startswith("<!DOCTYPE html>")
    capsys.readouterr()


def test_report_out_through_a_file_names_the_file_that_is_no_folder(tmp_path, capsys):
    results = _written(tmp_path / "results.json")
    (tmp_path / "one.txt").write_text("x")
    assert main(["report", str(results), "--out", str(tmp_path / "one.txt" / "deeper" / "r.html")]) == 2
    line = _one_line(capsys)
    assert f"{tmp_path / 'one.txt'} is a file, not a folder" in line and "File exists" not in line, line
    assert (tmp_path / "one.txt").read_text() == "x"


def test_a_results_file_without_its_digest_is_refused_by_report_diff_and_record(tmp_path, capsys):
    good = _written(tmp_path / "good" / "results.json")
    bare = _edited(_written(tmp_path / "bare" / "results.json"), lambda d: d["results"][0].update(
        verdict="does not hold", uncertainty=dict(d["results"][0]["uncertainty"], value=0.05, low=0.03, high=0.07)),
        digest=False)
    for argv in (["report", str(bare)], ["diff", str(good), str(bare)], ["diff", str(bare), str(good)],
                 ["record", str(bare), "--registry", REGISTRY, "--dry-run"]):
        assert main(argv) == 2, argv
        line = _one_line(capsys)
        assert f"{bare}: no digest" in line and "not written by a run" in line and "edited" in line, line
    assert not bare.with_name("report.html").exists()
    with pytest.raises(ValueError, match="no digest"):
        read_results(bare)
    assert read_results(bare, require_digest=False).results[0].verdict == "does not hold"  # opt-out, by hand only


def test_nan_infinity_and_cosines_outside_their_range_are_refused(tmp_path, capsys):
    nan = _written(tmp_path / "nan" / "results.json")
    nan.write_text(nan.read_text().replace('"max_avg_cos": 0.27', '"max_avg_cos": NaN', 1))
    assert main(["report", str(nan)]) == 2
    assert "holds the number NaN, which a run never writes" in _one_line(capsys)
    inf = _written(tmp_path / "inf" / "results.json")  # even with a digest made to match
    _edited(inf, lambda d: d["results"][0]["uncertainty"].update(value=float("-inf")))
    assert main(["report", str(inf)]) == 2
    assert "holds the number -Infinity" in _one_line(capsys)
    big = _edited(_written(tmp_path / "big" / "results.json"),
                  lambda d: d["results"][0]["measured"].update(avg_cos_per_layer=[5.0, -3.0, 1e308]))
    assert main(["diff", str(big), str(big)]) == 2
    line = _one_line(capsys)
    assert "measured avg_cos_per_layer holds 5.0, but an average cosine lies in [-1, 1]" in line, line
    layer = _written(tmp_path / "layer" / "results.json")

    def _layers(d):
        d["models"] = {"m": {"layer_names": ["0"], "layers": [{"mean_cosine": 1e308}], "meta": {}}}

    _edited(layer, _layers)
    with pytest.raises(ValueError, match=r"models\.m\.layers\[0\]\.mean_cosine holds 1e\+308"):
        read_results(layer)
    ok = _edited(_written(tmp_path / "ok" / "results.json"),  # rounding past 1 and other numbers are no cosines
                 lambda d: d["results"][0]["measured"].update(max_avg_cos=1.0000001, ratio=5.0, d=384, q95=0.08395443873957387,
                                                              avg_cos_per_layer=[0.05, 1.0000001]))
    assert read_results(ok).results[0].measured["ratio"] == 5.0


@pytest.mark.parametrize("version, said", [("4", "the string '4'"), (4.0, "4.0 (float)"), (True, "True (bool)")])
def test_a_schema_version_that_is_no_integer_is_named_as_such(tmp_path, capsys, version, said):
    path = _edited(_written(tmp_path / "results.json"), lambda d: d.update(schema_version=version))
    assert main(["report", str(path)]) == 2
    assert _one_line(capsys).endswith(f"results.json: schema_version must be an integer, got {said}")


def test_diff_of_runs_on_different_inputs_says_so_in_one_line(tmp_path, capsys):
    old = _written(tmp_path / "old" / "results.json")
    new = _written(tmp_path / "new" / "results.json", inputs="local-corpus@0123456789abcdef")
    assert main(["diff", str(old), str(new)]) == 0  # the exit code of the changes alone (none)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].endswith("no verdict or number changed")
    notes = [line for line in out if "inputs differ" in line]
    assert notes == [out[-1]] and ("inputs differ: wikitext-103-validation@fc03b3e1 -> local-corpus@0123456789abcdef "
                                   "(1 result(s): G.token-nlp-anisotropic on m)") in out[-1], out
    flipped = _written(tmp_path / "flipped" / "results.json", inputs="local-corpus@0123456789abcdef",
                       verdict="does not hold", uncertainty=Uncertainty(statistic="max avg cos", value=0.05, low=0.03,
                                                                        high=0.07, threshold=0.08, holds_if=">",
                                                                        n_boot=100))
    assert main(["diff", str(old), str(flipped)]) == 1  # a verdict changed: exit 1, as on the same inputs
    out = capsys.readouterr().out
    assert "1 verdict" in out and out.count("inputs differ") == 1
    assert main(["diff", str(old), str(old)]) == 0
    assert "inputs differ" not in capsys.readouterr().out


def test_a_results_file_that_is_a_device_or_too_large_is_refused_without_reading_it(tmp_path, capsys, monkeypatch):
    import aniso.judge.results as results_module

    good = _written(tmp_path / "good" / "results.json")
    zero = tmp_path / "z.json"
    zero.symlink_to("/dev/zero")
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for path, said in ((zero, "is a device, not a regular file"), (fifo, "is a FIFO or pipe, not a regular file")):
        for argv in (["record", str(path), "--registry", REGISTRY, "--dry-run"], ["report", str(path)],
                     ["diff", str(good), str(path)]):
            start = time.monotonic()
            assert main(argv) == 2, argv
            assert f"{path} {said}" in _one_line(capsys) and time.monotonic() - start < 10
    monkeypatch.setattr(results_module, "MAX_RESULTS_BYTES", 1000)
    assert main(["diff", str(good), str(good)]) == 2
    line = _one_line(capsys)
    assert str(good) in line and "larger than the 1,000 bytes a results file is read up to" in line, line


@pytest.mark.parametrize("encoding, named, iconv", [("utf-16", "UTF-16 (with its byte-order mark)", "UTF-16"),
                                                     ("utf-16-le", "UTF-16LE (no byte-order mark", "UTF-16LE"),
                                                     ("utf-32", "UTF-32 (with its byte-order mark)", "UTF-32"),
                                                     ("utf-32-le", "UTF-32LE (no byte-order mark", "UTF-32LE")])
def test_a_results_file_saved_as_utf16_is_named_as_such(tmp_path, capsys, encoding, named, iconv):
    """A results.json re-saved by an editor as UTF-16 or UTF-32 (with its byte-order mark, or without): one line
    naming the encoding and how to convert it (UTF-32 was called UTF-16, whose iconv garbles it), through report,
    diff and record, exit 2."""
    good = _written(tmp_path / "good" / "results.json")
    wide = tmp_path / "wide" / "results.json"
    wide.parent.mkdir()
    wide.write_text(good.read_text(), encoding=encoding)
    for argv in (["report", str(wide)], ["diff", str(good), str(wide)], ["record", str(wide), "--registry", REGISTRY,
                                                                           "--dry-run"]):
        assert main(argv) == 2, argv
        line = _one_line(capsys)
        assert f"{wide}: cannot read results: it is {named}" in line and f"iconv -f {iconv} -t UTF-8" in line, line


def test_a_results_file_that_contradicts_itself_is_refused_by_report_diff_and_record(tmp_path, capsys):
    """A verdict its own deciding statistic contradicts ("holds" with max avg cos below the threshold), its digest
    recomputed to match: refused in one line by report, diff and record, exit 2; no report written."""
    good = _written(tmp_path / "good" / "results.json")
    forged = _edited(_written(tmp_path / "forged" / "results.json"), lambda d: d["results"][0].update(
        uncertainty=dict(d["results"][0]["uncertainty"], value=0.01, low=0.0, high=0.02)))
    for argv in (["report", str(forged)], ["diff", str(good), str(forged)],
                 ["record", str(forged), "--registry", REGISTRY, "--dry-run"]):
        assert main(argv) == 2, argv
        line = _one_line(capsys)
        assert (f"{forged}: results[0] (G.token-nlp-anisotropic, m): verdict 'holds', but its deciding statistic "
                "max avg cos = 0.01 does not satisfy the rule > 0.08") in line, line
    assert not forged.with_name("report.html").exists()


def test_report_out_that_is_a_link_another_runs_report_or_a_folder_with_a_slash_is_refused(tmp_path, capsys):
    """`--out /dev/stdout` replaced that link with a file; `--out OTHER-RUN/report.html` wrote this run's report over
    another run's; `--out new/` wrote a file named ``new``. Each is one line, nothing written."""
    results = _written(tmp_path / "a" / "results.json")
    target = tmp_path / "elsewhere.html"
    target.write_text("")
    link = tmp_path / "stdout-like"
    link.symlink_to(target)
    assert main(["report", str(results), "--out", str(link)]) == 2
    assert "is a symbolic link" in _one_line(capsys) and link.is_symlink() and target.read_text() == ""
    other = _written(tmp_path / "b" / "results.json")
    assert main(["report", str(other)]) == 0  # the other run's own report, beside its results
    capsys.readouterr()
    page = other.with_name("report.html").read_text()
    assert main(["report", str(results), "--out", str(other.with_name("report.html"))]) == 2
    assert "is the report of the run beside it" in _one_line(capsys)
    assert other.with_name("report.html").read_text() == page
    assert main(["report", str(results), "--out", str(tmp_path / "new") + "/"]) == 2
    assert "names a folder" in _one_line(capsys) and not (tmp_path / "new").exists()
