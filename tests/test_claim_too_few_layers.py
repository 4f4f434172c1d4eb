"""A claim that takes a trend over depth, on a model that gave too few layers: refused naming the row and the count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
IMAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "images" / "caltech101"


def _one_map_cnn(path: Path) -> None:
    """A float ONNX CNN of one block (a strided 3 x 3 Conv and its ReLU, then pooling and a classifier by a weight):
    the onnx source reads one feature map from it, the stem's."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "cw"),
             numpy_helper.from_array(rng.normal(size=(5, 4)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "cw"], ["c"], kernel_shape=[3, 3], strides=[4, 4]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]), helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_a_cnn_of_fewer_than_3_feature_maps_is_refused_for_the_depth_trend_naming_the_row_and_the_count(tmp_path):
    """G.cnn-mostly-isotropic takes a Spearman trend of avg cos over depth (3 points at least); an ONNX CNN whose
    graph gave one feature map ended in a claim error, "ValueError: a trend needs at least 3 points, got 1", naming
    neither the row nor the cause. It is refused (exit 2) in one line naming the row, the claim and the count."""
    images = Path(os.environ.get("ANISO_IMAGE_DIR", IMAGES)).resolve()  # (CI's is relative; the run is elsewhere)
    if not images.is_dir():
        pytest.skip(f"no photographs at {images}")
    _one_map_cnn(tmp_path / "one.onnx")
    registry = tmp_path / "models.yaml"
    registry.write_text((ROOT / "models.yaml").read_text() + (
        "\n- id: one-map\n  description: a one-block CNN\n"
        f"  source: {{kind: onnx, path: {tmp_path / 'one.onnx'}, resize_to: 32, image_size: 32}}\n"
        "  modality: vision\n  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: resnet\n"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    env |= {"ANISO_IMAGE_DIR": str(images), "ANISO_N_IMAGES": "64", "ANISO_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "aniso.cli", "run", "one-map", "--registry", str(registry),
                           "--claims", "G.cnn-mostly-isotropic"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out[-3000:]
    assert "a trend needs at least 3 points" not in out
    assert ("refused: one-map: G.cnn-mostly-isotropic takes a trend over depth, on at least 3 layers (a CNN's "
            "feature maps: its stem's and each block's output); the model gave 1 (named 0); give a model with at "
            "least 3") in out, out[-3000:]
