"""Registry fields of a model that is not in the registry, from its config (aniso.sources.detect)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.sources.detect import NotATransformer, UndetectableModel, entry_fields, registry_entry


@pytest.mark.parametrize("config, expected", [
    ({"model_type": "bert", "vocab_size": 30522, "num_hidden_layers": 12, "num_attention_heads": 12,
      "architectures": ["BertModel"]}, ("text", "subword", "transformer", "encoder")),
    ({"model_type": "llama", "vocab_size": 32000, "num_hidden_layers": 2, "num_attention_heads": 4,
      "architectures": ["LlamaForCausalLM"]}, ("text", "subword", "transformer", "decoder")),
    ({"model_type": "t5", "vocab_size": 32128, "num_layers": 6, "num_heads": 8, "is_encoder_decoder": True},
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
    from aniso.registry.entries import ModelEntry

    folder = tmp_path / "My Model!"
    folder.mkdir()
    row = registry_entry(str(folder), {"model_type": "gpt2", "vocab_size": 10, "n_layer": 2, "n_head": 2,
                                       "architectures": ["GPT2LMHeadModel"]})
    entry = ModelEntry.model_validate(row)
    assert entry.id == "My-Model" and entry.source.kind == "local" and entry.role == "decoder"


# -- models that are not Transformers ----------------------------------------------------------------------------

_MAMBA = {"model_type": "mamba", "vocab_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "state_size": 4,
          "architectures": ["MambaForCausalLM"]}


@pytest.mark.parametrize("model_type, what", [
    ("mamba", "state-space"), ("mamba2", "state-space"), ("falcon_mamba", "state-space"), ("rwkv", "recurrent"),
    ("recurrent_gemma", "recurrent"), ("xlstm", "recurrent"), ("jamba", "hybrid"), ("zamba2", "hybrid"),
])
def test_a_model_that_is_not_a_transformer_is_not_detected(model_type, what):
    """Even with the fields of a text model (vocabulary, layers, attention heads for the hybrids), a state-space,
    recurrent or hybrid model_type is refused, saying what it is and how to measure it as a control."""
    config = dict(_MAMBA, model_type=model_type, num_attention_heads=4)
    with pytest.raises(NotATransformer, match=rf"model_type '{model_type}' is a {what} .*not a Transformer.*"
                                              r"tags: \[control\]"):
        entry_fields(config)


def test_an_unknown_text_config_without_attention_is_not_a_transformer():
    config = {"model_type": "mystery-lm", "vocab_size": 64, "num_hidden_layers": 2, "hidden_size": 16}
    with pytest.raises(NotATransformer, match="'mystery-lm' is not a Transformer by its config: no attention"):
        entry_fields(config)
    assert entry_fields(dict(config, num_attention_heads=2))["architecture"] == "transformer"


def test_run_refuses_a_local_mamba_folder_in_one_line(tmp_path, capsys):
    """`aniso run <folder>` on a folder whose config.json says mamba: exit 2, one line naming the folder."""
    import json

    from aniso.cli import main

    folder = tmp_path / "my-mamba"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(_MAMBA))
    registry = Path(__file__).resolve().parents[2] / "models.yaml"
    assert main(["run", str(folder), "--registry", str(registry)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"{folder}: model_type 'mamba' is a state-space model (Mamba), not a Transformer" in err


def _entry(folder, **extra):
    from aniso.registry.entries import ModelEntry

    return ModelEntry.model_validate(dict(id="mamba-130m", source={"kind": "local", "path": str(folder)},
                                          modality="text", granularity="subword", architecture="transformer",
                                          role="decoder", family="mamba", **extra))


def test_a_hand_written_entry_is_measured_only_as_a_control(tmp_path):
    """A registry entry written by hand for a Mamba folder is refused at load (naming the entry and the config,
    before any weight is read) unless it is tagged control; the offline architecture check says the same."""
    import json

    from aniso.extract.architecture_check import build_tiny_model
    from aniso.sources.detect import transformer_problem
    from aniso.sources import ModelUnavailable, load_model

    (tmp_path / "config.json").write_text(json.dumps(_MAMBA))
    with pytest.raises(ModelUnavailable, match=r"^mamba-130m: model_type 'mamba' is a state-space model .*"
                                               r"tag the entry 'control'.*config\.json"):
        load_model(_entry(tmp_path))
    control = _entry(tmp_path, tags=["control"])
    assert transformer_problem(control, "mamba") is None
    with pytest.raises(ModelUnavailable, match="no safetensors weights"):  # past the check: no weights here
        load_model(control)
    with pytest.raises(ValueError, match="^mamba-130m: model_type 'mamba' is a state-space model"):
        build_tiny_model(_entry(tmp_path, tiny={"model_type": "mamba", "hidden_size": 8, "num_hidden_layers": 1}))
