"""PyTorch weights recovered from the initializers of an ONNX graph exported from PyTorch.

``torch.onnx.export`` keeps the PyTorch names of biases, LayerNorm parameters and embeddings, but gives each linear
layer's weight an anonymous name (``onnx::MatMul_470``) and stores it transposed (ONNX computes ``x @ W``). The weight
is found as the constant operand of the MatMul whose output the layer's named bias is added to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["named_state"]


def named_state(path: Path | str, prefix: str, rename: Callable[[str], str] = lambda name: name):
    """The graph ``path``'s parameters named under ``prefix``, as a state dict, and the graph itself.

    Returns ``(state, inits, graph)``: ``state`` maps ``rename(name without prefix)`` to a NumPy array, with every
    linear layer's ``weight`` (out, in) recovered from its MatMul; ``inits`` every initializer by name (the anonymous
    ones too); ``graph`` the ONNX graph. Raises ValueError if nothing is named under ``prefix``; ImportError without
    the ``onnx`` package.
    """
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    state = {rename(k[len(prefix):]): v for k, v in inits.items() if k.startswith(prefix)}
    if not state:
        raise ValueError(f"{path}: no initializer is named under {prefix!r}")
    for node in graph.node:
        if node.op_type != "Add":
            continue
        bias = [i for i in node.input if i.startswith(prefix) and i.endswith(".bias")]
        other = [i for i in node.input if i not in inits]
        source = producer.get(other[0]) if other else None
        if bias and source is not None and source.op_type == "MatMul":
            weight = [i for i in source.input if i in inits]
            if weight:
                state[rename(bias[0][len(prefix):-len("bias")]) + "weight"] = np.ascontiguousarray(inits[weight[0]].T)
    return state, inits, graph
