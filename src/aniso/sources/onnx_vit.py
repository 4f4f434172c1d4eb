"""A DINOv2 ViT backbone inside an ONNX graph, read onto transformers' ``Dinov2Model``.

Only the graph's initializers (weight tensors) are read; no operator of the file runs in the model. The exporter kept
the PyTorch names of most parameters (``backbone.embeddings.cls_token``, ``backbone.encoder.layer.N.norm1.weight``,
the linear layers' biases, the layer scales); each linear layer's weight is an anonymous initializer, found as the
constant operand of the MatMul whose output the named bias is added to (transposed: ONNX computes ``x @ W``). The
position embeddings are two anonymous initializers: the class token's (1, 1, d) and the patches' (1, n², d) grid,
which the model interpolates to the input's size as DINOv2 does.

:func:`backbone_output_name` names the graph tensor of the backbone's final LayerNorm, against which a test checks
the mapped model.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["read_onnx_dinov2", "backbone_output_name", "dinov2_image_processor"]

_RENAME = (("attention.attention.query", "attention.q_proj"), ("attention.attention.key", "attention.k_proj"),
           ("attention.attention.value", "attention.v_proj"), ("attention.output.dense", "attention.o_proj"))


def _rename(name: str) -> str:
    for old, new in _RENAME:
        name = name.replace(old, new)
    return name


def read_onnx_dinov2(path: Path | str, prefix: str = "backbone.", num_heads: int | None = None):
    """A ``Dinov2Model`` (eval mode, float32) with the weights of the DINOv2 backbone in the ONNX file ``path``.

    ``prefix``: the backbone's parameter-name prefix in the graph; ``num_heads``: attention heads (default: head
    dimension 64, DINOv2's). The architecture (width, depth, patch size, MLP ratio, position grid) is read off the
    weights. Raises ValueError naming what is missing or ambiguous if the graph is not such a backbone.
    """
    import torch
    from transformers import Dinov2Config, Dinov2Model

    from .onnx_weights import named_state

    state, inits, _ = named_state(path, prefix, _rename)
    if "embeddings.cls_token" not in state or "embeddings.patch_embeddings.projection.weight" not in state:
        raise ValueError(f"{path}: no DINOv2 embeddings under prefix {prefix!r}")
    d = state["embeddings.cls_token"].shape[-1]
    anonymous = {k: v for k, v in inits.items() if not k.startswith(prefix)}
    grids = [v for v in anonymous.values() if v.ndim == 3 and v.shape[0] == 1 and v.shape[2] == d
             and v.shape[1] > 1 and math.isqrt(v.shape[1]) ** 2 == v.shape[1]]
    cls_pos = [v for v in anonymous.values() if v.shape == (1, 1, d)]
    if len(grids) != 1 or len(cls_pos) != 1:
        raise ValueError(f"{path}: expected one patch position grid and one class-token position embedding, found "
                         f"{len(grids)} and {len(cls_pos)}")
    state["embeddings.position_embeddings"] = np.concatenate([cls_pos[0], grids[0]], axis=1)
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    patch = state["embeddings.patch_embeddings.projection.weight"].shape[-1]
    hidden = state["encoder.layer.0.mlp.fc1.weight"].shape[0]
    config = Dinov2Config(hidden_size=d, num_hidden_layers=layers, num_attention_heads=num_heads or d // 64,
                          patch_size=patch, image_size=math.isqrt(grids[0].shape[1]) * patch, mlp_ratio=hidden // d,
                          layerscale_value=1.0)
    model = Dinov2Model(config)
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.array(v, dtype=np.float32, copy=True)) for k, v in state.items()},
                                                strict=False)
    if unexpected or set(missing) - {"embeddings.mask_token"}:
        raise ValueError(f"{path}: weights do not map onto Dinov2Model: missing {sorted(missing)[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")
    return model.float().eval()


def backbone_output_name(path: Path | str, prefix: str = "backbone.") -> str:
    """The graph tensor that is the backbone's last hidden state (the output of its final LayerNorm)."""
    import onnx

    graph = onnx.load(str(path)).graph
    names = [n.output[0] for n in graph.node if n.op_type == "Add" and f"{prefix}layernorm.bias" in n.input]
    if len(names) != 1:
        raise ValueError(f"{path}: no single final LayerNorm of {prefix!r}")
    return names[0]


def dinov2_image_processor():
    """DINOv2's evaluation preprocessing (transformers' PIL backend): shorter side to 256 (bicubic), centre crop
    224 x 224, ImageNet mean and std."""
    from ..inputs.processors import pil_image_processor

    return pil_image_processor("BitImageProcessor", size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224},
                               image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
