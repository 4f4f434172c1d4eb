"""``aniso diff`` says when the two runs measured at other sizes, names the numbers that moved within their
intervals, and says in its first line when two files have no result in common (nothing was compared)."""

from __future__ import annotations

from pathlib import Path

from aniso.cli import main
from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance, write_results

ROOT = Path(__file__).resolve().parents[2]


def _result(value, low, high, model="m", n_items=8, n_vectors=581):
    return ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§2", figure="Fig. 1", statement="s",
                       model_id=model, test=f"claims/x.py::t[{model}]", verdict="holds",
                       measured={"max_avg_cos": value + 0.08}, n_items=n_items, n_vectors=n_vectors,
                       uncertainty=Uncertainty(statistic="max over layers of avg cos - q95(d)", value=value, low=low,
                                               high=high, threshold=0.0, holds_if=">", holds_share=1.0, n_boot=100))


def _write(tmp_path, name, results) -> Path:
    path = tmp_path / name / "results.json"
    path.parent.mkdir(parents=True)
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=results))
    return path


def test_diff_of_runs_at_other_sizes_names_the_sizes_and_the_numbers_that_moved(tmp_path, capsys):
    """8 paragraphs against 10: the deciding number moved within both intervals; once "no verdict or number
    changed" and nothing about the sizes."""
    old = _write(tmp_path, "a", [_result(0.1997, 0.1697, 0.2249)])
    new = _write(tmp_path, "b", [_result(0.1889, 0.1600, 0.2150, n_items=10, n_vectors=717)])
    assert main(["diff", str(old), str(new)]) == 0  # no verdict changed
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].endswith("no verdict or number changed beyond either run's interval"), out
    assert any(line.startswith("numbers moved within both runs' intervals") and "0.1997 -> 0.1889" in line
               and "max_avg_cos moved too" in line for line in out), out
    assert any(line.startswith("sizes or settings differ: G.token-nlp-anisotropic on m: n_items 8 -> 10, "
                               "n_vectors 581 -> 717") for line in out), out


def test_diff_of_equal_runs_still_says_nothing_changed(tmp_path, capsys):
    old = _write(tmp_path, "a", [_result(0.1997, 0.1697, 0.2249)])
    assert main(["diff", str(old), str(old)]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [f"{old} -> {old}: no verdict or number changed"]


def test_diff_of_runs_with_no_result_in_common_says_nothing_was_compared(tmp_path, capsys):
    """One model by its registry id against the same weights as a detected folder: nothing in common, once 'no
    verdict or number changed' first. The exit code stays that of the changes (none), as for other model sets."""
    old = _write(tmp_path, "a", [_result(0.1997, 0.1697, 0.2249, model="all-MiniLM-L6-v2")])
    new = _write(tmp_path, "b", [_result(0.1997, 0.1697, 0.2249, model="space---dir")])
    assert main(["diff", str(old), str(new)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == f"{old} -> {new}: nothing compared: the files have no result (claim, model, test) in common", out
    assert "no verdict or number changed" not in "\n".join(out) and "left aside 1 only in" in out[-1], out
    assert main(["diff", str(old), str(new), "--all"]) == 0  # asked for: listed as removed and added
    assert "1 added, 1 removed" in capsys.readouterr().out


def test_diff_of_files_without_results_says_nothing_was_compared(tmp_path, capsys):
    empty = _write(tmp_path, "a", [])
    assert main(["diff", str(empty), str(empty)]) == 0
    assert capsys.readouterr().out == f"{empty} -> {empty}: nothing compared: neither file holds a result\n"


def test_diff_of_runs_with_other_claims_filters_names_the_filters(tmp_path, capsys):
    """Runs with `--claims G.token-nlp-anisotropic,R.` and `--claims G.token-nlp-anisotropic`: the claim only the
    first selected was listed as removed, and nothing said the filters differ."""
    other = _result(0.1997, 0.1697, 0.2249).model_copy(update={"claim_id": "R.encoder-flat-profile",
                                                               "test": "claims/y.py::t[m]", "verdict": "skipped"})
    paths = []
    for name, claims, results in (("a", "G.token-nlp-anisotropic,R.", [_result(0.1997, 0.1697, 0.2249), other]),
                                  ("b", "G.token-nlp-anisotropic", [_result(0.1997, 0.1697, 0.2249)]),
                                  ("c", "", [_result(0.1997, 0.1697, 0.2249)])):
        paths.append(tmp_path / name / "results.json")
        write_results(paths[-1], ResultsDocument(provenance=provenance(tmp_path, {"claims": claims}, None),
                                                 results=results))
    assert main(["diff", str(paths[0]), str(paths[1]), "--all"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith("| removed") and "R.encoder-flat-profile" in line for line in out), out
    assert ("sizes or settings differ: claims filter 'G.token-nlp-anisotropic,R.' -> 'G.token-nlp-anisotropic' (a "
            "claim only one run selected is listed as added or removed)") in out, out
    assert main(["diff", str(paths[1]), str(paths[2])]) == 0
    out = capsys.readouterr().out
    assert "claims filter 'G.token-nlp-anisotropic' -> every claim" in out, out
    assert main(["diff", str(paths[1]), str(paths[1])]) == 0
    assert "claims filter" not in capsys.readouterr().out
