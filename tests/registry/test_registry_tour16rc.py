"""Registry rows and records that could never mean what they say are refused in one line naming the file, the row and
the field: a record at a size no run has (``sizes: {n_sequences: 0}``: it never bound a run), a recorded number that
is NaN or infinite (a run writes null; the reason rendered "x nan"), and a field that means nothing for the row's
source kind (``gated`` on a package row was listed "gated model, not in the local cache" though the package was
installed; ``needs_remote_code`` on a source whose loading runs no model code was listed "needs custom code from its
repository")."""

from __future__ import annotations

import pytest

import aniso
from aniso.registry.entries import RegistryError, load_registry
from aniso.sources import ModelUnavailable
from aniso.sources.base import check_permissions

from registry_rows import ENTRY

RECORD = "    expected:\n      G.token-nlp-anisotropic: {{verdict: holds, reason: 'avg cos {{max_avg_cos}}', {fields}}}\n"
PACKAGE = """\
  - id: mini
    source: {{kind: package, package: no_such_package_here, subdir: model{more}}}
    modality: {modality}
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
"""
GGUF = """\
  - id: lm
    source: {kind: gguf, package: no_such_package_here, file: lm.gguf}
    modality: text
    granularity: subword
    architecture: transformer
    role: decoder
    family: llama
"""


def _registry(tmp_path, rows: str):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + rows, encoding="utf-8")
    return path


def _refused(path) -> str:
    with pytest.raises(RegistryError) as caught:
        load_registry(path)
    said = str(caught.value)
    assert "\n" not in said and said.startswith(f"{path}: models[0] (id "), said
    return said


# -- A40: a record's sizes are sizes a run can have --------------------------------------------------------------

@pytest.mark.parametrize("sizes, named", [
    ("{n_sequences: 0}", "n_sequences is 0, a size no run has (setting n_sequences takes an integer from 1 to"),
    ("{max_length: 2000000}", "max_length is 2000000, a size no run has (setting max_length takes an integer from 1 to"),
    ("{n_bias_norms: 2}", "n_bias_norms is 2, a size no run has (setting n_bias_norms takes an integer from 3 to"),
    ("{miniature_width: 130}", "miniature_width is 130, a size no run has (setting miniature_width is a multiple of 4"),
    ("{n_sequences: true}", "n_sequences is True: a recorded size is a whole number"),
    ("{n_sequences: '256'}", "n_sequences is '256': a recorded size is a whole number"),
], ids=["zero", "above", "below-lowest", "width-not-multiple-of-heads", "boolean", "text"])
def test_a_recorded_size_no_run_can_have_is_refused(tmp_path, sizes, named):
    path = _registry(tmp_path, ENTRY + RECORD.format(fields=f"measured: {{max_avg_cos: 0.5}}, sizes: {sizes}"))
    said = _refused(path)
    assert "(id 'tiny'): expected.G.token-nlp-anisotropic.sizes: " in said, said
    assert named in said, said


def test_recorded_sizes_a_run_can_have_pass(tmp_path):
    path = _registry(tmp_path, ENTRY + RECORD.format(
        fields="measured: {max_avg_cos: 0.5}, sizes: {n_sequences: 1, miniature_width: 128, twonn_batches: 0}"))
    record = load_registry(path).get("tiny").expected["G.token-nlp-anisotropic"]
    assert record.sizes == {"n_sequences": 1, "miniature_width": 128, "twonn_batches": 0}


def test_a_size_no_run_has_is_refused_through_the_api_and_aniso_list(tmp_path, clean_env, aniso_cli):
    path = _registry(tmp_path, ENTRY + RECORD.format(fields="measured: {max_avg_cos: 0.5}, sizes: {n_sequences: 0}"))
    with pytest.raises(ValueError, match=r"sizes: n_sequences is 0, a size no run has"):
        aniso.models(registry=str(path))
    code, _, err = aniso_cli(["list", "models", "--registry", str(path)])
    assert code == 2 and "sizes: n_sequences is 0, a size no run has" in err, err


# -- A58: a recorded number is finite -----------------------------------------------------------------------------

@pytest.mark.parametrize("measured, where, shown", [
    ("{max_avg_cos: .nan}", "measured.max_avg_cos", "nan"),
    ("{max_avg_cos: .inf}", "measured.max_avg_cos", "inf"),
    ("{max_avg_cos: 0.5, tolerance: {relative: -.inf}}", "measured.tolerance.relative", "-inf"),
    ("{max_avg_cos: 0.5, interval: [0.1, .NaN]}", "measured.interval[1]", "nan"),
], ids=["nan", "inf", "nested-minus-inf", "in-a-list"])
def test_a_recorded_number_that_is_not_finite_is_refused(tmp_path, measured, where, shown):
    path = _registry(tmp_path, ENTRY + RECORD.format(fields=f"measured: {measured}"))
    said = _refused(path)
    assert f"(id 'tiny'): expected.G.token-nlp-anisotropic.{where}: {shown} is no finite number" in said, said


def test_a_non_finite_record_is_refused_through_the_api_and_aniso_list(tmp_path, clean_env, aniso_cli):
    path = _registry(tmp_path, ENTRY + RECORD.format(fields="measured: {max_avg_cos: .nan}"))
    with pytest.raises(ValueError, match=r"measured\.max_avg_cos: nan is no finite number"):
        aniso.models(registry=str(path))
    code, _, err = aniso_cli(["list", "models", "--registry", str(path)])
    assert code == 2 and "measured.max_avg_cos: nan is no finite number" in err, err


def test_finite_recorded_numbers_pass(tmp_path):
    path = _registry(tmp_path, ENTRY + RECORD.format(fields="measured: {max_avg_cos: 0.5, interval: [0.1, 1e3]}"))
    assert load_registry(path).get("tiny").expected["G.token-nlp-anisotropic"].measured["interval"] == [0.1, 1000.0]


# -- A43: gated and use_auth_token are a hub row's ----------------------------------------------------------------

@pytest.mark.parametrize("rows, fields, kind", [
    (PACKAGE.format(more="", modality="text"), "    gated: true\n", "package"),
    (ENTRY, "    gated: true\n", "local"),
    (ENTRY, "    gated: true\n    use_auth_token: true\n", "local"),
    (GGUF, "    gated: true\n", "gguf"),
], ids=["package", "local", "local-with-token", "gguf"])
def test_gated_on_a_source_that_downloads_nothing_is_refused(tmp_path, rows, fields, kind):
    said = _refused(_registry(tmp_path, rows + fields))
    assert f"gated: true on a {kind} source, which downloads nothing from the hub" in said, said
    assert "for source kind hub only" in said, said


def test_gated_on_a_hub_row_passes(tmp_path):
    rows = ENTRY.replace("{kind: local, path: ./tiny}", "{kind: hub, repo: org/tiny}")
    path = _registry(tmp_path, rows + "    gated: true\n    use_auth_token: true\n")
    assert load_registry(path).get("tiny").gated


def test_gated_on_a_package_is_refused_through_the_api_and_aniso_list(tmp_path, clean_env, aniso_cli):
    path = _registry(tmp_path, PACKAGE.format(more="", modality="text") + "    gated: true\n")
    with pytest.raises(ValueError, match=r"\(id 'mini'\): .*gated: true on a package source"):
        aniso.models(registry=str(path))
    code, _, err = aniso_cli(["list", "models", "--registry", str(path)])
    assert code == 2 and "gated: true on a package source" in err, err


# -- A45: needs_remote_code and trust_remote_code on sources that can run a model's code ---------------------------

@pytest.mark.parametrize("rows, fields, said_kind", [
    (GGUF, "    needs_remote_code: true\n", "a gguf source,"),
    (GGUF, "    needs_remote_code: true\n    trust_remote_code: true\n", "a gguf source,"),
    (PACKAGE.format(more=", format: ctranslate2-whisper", modality="speech").replace("subword", "audio-frame")
     .replace("encoder\n", "encoder-decoder\n").replace("bert", "whisper"),
     "    needs_remote_code: true\n", "a package source of format 'ctranslate2-whisper',"),
], ids=["gguf", "gguf-trusted", "package-ctranslate2"])
def test_remote_code_on_a_source_that_runs_no_model_code_is_refused(tmp_path, rows, fields, said_kind):
    said = _refused(_registry(tmp_path, rows + fields))
    assert f"needs_remote_code: true on {said_kind} which never runs a model's own code" in said, said
    assert "(source kind hub, local, package)" in said, said


def test_remote_code_where_from_pretrained_reads_the_model_says_where_the_code_is(tmp_path):
    """A local folder or a package read with transformers' from_pretrained can hold a model's own code (config.json's
    auto_map): the field is kept, and a missing opt-in names the folder or package, not a repository."""
    path = _registry(tmp_path, ENTRY + "    needs_remote_code: true\n"
                     + PACKAGE.format(more="", modality="text") + "    needs_remote_code: true\n")
    registry = load_registry(path)
    with pytest.raises(ModelUnavailable, match="^tiny: needs custom code from its folder; not run unless"):
        check_permissions(registry.get("tiny"))
    with pytest.raises(ModelUnavailable, match="^mini: needs custom code from its package's model folder; not run"):
        check_permissions(registry.get("mini"))


def test_the_suites_own_registry_still_loads():
    from pathlib import Path

    registry = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")
    assert len(registry) > 50
    assert {e.source.kind for e in registry if e.gated or e.needs_remote_code} == {"hub"}
