"""A run at another seed (another sample of the corpus, other reservoirs) was compared with the registry's records,
measured at the default seed, and failed as "stale"; `aniso record` of its results rewrote the record, after which
every run at the default seed failed as stale (layer_of_max written back as the text '5'). Records hold numbers of
the default seed: a run at another seed does not compare them (``record_check`` says so) and `aniso record` refuses
its results in one line."""

from __future__ import annotations

from aniso.cli import main
from aniso.common.settings import DEFAULT_SEED
from aniso.judge.records import refresh_records
from aniso.judge.results import RecordDrift, ResultsDocument, file_digest, provenance, write_results
from aniso.judge.verdicts import Outcome
from test_cli import _result
from test_record_sizes_stated import ROW, STATED, _conclude
from test_record_tour16 import REGISTRY


def test_a_run_at_another_seed_does_not_compare_the_records_numbers(tmp_path):
    decision, result, message = _conclude(tmp_path, STATED + ROW.format(sizes=""), seed=3)
    assert decision.outcome is Outcome.PASS and result.record_drift == [] and "stale" not in message
    assert result.record_check == ("record's numbers not compared: the registry's records are measured at the default "
                                   f"seed {DEFAULT_SEED}, this run at seed 3"), result.record_check
    decision, result, message = _conclude(tmp_path, STATED + ROW.format(sizes=""), seed=DEFAULT_SEED)
    assert decision.outcome is Outcome.FAIL and "stale" in message  # the default seed: compared, as before


def test_aniso_record_refuses_results_of_another_seed(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    before = registry.read_bytes()
    results = tmp_path / "a" / "results.json"
    r = _result("does not hold", 0.539, 0.5, 0.56)
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {"seed": 3}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (f"aniso record: {results} was measured at seed 3; the registry's records hold numbers "
                           f"measured at the default seed {DEFAULT_SEED}, which the runs compare theirs with: record "
                           "the results of a run without --aniso-seed (ANISO_SEED)"), err
    assert registry.read_bytes() == before


def test_a_layer_label_the_run_reports_as_text_keeps_the_records_number():
    text = ("models:\n- id: m\n  expected:\n    G.token-nlp-anisotropic:\n      verdict: holds\n"
            "      measured: {max_avg_cos: 0.2665, layer_of_max: 5}\n")
    r = _result("holds", 0.2509, 0.5, 0.56).model_copy(update={
        "model_id": "m", "claim_id": "G.token-nlp-anisotropic",
        "expected": {"measured": {"max_avg_cos": 0.2665, "layer_of_max": 5}},
        "measured": {"max_avg_cos": 0.2509, "layer_of_max": "5"},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.2665, measured=0.2509, tolerance="1%")]})
    new, notes = refresh_records(text, [r])
    assert "measured: {max_avg_cos: 0.2509, layer_of_max: 5}" in new, new
    assert notes == ["m G.token-nlp-anisotropic: max_avg_cos 0.2665 -> 0.2509"], notes
