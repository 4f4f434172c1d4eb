"""A hub row declaring ``modality: speech`` whose ``tiny`` (the twin built for it) is a BERT ran `aniso run ID --twin`
to a report: isotropic baselines "held", the pipeline check failed on a hidden AttributeError and the refusal named a
temporary snapshot lacking preprocessor_config.json. The row is refused at load, naming tiny's model type."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = ("models:\n- id: my-hub\n  source: {{kind: hub, repo: me/bigbert}}\n  modality: {modality}\n"
       "  granularity: {granularity}\n  architecture: transformer\n  role: encoder\n  family: bert\n"
       "  tiny: {{model_type: bert, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4, "
       "intermediate_size: 37, vocab_size: 512, max_position_embeddings: 128}}\n")


def test_a_speech_row_whose_tiny_is_a_text_model_is_refused(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(modality="speech", granularity="audio-frame"))
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert str(refused.value) == (f"{path}: models[0] (id 'my-hub'): tiny: modality 'speech', but its model_type is "
                                  "bert, a text model"), str(refused.value)


def test_a_text_row_whose_tiny_is_a_text_model_loads(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(ROW.format(modality="text", granularity="subword"))
    assert load_registry(path).get("my-hub").tiny["model_type"] == "bert"
