"""Results files with ids no registry holds, text that would drive the terminal, the same test run from two claims
folders, reports over many models, and paths with a NUL byte: through `aniso diff`, `aniso report`, `aniso record` and
the Python API. Each case is a row of docs/bad-input.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aniso.cli import main
from aniso.judge.results import (ClaimResult, ResultsDocument, Uncertainty, content_digest, provenance, read_results,
                                 write_results)
from aniso.report import write_html_report
from aniso.report.diff import diff_results, format_diff

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
                model_id="m", test="claims/test_g.py::test_token[m]", verdict="holds",
                inputs="wikitext-103-validation@fc03b3e1",
                measured={"max_avg_cos": 0.27, "q95": 0.08, "avg_cos_per_layer": [0.05, 0.27]},
                uncertainty=Uncertainty(statistic="max avg cos", value=0.27, low=0.25, high=0.29, threshold=0.08,
                                        holds_if=">", n_boot=100))
    return ClaimResult(**(base | kw))


def _written(path: Path, **kw) -> Path:
    """A results file as a run writes it (with its digest), of one result (``kw``: its fields)."""
    write_results(path, ResultsDocument(provenance=provenance(path.parent, {}, None), results=[_result(**kw)]))
    return path


def _edited(path: Path, change) -> Path:
    """``path``'s document edited by ``change`` (a function of its JSON data), its digest made to match again."""
    data = json.loads(path.read_text())
    change(data)
    data.pop("digest", None)
    data["digest"] = content_digest(data)
    path.write_text(json.dumps(data))
    return path


# D01: the same claim test on the same model, run from claims/ folders in two places, is one result compared.

def test_diff_compares_the_same_test_run_from_claims_folders_in_two_places(tmp_path, capsys):
    here = _written(tmp_path / "a" / "results.json", test="claims/test_g.py::test_token[m]")
    there = _written(tmp_path / "b" / "results.json", test="fx/claims/test_g.py::test_token[m]",
                     verdict="does not hold",
                     uncertainty=Uncertainty(statistic="max avg cos", value=0.05, low=0.03, high=0.07,
                                             threshold=0.08, holds_if=">", n_boot=100))
    assert main(["diff", str(here), str(there)]) == 1  # a changed verdict, for CI
    out = capsys.readouterr().out
    assert "1 verdict" in out and "added" not in out and "removed" not in out, out
    changes = diff_results(read_results(here), read_results(there))
    assert [c.kind for c in changes] == ["verdict", "number"]
    # results of one claim on one model that differ in their parameters stay apart
    other = _written(tmp_path / "c" / "results.json", test="fx/claims/test_g.py::test_token[m-first-excluded]")
    assert sorted(c.kind for c in diff_results(read_results(here), read_results(other))) == ["added", "removed"]


# F02, F03, F05, F12: a claim or model id that no registry holds is refused on read, naming the file and field.

@pytest.mark.parametrize("field, value", [
    ("model_id", "a|b|c"), ("model_id", "x\x1b]0;pwned\x07\x1b[31mRED\x1b[0m"), ("model_id", "abc\u202egnp.exe"),
    ("model_id", ""), ("model_id", "first\nsecond"), ("claim_id", "G.x|y"), ("seeds", ["m", "\x1b[2J"])])
def test_a_results_file_with_an_id_no_registry_holds_is_refused_by_report_diff_and_record(tmp_path, capsys,
                                                                                         field, value):
    good = _written(tmp_path / "good" / "results.json")
    bad = _edited(_written(tmp_path / "bad" / "results.json"), lambda d: d["results"][0].update({field: value}))
    for argv in (["report", str(bad)], ["diff", str(good), str(bad), "--all"], ["diff", str(bad), str(good)],
                 ["record", str(bad), "--registry", REGISTRY, "--dry-run"]):
        assert main(argv) == 2, argv
        line = _one_line(capsys)
        assert f"{bad}: results[0].{field}" in line and "id" in line, line
        assert "\x1b" not in line and "\u202e" not in line and "\x07" not in line, repr(line)
    assert not bad.with_name("report.html").exists()
    with pytest.raises(ValueError, match=rf"results\[0\]\.{field}"):
        read_results(bad)
    with pytest.raises(ValueError, match=rf"results\[0\]\.{field}"):
        write_html_report(bad, bad.with_name("report.html"))


def test_a_results_file_with_a_model_key_no_registry_holds_is_refused(tmp_path, capsys):
    bad = _edited(_written(tmp_path / "results.json"), lambda d: d.update(
        models={"a|b": {"layer_names": [], "layers": [], "meta": {}}}))
    assert main(["report", str(bad)]) == 2
    assert "models (a key) is 'a|b', not a model id" in _one_line(capsys)


# F03, F05: the text of a results file that reaches the terminal has its control and format characters escaped.

def test_diff_escapes_what_would_drive_the_terminal_or_break_the_table(tmp_path, capsys):
    old = _written(tmp_path / "a" / "results.json", uncertainty=Uncertainty(
        statistic="max\x1b]0;pwned\x07 avg|cos\u202e", value=0.27, low=0.25, high=0.29, threshold=0.08,
        holds_if=">", n_boot=100))
    new = _written(tmp_path / "b" / "results.json", uncertainty=Uncertainty(
        statistic="max avg cos", value=0.5, low=0.45, high=0.55, threshold=0.08, holds_if=">", n_boot=100))
    assert main(["diff", str(old), str(new)]) == 0
    out, err = capsys.readouterr()
    assert "1 number" in out, out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, repr(out)
    assert "max\\x1b]0;pwned\\x07 avg\\|cos\\u202e" in out, out
    row = next(line for line in out.splitlines() if line.startswith("| number"))
    assert row.replace("\\|", "").count("|") == 6, row  # five cells, no more
    text = format_diff(diff_results(read_results(old), read_results(new)), "o\x1b[2J", "n")
    assert "\x1b" not in text and "o\\x1b[2J -> n" in text, text


# P16: a path holding a NUL byte is refused naming the parameter (or the file), not as a bare "embedded null byte".

def test_a_path_with_a_nul_byte_is_refused_naming_the_parameter(tmp_path):
    import aniso
    from aniso.api import ClaimResults

    results = _written(tmp_path / "results.json")
    run = ClaimResults(results, read_results(results), 0, "m")
    with pytest.raises(ValueError, match=r"^path: the path .*a\\x00b\.html' holds a NUL byte"):
        run.report(tmp_path / "a\0b.html")
    with pytest.raises(ValueError, match=r"^registry: the path .* holds a NUL byte"):
        aniso.models(registry=str(tmp_path / "a\0b.yaml"))
    with pytest.raises(ValueError, match=r"^claims_dir: the path .* holds a NUL byte"):
        aniso.check("m", claims_dir=str(tmp_path / "a\0b"))
    with pytest.raises(ValueError, match=r"the report file .*a\\x00b\.html' holds a NUL byte"):
        write_html_report(results, tmp_path / "a\0b.html")
    with pytest.raises(ValueError, match=r"a\\x00b\.json': the path holds a NUL byte"):
        read_results(tmp_path / "a\0b.json")


# F06: a report over many models draws bounded figures: legends of at most MAX_LEGEND entries, the p-value figure and
# the layer-wise figures of a bounded number of models, the rest named in the tables.

LAYER = {"dim": 4, "count": 10, "mean_cosine": 0.1, "q95": 0.8, "drift_norm": 1.0, "mean_norm": 2.0,
         "svd_anisotropy": 0.3, "svd_anisotropy_batch_mean": 0.3, "svd_anisotropy_batch_std": 0.01,
         "mean_cosine_sampled": 0.1, "n_svd_batches": 2, "twonn": 2.0, "n_reservoir": 10, "n_zero": 0}
ROW = {"modality": "text", "granularity": "subword", "architecture": "transformer", "role": "encoder",
       "family": "bert"}


def _legends(fig) -> list[list[str]]:
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None] + list(fig.legends)
    return [[t.get_text() for t in leg.get_texts()] for leg in legends]


def test_the_figures_across_many_models_have_bounded_legends(monkeypatch):
    from aniso.report import counter, figures, modalities, overview

    drawn = []
    for module in (modalities, overview, counter):
        monkeypatch.setattr(module, "_png", lambda fig: drawn.append(fig) or "png")
    n = figures.MAX_LEGEND + 25
    models = {f"model-{i:03d}": {"layer_names": ["0", "1", "2"], "layers": [LAYER] * 3, "meta": {},
                                 "entry": dict(ROW)} for i in range(n)}
    registry = {mid: dict(ROW) for mid in models}
    assert modalities.modality_figures(models, registry)
    assert overview.overview_figures(models, registry)
    legends = [texts for fig in drawn for texts in _legends(fig)]
    assert legends and all(len(texts) <= figures.MAX_LEGEND + 2 for texts in legends), [len(t) for t in legends]
    assert any(t.endswith("more (named in the tables)") for texts in legends for t in texts), legends
    assert max(fig.get_size_inches()[1] for fig in drawn) < 12


def test_the_report_draws_the_layer_figures_of_a_bounded_number_of_models(tmp_path, monkeypatch):
    import aniso.report as report
    from aniso.judge.results import ModelLayers

    monkeypatch.setattr(report, "MAX_LAYER_FIGURES", 2)
    models = {f"m{i}": ModelLayers(layer_names=["0", "1"], layers=[LAYER, LAYER], meta={"origin": "o"})
              for i in range(3)}
    doc = ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[_result(model_id=m) for m in models],
                          models=models)
    html = report.render_html(doc)
    assert html.count('<figure id="layers-') == 2, html.count('<figure id="layers-')
    assert "The figures of the first 2 models are drawn; the other 1 models have their tables only" in html


def test_the_p_value_figure_draws_a_bounded_number_of_models_and_says_so(monkeypatch):
    from aniso.report import modalities

    drawn = []
    monkeypatch.setattr(modalities, "_png", lambda fig: drawn.append(fig) or "png")
    monkeypatch.setattr(modalities, "MAX_PVALUE_ROWS", 2)
    results = [_result(claim_id=c, model_id=m, p_value=0.01, test=f"claims/t.py::t[{m}]", uncertainty=None)
               for c in modalities.DRIFT_CLAIMS for m in ("a", "b", "c")]
    [(caption, _)] = modalities.drift_pvalue_figure(results, {}, {})
    assert "the first 2 models of 3" in caption, caption
    assert len(drawn[0].axes[0].get_yticklabels()) == 2
