"""The dtype of an in-memory model's weights, recorded where a registry row's is: ``aniso.measure(model)`` of the same
weights in float32 and in bfloat16 recorded the same origin and fingerprint and no dtype, so the two results read as
measured on the same inputs, while their numbers differ."""

from __future__ import annotations

import pytest
import torch

import aniso
from tiny_gpt2 import tiny_gpt2

TEXTS = ["the cat sat on the mat and looked at the dog", "a dog ran in the park with a red ball",
         "rain fell on the old town all night long", "she read the letter twice before she slept"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("ANISO_PROGRESS", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


_tiny_gpt2 = tiny_gpt2


def test_the_same_weights_in_float32_and_bfloat16_are_told_apart():
    model, tok = _tiny_gpt2()
    f32 = aniso.measure(model, TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False)
    b16 = aniso.measure(model.to(torch.bfloat16), TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False)
    for stats, dtype in ((f32, "float32"), (b16, "bfloat16")):
        # where a registry row's source fields, its dtype among them, are recorded (meta["source"]["fields"])
        assert stats.meta["source"]["fields"]["dtype"] == dtype, stats.meta.get("source")
        assert stats.to_dict()["meta"]["source"]["fields"]["dtype"] == dtype
        assert stats.meta["origin"] == f"in-memory GPT2Model (tiny-gpt2, {dtype} weights)", stats.meta["origin"]
        assert stats.meta["device"] == "cpu"  # the device kind it ran on
    # float32 keeps the fingerprint it had; another dtype is named in it, as a registry row's placement is
    assert f32.meta["fingerprint"] == "in-memory:tiny-gpt2"
    assert b16.meta["fingerprint"] == "in-memory:tiny-gpt2:bfloat16"
    assert f32.inputs == b16.inputs  # the same texts: only the weights' dtype tells the two apart


def test_weights_in_several_dtypes_are_named_by_each():
    model, tok = _tiny_gpt2()
    model.to(torch.bfloat16)
    model.ln_f.float()  # the final norm kept in float32, as mixed-precision recipes keep norms
    stats = aniso.measure(model, TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False)
    assert stats.meta["source"]["fields"]["dtype"] == "bfloat16+float32"
    assert "bfloat16+float32 weights" in stats.meta["origin"]


def test_a_model_whose_parts_cannot_run_together_in_their_dtypes_is_refused_in_one_line():
    """Embeddings in bfloat16 before blocks in float32: torch's dtype mismatch inside the forward pass (100 lines of
    traceback) becomes one line naming model, each dtype with its first parameter, and the cast that runs it."""
    model, tok = _tiny_gpt2()
    model.to(torch.bfloat16)
    model.h.float()
    with pytest.raises(ValueError) as info:
        aniso.measure(model, TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False)
    said = str(info.value)
    assert "\n" not in said and said.startswith("model: its parameters hold 2 floating dtypes, bfloat16 (first: wte."), said
    assert "float32 (first: h.0." in said and "model.to(torch.bfloat16) or model.to(torch.float32)" in said, said
    assert next(model.parameters()).dtype == torch.bfloat16 and not model.training  # the model as it was given


def test_the_report_names_the_weights_dtype_beside_the_origin(tmp_path):
    """The report's layer-wise tables name each model's origin: an in-memory model's names its dtype, and a hub row
    whose origin does not gets its source's dtype beside it."""
    from aniso.judge.results import ModelLayers, ResultsDocument, provenance
    from aniso.report import render_html

    model, tok = _tiny_gpt2()
    b16 = aniso.measure(model.to(torch.bfloat16), TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False).to_dict()
    hub_meta = dict(b16["meta"], origin="hub: org/tiny@main (commit 0123456789ab, downloaded)",
                    source={"fields": {"kind": "hub", "repo": "org/tiny", "revision": "main", "dtype": "float16"},
                            "registry_dir": None})
    models = {"tiny-gpt2": ModelLayers(layer_names=b16["layer_names"], layers=b16["layers"], meta=b16["meta"]),
              "tiny-hub": ModelLayers(layer_names=b16["layer_names"], layers=b16["layers"], meta=hub_meta)}
    html = render_html(ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[], models=models))
    assert "in-memory GPT2Model (tiny-gpt2, bfloat16 weights) · 4 inputs" in html
    assert "hub: org/tiny@main (commit 0123456789ab, downloaded) · float16 weights · 4 inputs" in html


def test_a_dynamically_quantised_model_is_told_apart_from_its_float_model(tmp_path):
    """``torch.ao.quantization.quantize_dynamic`` keeps each Linear's int8 weight in ``_packed_params``, outside
    ``parameters()``: the quantised model was labelled "float32 weights" and fingerprinted as its float model was."""
    import copy
    import warnings

    from transformers import AutoTokenizer, BertModel

    from word_bert import TEXTS as WORDS, word_bert

    folder = word_bert(tmp_path / "bert")
    model, tok = BertModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of its quantised tensors
        quantised = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)
        f32 = aniso.measure(model, WORDS, tokenizer=tok, name="b", statistics="first-order", progress=False)
        q8 = aniso.measure(quantised, WORDS, tokenizer=tok, name="b", statistics="first-order", progress=False)
    assert f32.meta["source"]["fields"]["dtype"] == "float32"
    dtype = q8.meta["source"]["fields"]["dtype"]
    assert "qint8" in dtype.split("+") and "float32" in dtype.split("+"), dtype  # embeddings and norms stay float32
    assert f"{dtype} weights" in q8.meta["origin"], q8.meta["origin"]
    assert q8.meta["fingerprint"] != f32.meta["fingerprint"]
    assert q8.meta["fingerprint"] == f"in-memory:b:{dtype}"
