"""Registry files whose rows contradict each other or hold a word where a record keeps a number are refused at load,
one line naming the file, the row and the field: ``fine_tuned_from`` rows that go round in a cycle; a record's
``measured`` value that is text other than a layer's name or a row's id."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[2]


def row(ident: str, extra: str = "") -> str:
    return (f"  - id: {ident}\n    source: {{kind: local, path: ./tiny}}\n    modality: text\n    granularity: subword\n"
            f"    architecture: transformer\n    role: encoder\n    family: bert\n{extra}")


def write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + "".join(rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("links,where,names", [
    ({"a": "b", "b": "a"}, "models[0] (id 'a')", "'a' -> 'b' -> 'a'"),
    ({"a": "b", "b": "c", "c": "a"}, "models[0] (id 'a')", "'a' -> 'b' -> 'c' -> 'a'"),
    ({"a": "b", "b": "c", "c": "b"}, "models[1] (id 'b')", "'b' -> 'c' -> 'b'"),
])
def test_fine_tuned_from_rows_that_go_round_in_a_cycle_are_refused(tmp_path, links, where, names):
    path = write(tmp_path, *(row(i, f"    fine_tuned_from: {links[i]}\n") for i in links))
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert said.startswith(f"{path}: {where}: fine_tuned_from: the rows {names} are each fine-tuned from the next, "
                           "a cycle"), said
    assert "\n" not in said


def test_a_chain_of_fine_tuned_from_without_a_cycle_loads(tmp_path):
    reg = load_registry(write(tmp_path, row("a", "    fine_tuned_from: b\n"), row("b", "    fine_tuned_from: c\n"),
                              row("c")))
    assert [e.fine_tuned_from for e in reg] == ["b", "c", None]


def record(measured: str) -> str:
    return ("    expected:\n      G.token-nlp-anisotropic:\n        verdict: does-not-hold\n        source: measured\n"
            f"        measured: {measured}\n        reason: r {{max_avg_cos}}\n")


@pytest.mark.parametrize("measured,where,value", [
    ("{max_avg_cos: high}", "max_avg_cos", "'high'"),
    ("{max_avg_cos: '0.2'}", "max_avg_cos", "'0.2'"),
    ("{max_avg_cos: 0.2, avg_cos_per_layer: [0.1, n/a]}", "avg_cos_per_layer[1]", "'n/a'"),
    ("{max_avg_cos: 0.2, by_model: {other: low}}", "by_model.other", "'low'"),
])
def test_a_word_where_a_record_keeps_a_number_is_refused(tmp_path, measured, where, value):
    path = write(tmp_path, row("mini", record(measured)), row("other"))
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert said.startswith(f"{path}: models[0] (id 'mini'): expected.G.token-nlp-anisotropic.measured.{where}: "
                           f"{value} is text where the record keeps a number"), said
    assert "\n" not in said


def test_layer_names_row_ids_booleans_and_nulls_are_kept_in_a_record(tmp_path):
    measured = ("{max_avg_cos: 0.2, layer_of_max: enc.6, layer: '2', flattest: other, grows: true, q: null, "
                "by_model: {other: 0.3}}")
    reg = load_registry(write(tmp_path, row("mini", record(measured)), row("other")))
    assert reg.get("mini").expected["G.token-nlp-anisotropic"].measured["layer_of_max"] == "enc.6"


def test_the_suites_registry_loads():
    assert len(load_registry(ROOT / "models.yaml").entries) > 10
