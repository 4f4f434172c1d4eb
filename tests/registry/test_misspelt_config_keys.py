"""A key one slip from a transformers config field (`hidden_sise: 64` in an untrained block's config,
`num_hidden_layer: 3` in a hub row's tiny or full config) was accepted and ignored: the default block, a 12-layer twin
were measured under the row's name. It is refused at load, naming the field it is a slip from."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry
from aniso.sources.detect import misspelt_config_key

HUB = ("models:\n- id: my-hub-bert\n  source: {{kind: hub, repo: me/bert}}\n  modality: text\n"
       "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n"
       "  tiny: {{model_type: bert, hidden_size: 32, {tiny}num_attention_heads: 4, intermediate_size: 37, "
       "vocab_size: 512}}\n{full}")
BLOCK = ("models:\n- id: my-block\n  source: {kind: init, block: bert-post-ln, config: {hidden_sise: 64}}\n"
         "  modality: embeddings\n  granularity: embedding\n  architecture: transformer\n  role: block\n"
         "  family: bert\n")


@pytest.mark.parametrize("text, said", [
    (HUB.format(tiny="num_hidden_layer: 3, ", full=""),
     "models[0] (id 'my-hub-bert'): tiny.num_hidden_layer: no field of bert's config; did you mean "
     "num_hidden_layers? (transformers would keep num_hidden_layer unread and build its default num_hidden_layers)"),
    (HUB.format(tiny="", full="  full: {hidden_size: 768, num_hidden_layer: 2}\n"),
     "models[0] (id 'my-hub-bert'): full.num_hidden_layer: no field of bert's config; did you mean "
     "num_hidden_layers?"),
    (BLOCK, "models[0] (id 'my-block'): source.config: hidden_sise: no field of bert's config; did you mean "
            "hidden_size?"),
], ids=["tiny", "full", "block config"])
def test_a_key_one_slip_from_a_config_field_is_refused(tmp_path, text, said):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert str(refused.value).startswith(f"{path}: {said}"), str(refused.value)


def test_fields_of_the_config_and_keys_near_none_are_left_alone():
    assert misspelt_config_key({"num_hidden_layers": 2, "n_embd": 8}, "gpt2", "tiny") is None  # attribute_map names
    assert misspelt_config_key({"my_own_field": 1}, "bert", "tiny") is None
    assert misspelt_config_key({"hidden_sise": 1}, "no-such-type", "tiny") is None
    assert misspelt_config_key({"n_layers": 2}, "gpt2", "tiny").startswith("tiny.n_layers: no field of gpt2's config "
                                                                          "(another model type's name for "
                                                                          "num_hidden_layers); write n_layer")
    assert misspelt_config_key({"n_layer": 2}, "bert", "tiny").startswith("tiny.n_layer: no field of bert's config "
                                                                         "(another model type's name for "
                                                                         "num_hidden_layers); write num_hidden_layers")
    assert misspelt_config_key({"num_layer": 2}, "t5", "tiny").startswith("tiny.num_layer: no field of t5's config; "
                                                                        "did you mean num_layers?")


def test_another_model_types_name_for_a_size_is_refused(tmp_path):
    """`tiny: {model_type: bert, n_layer: 2}` (GPT-2's name) built a 12-layer BERT twin: n_layer is near no BERT
    field, so the slip check passed it."""
    path = tmp_path / "r.yaml"
    path.write_text(HUB.format(tiny="n_layer: 2, ", full=""))
    with pytest.raises(RegistryError) as refused:
        load_registry(path)
    assert "tiny.n_layer: no field of bert's config (another model type's name for num_hidden_layers); write " \
           "num_hidden_layers" in str(refused.value), str(refused.value)
