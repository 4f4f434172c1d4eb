"""Tour 23: what a registry's ``expected:`` record may hold. A date as a measured value rendered ``.2f`` into the
reason; ``017``, ``1:30`` and ``4e-400`` were read as 15, 90 and 0.0; ``0128`` was called "a number quoted";
``{vocab:c}`` showed 591 as a character; and a record's ``seeds`` naming no row (or a row twice), or a ``family`` on
a claim not adjusted across models, was accepted though the record could bind no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry

MODELS = Path(__file__).resolve().parents[2] / "models.yaml"
RECORD = "measured: {contrast: 0.3889,"
WHERE = r"models\.yaml: models\[\d+\] \(id 'all-MiniLM-L6-v2'\): expected\.R\.encoder-flat-profile\."


def _registry(tmp_path, old: str, new: str) -> Path:
    text = MODELS.read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / "models.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("written, says", [
    ("2024-01-01", r"YAML reads 2024-01-01 as a date, which is no number"),
    ("2024-01-01 10:00:00", r"YAML reads 2024-01-01T10:00:00 as a date, which is no number"),
    ("!!binary aGVsbG8=", r"b'hello' is a bytes"),
])
def test_a_measured_value_that_is_no_number_yaml_reads_is_refused(tmp_path, written, says):
    path = _registry(tmp_path, RECORD, f"measured: {{contrast: {written},")
    with pytest.raises(RegistryError, match=WHERE + r"measured\.contrast: " + says + r".*write the number measured"):
        load_registry(path)


@pytest.mark.parametrize("written, says", [
    ("017", r"017 has a leading 0, which YAML reads as the octal number 15; write the number without the leading 0 "
            r"\(17\)"),
    ("0128", r"0128 has a leading 0, which makes YAML read it as the text '0128'; write the number without the "
             r"leading 0 \(128\)"),
    ("1:30", r"YAML reads 1:30 as the base-60 number 90"),
    ("1:30.5", r"YAML reads 1:30.5 as the base-60 number 90.5"),
    ("4e-400", r"4e-400 is below the least number a float holds .*so YAML reads it as 0\.0"),
    ("1e400", r"1e400 is beyond what a float holds .*so YAML reads it as inf"),
])
def test_a_number_yaml_misreads_in_a_record_is_refused(tmp_path, written, says):
    path = _registry(tmp_path, RECORD, f"measured: {{contrast: {written},")
    with pytest.raises(RegistryError, match=WHERE + r"measured\.contrast: " + says):
        load_registry(path)


def test_a_misread_number_in_another_record_field_is_refused(tmp_path):
    path = _registry(tmp_path, RECORD, "family: 010\n      " + RECORD)
    with pytest.raises(RegistryError, match=WHERE + r"family: 010 has a leading 0, which YAML reads as the octal"):
        load_registry(path)


def test_numbers_written_plainly_still_load(tmp_path):
    path = _registry(tmp_path, RECORD, "measured: {contrast: 0.3889, zero: 0, tiny: 0e-5, hex: 0x1F, neg: -0.5,")
    record = next(e for e in load_registry(path).entries if e.id == "all-MiniLM-L6-v2").expected[
        "R.encoder-flat-profile"]
    assert (record.measured["zero"], record.measured["tiny"], record.measured["hex"]) == (0, 0.0, 31)


def test_a_character_format_is_refused_for_a_number(tmp_path):
    path = _registry(tmp_path, "centring its {vocab} x {d} SMILES", "centring its {vocab:c} x {d} SMILES")
    with pytest.raises(RegistryError, match=r"\(id 'rxnmapper-albert'\): expected\.M\.partition-isotropy: .*"
                                            r"placeholder \{vocab:c\} is not a measured number.s.*no type c, which shows a number as the character"):
        load_registry(path)


@pytest.mark.parametrize("field, says", [
    ("seeds: [no-such-model]", r"seeds: \['no-such-model'\], but seeds is for claims decided over a family's seeds"),
    ("family: 2", r"family: 2, but family is for claims whose p-values are adjusted across a run's models"),
])
def test_a_record_field_for_another_kind_of_claim_is_refused(tmp_path, field, says):
    path = _registry(tmp_path, RECORD, f"{field}\n      {RECORD}")
    with pytest.raises(RegistryError, match=WHERE + says + r".*would bind no run"):
        load_registry(path)


SEEDS = "seeds: [mini-bert-bytes-s0]\n      measured: {seeds_holding: 1, seeds_not_holding: 0, n_seeds: 1}"


@pytest.mark.parametrize("seeds, says", [
    ("[no-such-model]", r"no row 'no-such-model' in the registry"),
    ("[mini-bert-bytes-s0, mini-bert-bytes-s0]", r"names 'mini-bert-bytes-s0' twice"),
    ("[mini-gpt2-bytes-s0]", r"\['mini-gpt2-bytes-s0'\] does not name the row itself \('mini-bert-bytes-s0'\)"),
])
def test_seeds_that_bind_no_run_are_refused(tmp_path, seeds, says):
    path = _registry(tmp_path, SEEDS, SEEDS.replace("[mini-bert-bytes-s0]", seeds))
    with pytest.raises(RegistryError, match=r"\(id 'mini-bert-bytes-s0'\): expected\.G\.qk-means-align\.seeds: "
                                            + says + r".*bind no run"):
        load_registry(path)
