"""The results document: typed, versioned, written and read back; bad files named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aniso.judge.results import (SCHEMA_VERSION, ClaimResult, ResultsDocument, provenance, read_results,
                                  write_results)


def _result(**kw) -> ClaimResult:
    base = dict(claim_id="G.drift-correlation-pearson", paper="G", section="App. A", figure="Fig. 16",
                statement="s", model_id="m", test="t::m", verdict="holds", measured={"p_value": 0.01, "nan": float("nan")},
                p_value=0.01)
    return ClaimResult(**(base | kw))


def test_round_trip_keeps_types_and_version(tmp_path):
    doc = ResultsDocument(provenance=provenance(tmp_path, {"seed": 0}, None), results=[_result()])
    path = tmp_path / "results.json"
    write_results(path, doc)
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == SCHEMA_VERSION
    assert raw["results"][0]["measured"]["nan"] is None  # NaN is written as null
    back = read_results(path)
    assert back.results[0].p_value == 0.01 and back.results[0].verdict == "holds"
    assert back.provenance.versions["torch"] and back.provenance.settings == {"seed": 0}


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read results"),
    ("[]", "not a results document"),
    ("{}", "schema version None"),
    (json.dumps({"schema_version": SCHEMA_VERSION, "provenance": {}, "results": []}), "provenance.time"),
    (json.dumps({"schema_version": SCHEMA_VERSION + 1}), f"schema version {SCHEMA_VERSION + 1}"),
])
def test_bad_files_are_named(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as err:
        read_results(path)
    assert "bad.json" in str(err.value)


def test_unknown_fields_are_rejected():
    with pytest.raises(ValueError, match="corpus"):
        _result(corpus="renamed to inputs_label")


def test_registry_row_carries_what_a_model_stands_for():
    from aniso.judge.results import RegistryRow
    from aniso.registry.entries import load_registry

    reg = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")
    row = RegistryRow.of(reg.get("whisper-tiny.en"))
    assert (row.stands_for, row.relation) == ("whisper-base", "relative")
    assert RegistryRow.of(reg.get("gpt2")).stands_for is None
    assert RegistryRow.of(reg.get("rxnfp-bert-ft")).fine_tuned_from == "rxnfp-bert-pretrained"
    # a results.json written before the fields existed still reads
    assert RegistryRow.model_validate(row.model_dump(exclude={"stands_for", "relation"})).relation is None
