"""The console summary of a claims run (:meth:`aniso.session.AnisoSession.summary_lines`): within the terminal's
width, one line per kind of verdict, skip reasons grouped with their counts, twins never findings, new findings on
a model without records named with the command that records them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aniso.common.settings import Settings
from aniso.judge.results import ClaimResult, Uncertainty, verdict_counts
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import AnisoSession, fit, verdict_table


def _entry(ident: str, **extra) -> ModelEntry:
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "hub", "repo": f"org/{ident}"}, modality="text",
                                          granularity="subword", architecture="transformer", role="encoder",
                                          family="bert", **extra))


def _result(model: str | None, verdict: str = "holds", claim: str = "G.drift-correlation-spearman", **extra):
    return ClaimResult(claim_id=claim, paper="G", section="§3.3", figure="Fig. 3", statement="s", model_id=model,
                       test=f"claims/t.py::t[{model}-{claim}]", verdict=verdict,
                       measured={"coefficient": 0.8929, "p_value": 0.0123, "n_layers": 7,
                                 "a_rather_long_statistic_name": 123.456789, "list": [1, 2]}, p_value=0.0123,
                       **extra)


def _session(tmp_path, entries, results) -> AnisoSession:
    settings = Settings(models=entries[0].id, report_dir=str(tmp_path / "reports"), cache_dir=str(tmp_path / "c"))
    session = AnisoSession.start(settings, Registry(entries), tmp_path)
    session.results = results
    return session


def _mixed(tmp_path) -> AnisoSession:
    fragile = Uncertainty(statistic="highest layer avg cos", value=0.19, low=0.15, high=0.23, threshold=0.2,
                          holds_if="<", holds_share=0.6, fragile=True, n_boot=100)
    long_reason = ("not applicable to this run: needs a decoder to compare with, and the model set 'x' has none "
                   "(outside it: gpt2, opt-125m, opt-350m, opt-1.3b, …; add one to --aniso-models)")
    results = [_result("a-model-with-a-long-registry-id"), _result(None, claim="G.isotropic-baseline"),
               _result("a-model-with-a-long-registry-id", "does not hold", claim="G.token-nlp-anisotropic"),
               _result("a-model-with-a-long-registry-id", "holds", claim="G.cnn-mostly-isotropic",
                       uncertainty=fragile, differs_from_record="recorded 'does not hold' on other inputs"),
               _result("a-model-with-a-long-registry-id", "underpowered at this size", claim="R.encoder-flat-profile"),
               *[_result("a-model-with-a-long-registry-id", "skipped", claim=f"X.c{i}", reason=long_reason)
                 for i in range(3)],
               _result("a-model-with-a-long-registry-id", "skipped", claim="X.other", reason="no final norm"),
               _result("other", "error", claim="X.broken", reason="ZeroDivisionError: division by zero")]
    return _session(tmp_path, [_entry("a-model-with-a-long-registry-id"), _entry("other")], results)


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_every_line_fits_the_width_and_each_kind_has_one_line(tmp_path, width):
    lines = [line for _, line in _mixed(tmp_path).summary_lines(width)]
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    counts = {kind: [line for line in lines if re.match(rf"^\s*\d+ {word}", line)]
              for kind, word in (("holds", "hold$"), ("findings", "finding"), ("underpowered", "underpowered"),
                                 ("fragile", "fragile"), ("skipped", "skipped$"),
                                 ("error", "error"))}
    assert {k: len(v) for k, v in counts.items()} == dict.fromkeys(counts, 1), text
    assert counts["holds"][0].split() == ["2", "hold"] and counts["skipped"][0].split() == ["4", "skipped"]
    # skip reasons grouped, with their counts, most frequent first
    assert re.search(r"^\s+3 x not applicable to this run", text, re.M) and re.search(r"^\s+1 x no final norm",
                                                                                         text, re.M)
    assert text.index("3 x not applicable") < text.index("1 x no final norm")
    assert "SKIPPED" not in text and "got empty parameter set" not in text
    assert re.search(r"^\s+1 x ZeroDivisionError: division by zero", text, re.M)
    assert text.index("errors, by reason") < text.index("skipped, by reason")


def test_the_table_keeps_claim_model_and_verdict_whole_and_shows_the_adjusted_p(tmp_path):
    results = [_result("m", "does not hold", claim="G.drift-correlation-spearman"), _result(None)]
    adjusted = [r.model_copy() for r in results]
    for r in adjusted:  # the lead field p_adjusted, where the run adjusted the p-values
        r.__dict__["p_adjusted"] = 0.0369
    for rows, heading in ((results, "p "), (adjusted, "p (adjusted)")):
        lines = verdict_table(rows, 100)
        assert all(len(line) <= 100 for line in lines)
        assert heading in lines[0] and lines[1].startswith("-")
        assert "G.drift-correlation-spearman  m " in lines[2] and "does not hold" in lines[2]
        assert ("0.0123 (adj. 0.0369)" in lines[2]) == (rows is adjusted)
        assert "p_value=" not in "\n".join(lines)  # in its own column, not repeated among the numbers


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=400),
       width=st.integers(20, 200))
def test_fit_wraps_every_line_within_the_width_and_keeps_every_word(text, width):
    """Every line within the width, except a word longer than the width (a path, a command), which stands whole on
    a line of its own so that it can be copied; no word is lost or cut."""
    lines = fit(text, width)
    assert all(len(line) <= width or len(line.split()) == 1 for line in lines)
    assert "".join("".join(lines).split()) == "".join(text.split())
    assert [w for line in lines for w in line.split()] == text.split()


def test_a_twin_run_counts_no_findings():
    """A twin's verdicts (random weights) say the code path runs: never findings, never holds."""
    twin = "twin: random weights, code path only"
    results = [_result("gpt2", "holds", twin=twin), _result("gpt2", "does not hold", twin=twin),
               _result("gpt2", "skipped", twin=twin, reason="r")]
    counts = verdict_counts(results)
    assert counts["findings"] == 0 and counts["holds"] == 0 and counts["twin"] == 2 and counts["skipped"] == 1


def test_twin_summary_line_names_twin_verdicts_not_findings(tmp_path):
    twin = "twin: random weights, code path only"
    session = _session(tmp_path, [_entry("gpt2")], [_result("gpt2", "does not hold", twin=twin)])
    text = "\n".join(line for _, line in session.summary_lines(100))
    assert "1 twin verdict(s), code path only" in text and "finding" not in text.replace("never findings", "")


def test_claims_that_do_not_hold_on_a_model_without_records_are_new_findings_with_the_record_command(tmp_path):
    """A model detected for the run (the registry has never measured it): its claims that do not hold are new
    findings; a registry row, with records or without (= holds expected), is not."""
    recorded = _entry("recorded", expected={"G.token-nlp-anisotropic": {"verdict": "does-not-hold",
                                                                         "reason": "recorded by hand"}})
    results = [_result("mine", "does not hold"), _result("mine", "does not hold", claim="G.token-nlp-anisotropic"),
               _result("mine", "holds", claim="G.isotropic-baseline"), _result("recorded", "does not hold"),
               _result("plain", "does not hold")]
    session = _session(tmp_path, [_entry("mine", detected=True), recorded, _entry("plain")], results)
    session.report_path = tmp_path / "reports" / "run-1" / "report.html"
    lines = [line for _, line in session.summary_lines(400)]
    new = [line for line in lines if "which has no record" in line]
    assert new == [f"2 claim(s) do not hold on mine, which has no record: new findings to look at; record them "
                   f"with: aniso record {tmp_path / 'reports' / 'run-1' / 'results.json'}"]
