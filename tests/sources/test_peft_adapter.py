"""A PEFT adapter folder (adapter_config.json, the low-rank updates a fine-tuner saves) got the general "not in a
format aniso reads" line; each door now names it an adapter of its base model and says to merge it first."""

from __future__ import annotations

import json

import pytest

from aniso.cli import main

SAID = ("a PEFT LORA adapter of sentence-transformers/all-MiniLM-L6-v2 (adapter_config.json), not a model: merge it "
        "into its base model (peft's merge_and_unload()), save the result with save_pretrained and give that folder")


@pytest.fixture
def adapter(clean_env):
    folder = clean_env / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "base_model_name_or_path": "sentence-transformers/all-MiniLM-L6-v2", "r": 8,
        "target_modules": ["query", "value"]}))
    (folder / "adapter_model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    return folder


def test_aniso_stats_of_an_adapter_folder(adapter, capsys):
    assert main(["stats", str(adapter), "--n-sequences", "8"]) == 2
    err = capsys.readouterr().err
    assert f"{adapter}: {SAID}" in err and "not in a format aniso reads" not in err, err


def test_a_registry_row_and_hub_import_of_an_adapter_folder(adapter, clean_env, capsys):
    registry = clean_env / "ad.yaml"
    registry.write_text(f"models:\n- id: ad\n  source: {{kind: local, path: {adapter}}}\n  modality: text\n"
                        "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n")
    assert main(["stats", "ad", "--registry", str(registry), "--n-sequences", "8"]) == 2
    assert SAID in capsys.readouterr().err
    assert main(["hub", "import", "me/ad", str(adapter), "--cache-dir", str(clean_env / "hub")]) == 2
    err = capsys.readouterr().err
    assert f"{adapter}: {SAID}" in err, err
