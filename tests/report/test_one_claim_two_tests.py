"""Two tests of one claim on one model (a claims folder of one's own beside the suite's, as the suite itself measures
X.attention-sink on a pretrained decoder with checkpoints in two tests): each result names its test, in the verdict
table and in ``aniso diff``, so that two rows of one claim × model, or a second test's row added, do not read as the
claim itself measured twice or added. A row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

from aniso.judge.results import ClaimResult, ResultsDocument, provenance
from aniso.report.diff import diff_results, format_diff
from aniso.session import verdict_table

ROOT = Path(__file__).resolve().parents[2]
CLAIM = "G.token-nlp-anisotropic"


def _result(test: str, value: float, model: str | None = "m") -> ClaimResult:
    return ClaimResult(claim_id=CLAIM, paper="G", section="§3", figure="Fig. 1", statement="s", model_id=model,
                       test=test, verdict="holds", measured={"max_avg_cos": value})


ORIGINAL = "my5/test_godey_pretrained.py::test_token_nlp_anisotropic[m]"
SECOND = "my5/test_dup.py::test_token_nlp_anisotropic_again[m]"


def test_the_verdict_table_names_the_test_of_each_row_of_a_shared_claim_and_model():
    lines = verdict_table([_result(SECOND, 0.99), _result(ORIGINAL, 0.2665), _result("c/t.py::t[n]", 0.3, "n")], 160)
    claims = [line.split("  ")[0] for line in lines[2:]]
    assert claims == [f"{CLAIM} (test_token_nlp_anisotropic_again[m])",
                      f"{CLAIM} (test_token_nlp_anisotropic[m])",
                      CLAIM]  # alone on its model: no test named


def test_the_verdict_table_names_a_shared_claim_as_shortly_as_tells_the_rows_apart():
    """One test function over parameters: its parameters; one function name in two files: the file too. The
    verdict column is never pushed past the width by a long test name."""
    params = [_result(f"claims/test_godey_pretrained.py::test_isotropic_baseline_math[{d}]", 0.1, None)
              for d in (16, 1024)]
    lines = verdict_table(params, 80)
    assert [line.split("  ")[0] for line in lines[2:]] == [f"{CLAIM} [16]", f"{CLAIM} [1024]"]
    copies = [_result("a/test_one.py::test_t[m]", 0.1), _result("b/test_two.py::test_t[m]", 0.2)]
    lines = verdict_table(copies, 160)
    assert [line.split("  ")[0] for line in lines[2:]] == [f"{CLAIM} (test_one.py::test_t[m])",
                                                           f"{CLAIM} (test_two.py::test_t[m])"]
    long = [_result("a/test_one.py::test_" + "x" * 90 + "[m]", 0.1), _result("b/test_two.py::test_t[m]", 0.2)]
    for line in verdict_table(long, 80)[2:]:
        assert len(line) <= 80 and "holds" in line, line


def test_diff_names_the_second_test_of_a_claim_the_other_run_measured_in_another():
    doc = lambda *rs: ResultsDocument(provenance=provenance(ROOT, {}, None), results=list(rs))  # noqa: E731
    base, dup = doc(_result(ORIGINAL, 0.2665)), doc(_result(ORIGINAL, 0.2665), _result(SECOND, 0.99))
    (added,) = diff_results(base, dup)
    assert added.kind == "added" and added.new == (
        "holds (test test_dup.py::test_token_nlp_anisotropic_again[m]; the other run measured this claim on this "
        "model in test test_godey_pretrained.py::test_token_nlp_anisotropic[m])")
    assert "test_dup.py::test_token_nlp_anisotropic_again[m]" in format_diff([added])
    (removed,) = diff_results(dup, base)
    assert removed.kind == "removed" and removed.old.startswith("holds (test test_dup.py::")
    (alone,) = diff_results(doc(), base)  # a claim the other run did not measure at all: no test named
    assert alone.kind == "added" and alone.new == "holds"
