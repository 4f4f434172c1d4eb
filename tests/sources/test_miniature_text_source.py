"""Source kind miniature-text: registry schema, profile sizes, training text, series of checkpoints."""

from __future__ import annotations

import pytest

from aniso.stats.dynamics import checkpoint_entries
from aniso.registry.entries import RegistryError, load_registry
from aniso.sources import InputsMissing, SourceContext, load_model, source_fingerprint

ROW = """models:
- id: mini
  source: {{kind: miniature-text, arch: {arch}, seed: 0{extra}}}
  checkpoints: {{steps: all}}
  modality: text
  granularity: byte
  architecture: transformer
  role: {role}
  family: mini
"""

SIZES = {"total_steps": 8, "hidden_size": 16, "batch_size": 2}


def _registry(tmp_path, arch="gpt2", role="decoder", extra=""):
    path = tmp_path / "models.yaml"
    path.write_text(ROW.format(arch=arch, role=role, extra=extra))
    return load_registry(path)


def test_the_role_must_match_the_architecture(tmp_path):
    with pytest.raises(RegistryError, match="role 'decoder'"):
        _registry(tmp_path, arch="gpt2", role="encoder")


def test_unknown_recipe_fields_are_refused(tmp_path):
    with pytest.raises(RegistryError, match="unknown recipe field"):
        _registry(tmp_path, extra=", config: {depth: 3}")


def test_without_training_text_the_model_is_missing_inputs_named_by_the_setting(tmp_path):
    entry = _registry(tmp_path).get("mini")
    with pytest.raises(InputsMissing, match="train_text"):
        source_fingerprint(entry, SourceContext(cache_dir=tmp_path, miniature_sizes=SIZES))


def test_series_of_all_checkpoints_trains_once_and_fingerprints_each_step(tmp_path):
    text = tmp_path / "train.txt"
    text.write_text("a small training text, repeated.\n" * 40)
    entry = _registry(tmp_path, extra=", config: {seq_len: 16, num_layers: 2, num_heads: 2}").get("mini")
    ctx = SourceContext(cache_dir=tmp_path / "cache", train_text=text, miniature_sizes=SIZES)
    series = checkpoint_entries(entry, ctx)
    assert [s for s, _ in series] == [0, 4, 8]
    assert [e.id for _, e in series] == ["mini.step0", "mini.step4", "mini.step8"]
    assert not series[0][1].trained and series[-1][1].trained
    prints = {source_fingerprint(e, ctx) for _, e in series}
    assert len(prints) == 3
    loaded = load_model(series[1][1], ctx)
    assert "step 4 of 8" in loaded.origin and loaded.tokenizer("ab")["input_ids"] == [100, 101, 1]
    assert len(list((tmp_path / "cache" / "miniatures").glob("*/*.safetensors"))) == 3
    text.write_text("another text\n" * 40)
    assert source_fingerprint(series[1][1], ctx) not in prints  # the training text is in the fingerprint


def test_hub_series_vary_their_source_by_template(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("""models:
- id: mb
  source: {kind: hub, repo: google/multiberts-seed_0}
  checkpoints: {steps: [0, 20000, 2000000], vary: {repo: "google/multiberts-seed_0-step_{kstep}k"}}
  modality: text
  granularity: subword
  architecture: transformer
  role: encoder
  family: bert
- id: py
  source: {kind: hub, repo: EleutherAI/pythia-70m}
  checkpoints: {steps: [0, 1000], vary: {revision: "step{step}"}}
  modality: text
  granularity: subword
  architecture: transformer
  role: decoder
  family: gpt-neox
""")
    reg = load_registry(path)
    assert [e.source.repo for _, e in checkpoint_entries(reg.get("mb"), SourceContext())] == [
        "google/multiberts-seed_0-step_0k", "google/multiberts-seed_0-step_20k", "google/multiberts-seed_0-step_2000k"]
    assert [e.source.revision for _, e in checkpoint_entries(reg.get("py"), SourceContext())] == ["step0", "step1000"]


@pytest.mark.parametrize("series, message", [
    ("{steps: all, vary: {revision: 'step{step}'}}", "lists its checkpoints"),
    ("{steps: [0, 10]}", "need 'vary'"),
    ("{steps: [10, 0], vary: {revision: 'step{step}'}}", "strictly increasing"),
    ("{steps: [0, 10], vary: {branch: 'step{step}'}}", "not fields of a hub source"),
])
def test_bad_series_are_refused_naming_the_field(tmp_path, series, message):
    path = tmp_path / "models.yaml"
    path.write_text(f"""models:
- id: py
  source: {{kind: hub, repo: EleutherAI/pythia-70m}}
  checkpoints: {series}
  modality: text
  granularity: subword
  architecture: transformer
  role: decoder
  family: gpt-neox
""")
    with pytest.raises(RegistryError, match=message):
        load_registry(path)
