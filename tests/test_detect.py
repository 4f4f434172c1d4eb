"""Registry fields of a model that is not in the registry, from its config (aniso.detect)."""

from __future__ import annotations

import pytest

from aniso.detect import UndetectableModel, entry_fields, registry_entry


@pytest.mark.parametrize("config, expected", [
    ({"model_type": "bert", "vocab_size": 30522, "num_hidden_layers": 12, "architectures": ["BertModel"]},
     ("text", "subword", "transformer", "encoder")),
    ({"model_type": "llama", "vocab_size": 32000, "num_hidden_layers": 2, "architectures": ["LlamaForCausalLM"]},
     ("text", "subword", "transformer", "decoder")),
    ({"model_type": "t5", "vocab_size": 32128, "num_layers": 6, "is_encoder_decoder": True},
     ("text", "subword", "transformer", "encoder-decoder")),
    ({"model_type": "canine"}, ("text", "char", "transformer", "encoder")),
    ({"model_type": "whisper", "is_encoder_decoder": True}, ("speech", "audio-frame", "transformer", "encoder-decoder")),
    ({"model_type": "vit"}, ("vision", "patch", "transformer", "encoder")),
    ({"model_type": "resnet"}, ("vision", "pixel", "cnn", "encoder")),
])
def test_fields_follow_the_config(config, expected):
    got = entry_fields(config)
    assert (got["modality"], got["granularity"], got["architecture"], got["role"]) == expected
    assert got["family"] == config["model_type"]


def test_unknown_configs_say_what_to_write():
    with pytest.raises(UndetectableModel, match="no model_type"):
        entry_fields({})
    with pytest.raises(UndetectableModel, match="'mystery'"):
        entry_fields({"model_type": "mystery"})


def test_the_entry_validates_in_a_registry(tmp_path):
    from aniso.registry import ModelEntry

    folder = tmp_path / "My Model!"
    folder.mkdir()
    row = registry_entry(str(folder), {"model_type": "gpt2", "vocab_size": 10, "n_layer": 2,
                                       "architectures": ["GPT2LMHeadModel"]})
    entry = ModelEntry.model_validate(row)
    assert entry.id == "My-Model" and entry.source.kind == "local" and entry.role == "decoder"
