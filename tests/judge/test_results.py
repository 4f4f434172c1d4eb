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
    ("{}", "holds no results"),
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


def _uncertainty(**kw) -> dict:
    """A p-value's uncertainty record (rule p < 0.05) as it stands in a results file."""
    return dict(statistic="p", value=0.01, low=0.005, high=0.02, threshold=0.05, holds_if="<", n_boot=100) | kw


def _layers(names: list[str], **fields) -> dict:
    """A ``models`` section entry of one model: one layer summary per name."""
    return {"layer_names": names, "layers": [{"mean_cosine": 0.1} | fields for _ in names], "meta": {}}


def _row(**fields) -> dict:
    """A ``registry`` section row of a text model."""
    return {"modality": "text", "granularity": "subword", "architecture": "transformer", "role": "encoder",
            "family": "bert"} | fields


def _written(tmp_path: Path, results: list[ClaimResult], **doc) -> Path:
    path = tmp_path / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=results, **doc))
    return path


def _edit(path: Path, change) -> Path:
    """``path``'s document edited by ``change`` (a function of its JSON data), its digest made to match again, so
    that only the consistency checks can find what is wrong."""
    from aniso.judge.results import content_digest

    data = json.loads(path.read_text())
    change(data)
    data["digest"] = content_digest(data)
    path.write_text(json.dumps(data))
    return path


def test_a_results_file_edited_after_the_run_is_refused_by_its_digest(tmp_path):
    path = _written(tmp_path, [_result()])
    assert read_results(path).digest
    path.write_text(path.read_text().replace('"p_value": 0.01', '"p_value": 0.02', 1))
    with pytest.raises(ValueError, match=r"results\.json: its content does not match the digest"):
        read_results(path)


def test_the_digest_covers_fields_it_does_not_know_by_name(tmp_path):
    """The digest is of the whole document, not of a list of fields: a field added later is covered as well."""
    from aniso.judge.results import content_digest

    data = json.loads(_written(tmp_path, [_result()]).read_text())
    assert content_digest(data) == data["digest"]
    data["results"][0]["a_field_added_later"] = 1.0
    assert content_digest(data) != data["digest"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["results"][0].update(verdict="maybe"), r"results\[0\] \(G\.drift-correlation-pearson, m\): verdict "
                                                        r"'maybe' is none of"),
    (lambda d: d["results"].append(dict(d["results"][0], verdict="does not hold")),
     r"results\[1\] .*the same result as results\[0\] .* listed twice"),
    (lambda d: d["results"][0].update(record_check="record's numbers compared: all within tolerance",
                                      record_drift=[{"key": "p_value", "recorded": 0.5, "measured": 0.01,
                                                     "tolerance": ""}]),
     "record_check says all within tolerance, but record_drift lists 1"),
    (lambda d: d["results"][0].update(record_check="record's numbers compared: 1 of them stale",
                                      record_drift=[{"key": "p_value", "recorded": 0.5, "measured": 0.3,
                                                     "tolerance": ""}]),
     "record_drift gives p_value measured 0.3, but measured holds 0.01"),
    (lambda d: d.update(summary=dict(d["summary"], holds=7)), "summary .* does not count the results"),
    (lambda d: d["results"][0].update(claim_id="G.no-such-claim"),
     r"claim_id 'G\.no-such-claim' is no claim of this aniso's catalogue"),
    (lambda d: d["results"][0].update(n_vectors=3), r"a 'holds' verdict on 3 vector\(s\) per layer, but "
                                                    r"G\.drift-correlation-pearson is decided on at least \d+"),
    (lambda d: d["results"][0]["measured"].update(d=-384), "measured d is -384, not a count of at least 1"),
    (lambda d: d["results"][0]["measured"].update(n_layers=7, avg_cos_per_layer=[0.1, 0.2]),
     r"measured avg_cos_per_layer holds 2 value\(s\), but n_layers is 7"),
    (lambda d: d["results"][0].update(uncertainty=_uncertainty(value=0.3)),
     r"verdict 'holds', but its deciding statistic p = 0\.3 does not satisfy the rule < 0\.05"),
    (lambda d: d["results"][0].update(verdict="expected not to hold", uncertainty=_uncertainty(value=0.01)),
     r"verdict 'expected not to hold', but its deciding statistic p = 0\.01 satisfies the rule < 0\.05"),
    (lambda d: d["results"][0].update(p_adjusted=0.2, uncertainty=_uncertainty(value=0.01)),
     r"verdict 'holds', but its deciding statistic p = 0\.2 does not satisfy"),  # decided on the adjusted p-value
    (lambda d: d["results"][0]["measured"].update(max_avg_cos=0.9, avg_cos_per_layer=[0.1, 0.25441]),
     r"measured max_avg_cos is 0\.9, but the largest of avg_cos_per_layer is 0\.25441"),
    (lambda d: d["results"][0]["measured"].update(max_avg_cos=0.25, q95=0.08, margin=0.7),
     r"measured margin is 0\.7, but max_avg_cos − q95 is 0\.1(7|69)"),
    (lambda d: d["results"][0]["measured"].update(layer_of_max="99", avg_cos_per_layer=[0.1, 0.25]),
     r"measured layer_of_max is '99', no layer of the 2 of avg_cos_per_layer"),
    (lambda d: d["results"][0]["measured"].update(layer_of_max="0", avg_cos_per_layer=[0.1, 0.25]),
     r"measured layer_of_max is layer '0', whose avg cos 0\.1 is not the maximum of avg_cos_per_layer, 0\.25"),
    (lambda d: (d["results"][0]["measured"].update(layer_of_min="enc.9", avg_cos_per_layer=[0.1, 0.25]),
                d.update(models={"m": _layers(["enc.0", "enc.1"])})),
     r"measured layer_of_min is 'enc\.9', no layer of the 2"),
    (lambda d: d["results"][0]["measured"].update(q95=0.01, d=384),
     r"measured q95 is 0\.01, but q95\(d\) for d = 384 is 0\.0839"),
    (lambda d: d["results"][0].update(n_items=256, n_vectors=100), r"n_items 256 exceeds n_vectors 100"),
    (lambda d: (d["results"][0]["measured"].update(n_layers=7, avg_cos_per_layer=[0.1] * 7),
                d.update(models={"m": _layers(["0", "1"])})),
     r"measured n_layers is 7, but models\.m holds the statistics of 2 layers"),
    (lambda d: d.update(models={"m": _layers(["0", "1"]) | {"layer_names": ["0"]}}),
     r"models\.m: Value error, 2 layer summaries for 1 layer names"),
    (lambda d: d.update(models={"m": _layers(["0"], count=-5)}),
     r"models\.m: Value error, layers\[0\]\.count is -5, not a count"),
    (lambda d: d["provenance"].update(time="yesterday"),
     r"provenance: Value error, time 'yesterday' is no ISO 8601 date and time"),
    (lambda d: d["results"][0].update(inputs="garbage"), r"results\.0\.inputs: String should match pattern"),
    (lambda d: d.update(models={"m": _layers(["0"]) | {"entry": _row()}}, registry={"m": _row(modality="vision")}),
     r"registry\.m and models\.m\.entry differ in modality \('vision' against 'text'\)"),
    (lambda d: d.update(registry={"m": _row(modality="music")}), r"registry\.m\.modality: Input should be"),
    (lambda d: d["results"][0].update(p_value=1.5), r"results\.0\.p_value: Input should be less than or equal to 1"),
    (lambda d: d["results"][0].update(n_vectors=-5), r"results\.0\.n_vectors: Input should be greater than or equal"),
    (lambda d: d["results"][0].update(uncertainty=_uncertainty(value=0.01, low=0.5, high=0.1)),
     r"results\.0\.uncertainty: .*the interval's low end 0\.5 is above its high end 0\.1"),
])
def test_an_inconsistent_results_file_is_refused_in_one_line(tmp_path, change, message):
    from aniso.judge.results import verdict_counts

    path = _edit(_written(tmp_path, [_result()], summary=verdict_counts([_result()])), change)
    with pytest.raises(ValueError, match=message) as err:
        read_results(path)
    assert len(str(err.value).splitlines()) == 1 and "results.json" in str(err.value)


def test_the_git_commit_is_the_projects_own_or_unknown(tmp_path):
    """A copy of the project inside another git repository records no commit (unknown), not the other one's."""
    import subprocess

    from aniso.judge.results import _git_commit

    outer = tmp_path / "outer"
    (outer / "project").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    (outer / "f").write_text("x")
    subprocess.run(["git", "-C", str(outer), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm",
                    "x"], check=True)
    assert _git_commit(outer) is not None
    assert _git_commit(outer / "project") is None
    assert provenance(outer / "project", {}, None).git_commit is None


def test_a_key_given_twice_in_a_results_file_is_refused(tmp_path):
    """JSON keeps the last of two equal keys without a word ("verdict": "does not hold", then "holds"): a results file
    that gives a key twice in one object is refused in one line naming the key, even with its digest made to match."""
    from aniso.judge.results import content_digest

    path = _written(tmp_path, [_result()])
    data = json.loads(path.read_text())
    data.pop("digest")
    data["digest"] = content_digest(data)
    text = json.dumps(data).replace('"verdict": "holds"', '"verdict": "does not hold", "verdict": "holds"', 1)
    path.write_text(text)
    with pytest.raises(ValueError, match=r"results\.json: the key 'verdict' is given twice in one object") as err:
        read_results(path)
    assert len(str(err.value).splitlines()) == 1
