"""Registry fields of a model that is not in the registry, from its config (aniso.sources.detect)."""

from __future__ import annotations

import json
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


def test_a_config_whose_architectures_belong_to_another_model_type_is_not_detected():
    """model_type bert with architectures [GPT2LMHeadModel] (transformers' class of gpt2): was detected as a decoder
    and BERT weights measured as one; the contradiction is refused naming both. An architecture transformers does not
    know (a custom class) leaves model_type to decide."""
    bert = {"model_type": "bert", "vocab_size": 30522, "num_hidden_layers": 2, "num_attention_heads": 2}
    with pytest.raises(UndetectableModel, match=r"config\.json says model_type 'bert' but architectures "
                                                r"\['GPT2LMHeadModel'\], transformers' class\(es\) of model_type "
                                                r"'gpt-sw3' or 'gpt2': the config contradicts itself"):
        entry_fields(bert | {"architectures": ["GPT2LMHeadModel"]})
    assert entry_fields(bert | {"architectures": ["MyCustomBert"]})["role"] == "encoder"
    assert entry_fields(bert | {"architectures": ["BertForMaskedLM"]})["role"] == "encoder"


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
    # past the check: no weights here
    with pytest.raises(ModelUnavailable, match=r"no \.safetensors weights \(the suite loads safetensors only\)"):
        load_model(control)
    with pytest.raises(ValueError, match="^mamba-130m: model_type 'mamba' is a state-space model"):
        build_tiny_model(_entry(tmp_path, tiny={"model_type": "mamba", "hidden_size": 8, "num_hidden_layers": 1}))


# -- files and folders in the formats the source kinds read (aniso run PATH) --------------------------------------

def _llama2c(path: Path, dim=16, hidden=24, layers=2, heads=4, kv_heads=2, vocab=40, seq_len=32) -> Path:
    """A llama2.c legacy checkpoint of random weights (tied classifier)."""
    import struct

    import numpy as np

    hs, kv = dim // heads, kv_heads * (dim // heads)
    n = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hidden * dim) + dim + seq_len * hs
    path.write_bytes(struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab, seq_len)
                     + np.random.default_rng(0).standard_normal(n).astype("<f4").tobytes())
    return path


def _onnx_cnn(path: Path, shape=(1, 3, 32, 32)) -> Path:
    """A float ONNX CNN: a convolution and ReLU stem with max pooling, one residual block, global pooling."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    channels = shape[1] if shape[1] in (3,) else shape[3]
    inits = [numpy_helper.from_array(rng.standard_normal((8, channels, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["p1", "c2"], ["s2"]), helper.make_node("Relu", ["s2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["y"])]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_every_format_a_source_kind_detects_comes_from_the_table_of_source_kinds():
    from aniso.sources import SOURCE_KINDS

    assert {k.name for k in SOURCE_KINDS.values() if k.detect is not None} == {"local", "llama2c", "onnx"}
    assert all(k.detects for k in SOURCE_KINDS.values() if k.detect is not None)


def test_a_llama2c_checkpoint_is_detected_with_the_tokenizer_beside_it(tmp_path):
    from aniso.registry.entries import ModelEntry
    from aniso.sources import SourceContext, source_fingerprint
    from aniso.sources.detect import detect_entry

    path = _llama2c(tmp_path / "stories-mini.bin")
    with pytest.raises(UndetectableModel, match=r"stories-mini.bin: a llama2.c checkpoint \(2 layers, width 16, "
                                                r"vocabulary 40\) without the Hugging Face tokenizer"):
        detect_entry(str(path))
    (tmp_path / "tokenizer.json").write_text("{}")
    row = detect_entry(str(path))
    assert row["id"] == "stories-mini" and row["source"] == {"kind": "llama2c", "path": str(path.resolve()),
                                                             "tokenizer": str(tmp_path.resolve())}
    assert (row["modality"], row["role"], row["family"]) == ("text", "decoder", "llama")
    entry = ModelEntry.model_validate(row)
    assert source_fingerprint(entry, SourceContext()).startswith("llama2c:")
    path.write_bytes(path.read_bytes()[:-4])  # a size the header does not imply: no llama2.c checkpoint
    with pytest.raises(UndetectableModel, match="not in a format aniso reads: a transformers model folder"):
        detect_entry(str(path))


def test_an_onnx_cnn_is_detected_and_loads(tmp_path):
    pytest.importorskip("onnxruntime")
    from aniso.registry.entries import ModelEntry
    from aniso.sources import SourceContext, load_model
    from aniso.sources.detect import detect_entry

    row = detect_entry(str(_onnx_cnn(tmp_path / "tiny-cnn.onnx")))
    assert row["id"] == "tiny-cnn" and row["source"]["kind"] == "onnx" and row["source"]["image_size"] == 32
    assert (row["modality"], row["granularity"], row["architecture"]) == ("vision", "pixel", "cnn")
    loaded = load_model(ModelEntry.model_validate(row), SourceContext())
    assert len(loaded.model.taps) == 2  # the stem after max pooling, the residual block
    last = detect_entry(str(_onnx_cnn(tmp_path / "last.onnx", shape=(1, 64, 64, 3))))
    assert last["source"]["input_layout"] == "nhwc" and last["source"]["image_size"] == 64


def test_onnx_files_that_are_no_cnn_on_photographs_are_refused_in_one_line(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from aniso.sources.detect import detect_entry

    text = tmp_path / "text.onnx"
    graph = helper.make_graph([helper.make_node("Relu", ["ids"], ["y"])], "g",
                              [helper.make_tensor_value_info("ids", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), str(text))
    with pytest.raises(UndetectableModel, match=r"text.onnx: an ONNX graph whose input is not one batch of colour"):
        detect_entry(str(text))
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00not onnx at all")
    with pytest.raises(UndetectableModel, match=r"junk.onnx: not a readable ONNX file"):
        detect_entry(str(junk))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UndetectableModel, match=r"empty: not in a format aniso reads: a transformers model folder "
                                                r"with config.json, an ONNX CNN file \(.onnx\) or a llama2.c"):
        detect_entry(str(tmp_path / "empty"))


def _tiny_distilbert(tokenizer_dir, folder=None):
    """A 2-layer DistilBERT (config fields ``n_layers``, ``dim``, ``n_heads``) over the tiny BERT's tokenizer; saved
    with its tokenizer to ``folder`` where given."""
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForMaskedLM, DistilBertModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = DistilBertConfig(vocab_size=len(tokenizer), dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                              max_position_embeddings=64)
    if folder is None:
        return DistilBertModel(config).eval(), tokenizer
    DistilBertForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_a_distilbert_is_detected_through_transformers_attribute_map(tiny_bert_dir, tmp_path):
    """DistilBERT names its layer count n_layers (transformers' attribute_map: num_hidden_layers -> n_layers): a
    saved folder and an in-memory model are detected as text encoders, not refused as of unknown modality; so is any
    config whose layer count transformers maps (XLM's n_layers, GPT-2's n_layer)."""
    import aniso

    folder = _tiny_distilbert(tiny_bert_dir, tmp_path / "distil")
    row = registry_entry(str(folder), json.loads((folder / "config.json").read_text()))
    assert (row["modality"], row["granularity"], row["architecture"], row["role"], row["family"]) == \
        ("text", "subword", "transformer", "encoder", "distilbert")
    assert entry_fields({"model_type": "xlm", "vocab_size": 100, "n_layers": 2, "n_heads": 2})["modality"] == "text"
    model, tokenizer = _tiny_distilbert(tiny_bert_dir)
    texts = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(5 + i % 9)) for i in range(12)]
    stats = aniso.measure(model, texts, tokenizer=tokenizer,
                          settings={"cache_dir": str(tmp_path / "cache"), "n_bootstrap": 0}, statistics="first-order")
    assert len(stats.to_frame()) == 3 and stats.to_frame()["dim"].eq(32).all()


def test_the_attribute_maps_read_as_data_equal_those_transformers_imports():
    """``detect._attribute_map`` reads a config class's ``attribute_map`` from transformers' source without importing
    it (importing the configurations imports torch, which ``aniso list`` does without): the imported classes' maps."""
    from transformers import BartConfig, BertConfig, DistilBertConfig, GPT2Config, T5Config, XLMConfig

    from aniso.sources.detect import _attribute_map

    for cls in (BartConfig, BertConfig, DistilBertConfig, GPT2Config, T5Config, XLMConfig):
        assert _attribute_map(cls.model_type) == dict(cls.attribute_map), cls.model_type
    assert _attribute_map("no-such-model-type") is None
@pytest.mark.parametrize(("shape", "fields", "needle"), [
    ((1, 3, 32, 32), {"input_layout": "nhwc"}, r"source\.input_layout 'nhwc' does not fit its graph input 'x' of "
                                              r"shape \[1, 3, 32, 32\]: the graph takes channels first "
                                              r"\(input_layout: nchw\)"),
    ((1, 32, 32, 3), {"input_layout": "nchw"}, r"source\.input_layout 'nchw' .* \[1, 32, 32, 3\]: the graph takes "
                                              r"channels last \(input_layout: nhwc\)"),
    ((1, 3, 32, 32), {"image_size": 24}, r"source\.image_size 24 does not fit its graph input 'x' of shape "
                                         r"\[1, 3, 32, 32\] \(nchw\): the graph takes 32 x 32 images \(image_size: 32"),
])
def test_an_onnx_row_whose_images_do_not_fit_the_graph_input_is_refused_naming_the_field(tmp_path, shape, fields,
                                                                                          needle):
    """`input_layout: nhwc` on a channels-first graph, or `image_size: 100` on a graph fixed at 224, stopped the
    first batch with onnxruntime's InvalidArgument traceback (a claim "error" in its words under aniso run)."""
    pytest.importorskip("onnxruntime")
    from aniso.registry.entries import ModelEntry
    from aniso.sources import ModelRefused, SourceContext, load_model
    from aniso.sources.detect import detect_entry

    row = detect_entry(str(_onnx_cnn(tmp_path / "tiny-cnn.onnx", shape=shape)))
    row["source"] |= {"resize_to": 40, **fields}
    with pytest.raises(ModelRefused, match=needle):
        load_model(ModelEntry.model_validate(row), SourceContext())


def test_aniso_stats_of_an_onnx_row_of_another_layout_is_one_line_exit_2(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    import yaml

    from aniso.cli import main
    from aniso.sources.detect import detect_entry

    row = detect_entry(str(_onnx_cnn(tmp_path / "tiny-cnn.onnx")))
    row["source"]["input_layout"] = "nhwc"
    registry = tmp_path / "r.yaml"
    registry.write_text(yaml.safe_dump({"models": [row]}), encoding="utf-8")
    assert main(["stats", row["id"], "--registry", str(registry)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "source.input_layout 'nhwc'" in err


def test_an_older_sentence_transformers_folder_points_at_its_transformer_subfolder(tmp_path):
    """modules.json + 0_Transformer/ (config.json, weights, tokenizer) and no config.json at the top: "not in a
    format aniso reads", while `aniso stats FOLDER/0_Transformer` measures it."""
    import json

    from aniso.sources.detect import detect_entry

    folder = tmp_path / "st"
    (folder / "0_Transformer").mkdir(parents=True)
    (folder / "1_Pooling").mkdir()
    (folder / "0_Transformer" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    with pytest.raises(UndetectableModel) as caught:
        detect_entry(str(folder))
    assert str(caught.value) == (f"{folder}: not in a format aniso reads as a folder (a transformers model folder "
                                 "has config.json); it is a sentence-transformers folder whose modules.json puts its "
                                 f"Transformer in 0_Transformer/, a transformers model folder: give that folder "
                                 f"({folder / '0_Transformer'})")
