"""A BERT encoder inside an ONNX graph exported from sentence-transformers, read onto transformers' ``BertModel``.

Only the graph's initializers are read (:func:`aniso.sources.onnx_weights.named_state`); no operator of the file
runs in the model. The architecture (width, depth, MLP width, vocabulary, positions) is read off the weights and the
number of attention heads off the graph's own reshape of the first layer's queries into (heads, head dimension).
:func:`last_hidden_state_name` names the graph tensor of the encoder's last LayerNorm, against which a test checks
the mapped model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_onnx_bert", "last_hidden_state_name"]

#: Where sentence-transformers' exporter puts the transformer's parameters (module 0 of the pipeline).
SENTENCE_TRANSFORMERS_PREFIX = "model.0.auto_model."


def _constant(graph, name: str):
    from onnx import numpy_helper

    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            return next(numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value")
    return None


def _num_heads(graph, inits: dict, prefix: str, d: int) -> int | None:
    """Heads of the first layer's attention: the reshape of its queries to (batch, tokens, heads, head dim)."""
    producer = {out: node for node in graph.node for out in node.output}
    query_bias = f"{prefix}encoder.layer.0.attention.self.query.bias"
    adds = {node.output[0] for node in graph.node if node.op_type == "Add" and query_bias in node.input}
    for node in graph.node:
        if node.op_type != "Reshape" or node.input[0] not in adds:
            continue
        shape = inits.get(node.input[1])
        if shape is None:
            shape = _constant(graph, node.input[1])
        if shape is None and node.input[1] in producer and producer[node.input[1]].op_type == "Concat":
            parts = [inits.get(i) if i in inits else _constant(graph, i) for i in producer[node.input[1]].input]
            shape = [int(np.asarray(p).reshape(-1)[0]) if p is not None else -1 for p in parts]
        if shape is not None and len(shape) == 4 and shape[2] > 0 and shape[2] * shape[3] == d:
            return int(shape[2])
    return None


def read_onnx_bert(path: Path | str, prefix: str = SENTENCE_TRANSFORMERS_PREFIX):
    """A ``BertModel`` (eval mode, float32, no pooler) with the weights of the BERT encoder in the ONNX file ``path``.

    ``prefix``: the encoder's parameter-name prefix in the graph (sentence-transformers' by default). Raises
    ValueError naming what is missing if the graph is not such an encoder, or if its head count cannot be read.
    """
    import torch
    from transformers import BertConfig, BertModel

    from .onnx_weights import named_state

    state, inits, graph = named_state(path, prefix)
    if "embeddings.word_embeddings.weight" not in state or "encoder.layer.0.attention.self.query.weight" not in state:
        raise ValueError(f"{path}: no BERT embeddings and query projection under prefix {prefix!r}")
    vocab, d = state["embeddings.word_embeddings.weight"].shape
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    heads = _num_heads(graph, inits, prefix, d)
    if heads is None:
        raise ValueError(f"{path}: the number of attention heads is not readable from the graph")
    config = BertConfig(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=state["encoder.layer.0.intermediate.dense.weight"].shape[0],
                        max_position_embeddings=state["embeddings.position_embeddings.weight"].shape[0],
                        type_vocab_size=state["embeddings.token_type_embeddings.weight"].shape[0])
    model = BertModel(config, add_pooling_layer=False)
    tensors = {k: torch.from_numpy(np.array(v, dtype=np.float32, copy=True)) for k, v in state.items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if unexpected or missing:
        raise ValueError(f"{path}: weights do not map onto BertModel: missing {sorted(missing)[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")
    return model.float().eval()


def last_hidden_state_name(path: Path | str, prefix: str = SENTENCE_TRANSFORMERS_PREFIX) -> str:
    """The graph tensor that is the encoder's last hidden state (the output of its last layer's output LayerNorm)."""
    import onnx

    graph = onnx.load(str(path)).graph
    layers = {n.name.split("layer.")[1].split("/")[0] for n in graph.node if "/encoder/layer." in n.name}
    last = max(int(x) for x in layers)
    weight = f"{prefix}encoder.layer.{last}.output.LayerNorm.weight"
    names = [n.output[0] for n in graph.node if weight in n.input]
    if len(names) != 1:
        raise ValueError(f"{path}: no single output LayerNorm of layer {last}")
    return names[0]
