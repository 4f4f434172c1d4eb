"""Registry files refused at load with what is wrong in their own terms: a record of a claim on a row no test of the
claim measures (it would never be checked), a text field YAML read as a boolean, a null or a number; and setting
``models`` given a hub id, which takes registry ids, tags and named sets only."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROOT = Path(__file__).resolve().parents[2]


def row(ident: str = "mini", extra: str = "", modality: str = "text", granularity: str = "subword",
        architecture: str = "transformer") -> str:
    return (f"  - id: {ident}\n    source: {{kind: local, path: ./tiny}}\n    modality: {modality}\n"
            f"    granularity: {granularity}\n    architecture: {architecture}\n    role: encoder\n    family: bert\n"
            f"{extra}")


def record(claim: str) -> str:
    return f"    expected:\n      {claim}:\n        verdict: holds\n        source: measured\n        reason: x\n"


def write(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + "".join(rows), encoding="utf-8")
    return path


def test_a_record_of_a_claim_no_test_measures_on_the_row_is_refused(tmp_path):
    """A CNN claim's record on the MiniLM text row was accepted; no test of the claim is collected for the row."""
    path = write(tmp_path, row(extra=record("G.cnn-mostly-isotropic")))
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert said.startswith(f"{path}: models[0] (id 'mini'): expected.G.cnn-mostly-isotropic: the claim does not "
                           "apply to this row (text, subword, transformer, encoder, pretrained): "
                           "claims/test_godey_modalities.py::test_cnn_mostly_isotropic measures the rows tagged "
                           "pretrained and vision and cnn; "), said
    assert "would never be checked" in said and "\n" not in said


def test_a_record_through_the_api_and_the_list_command_is_refused(tmp_path, clean_env, aniso_cli):
    import aniso

    path = write(tmp_path, row(extra=record("G.speech-all-layers-0.2")))
    with pytest.raises(ValueError, match=r"expected\.G\.speech-all-layers-0\.2: the claim does not apply"):
        aniso.models(registry=str(path))
    code, _, err = aniso_cli(["list", "models", "--registry", str(path)])
    assert code == 2 and "expected.G.speech-all-layers-0.2: the claim does not apply to this row" in err, err


@pytest.mark.parametrize("claim,fields", [
    ("G.cnn-mostly-isotropic", dict(modality="vision", granularity="pixel", architecture="cnn")),
    ("G.token-nlp-anisotropic", {}),
    ("G.drift-correlation-spearman", {}),  # every pretrained row
    ("G.char-nlp-anisotropic", dict(granularity="byte")),  # a selection of any_of and none_of, read from a name
])
def test_a_record_of_a_claim_measured_on_the_row_loads(tmp_path, claim, fields):
    reg = load_registry(write(tmp_path, row(extra=record(claim), **fields)))
    assert list(reg.get("mini").expected) == [claim]


def test_the_suite_registry_holds_no_record_that_is_never_checked():
    assert len(load_registry(ROOT / "models.yaml")) > 0


@pytest.mark.parametrize("field,text,read", [
    ("id", "yes", "the boolean true"),
    ("family", "off", "the boolean false"),
    ("family", "null", "no value"),
    ("family", "123", "the number 123"),
    ("modality", "on", "the boolean true"),
])
def test_a_word_yaml_reads_as_no_text_says_so_and_to_quote_it(tmp_path, field, text, read):
    """``id: yes`` was "(id True): id: Input should be a valid string": the user wrote no True."""
    lines = row().replace(f"    {field}: ", f"    {field}: {text}  # was: ", 1) if field != "id" else \
        row().replace("id: mini", f"id: {text}")
    path = write(tmp_path, lines)
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert f": {field}: " in said and f"YAML reads " in said and read in said and "quote" in said, said
    assert "\n" not in said


def test_a_hub_id_as_setting_models_says_it_takes_registry_ids_and_how_to_measure_a_hub_id():
    """``pytest claims/ --aniso-models me/plain`` said only "model set 'me/plain' is no named set"."""
    reg = load_registry(ROOT / "models.yaml")
    with pytest.raises(RegistryError) as caught:
        reg.model_set("me/plain")
    said = str(caught.value)
    assert "model set 'me/plain' is no named set" in said, said
    assert "setting models takes only registry ids, tags and named sets" in said, said
    assert "`aniso run me/plain` measures a hub id" in said, said
