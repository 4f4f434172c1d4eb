"""Source kind ``onnx``: ONNX CNNs read with onnxruntime, their block outputs as hidden states: integer-quantised
graphs (QLinear operators) and float ones (e.g. a ResNet with batch norm folded into its convolutions).

A statically quantised ONNX graph (``onnxruntime.quantization``: QLinearConv,
QLinearAdd, ...) stores every activation as uint8 / int8 with a per-tensor
scale and zero point, both initializers named by the node that produces the
tensor (inputs 6 and 7 of QLinearConv and of QLinearAdd: ``y_scale``,
``y_zero_point``). The feature maps are read by adding them to the graph's
outputs and dequantised as ``(q - zero_point) * scale``, so they are the values
the quantised network itself computes with.

Which maps are hidden states (:func:`quantized_block_taps`): the stem's output,
the output of every inverted-residual / bottleneck block (the residual sum
where the block has one, else its 1 x 1 projection after a 3 x 3 convolution),
and the head convolution's output, i.e. the maps between blocks that G §3.2
measures for CNNs. In a float graph (:func:`float_block_taps`) the maps are the stem's (its max pooling, else its
first activation) and every residual block's output (the activation after the residual sum); they are read as
they are.

The file is in the models folder (``path``), or inside an installed pip package (``package`` and ``path`` within
it); ``sha256``, where the registry gives it, is checked before the graph is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field, model_validator
from torch import nn

from ..common.files import sha256_file
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions, in_models_dir
from .builders import TappedCNNOutput

__all__ = ["OnnxSource", "KIND", "quantized_block_taps", "float_block_taps", "OnnxTappedCNN", "onnx_image_processor",
           "model_file"]


class OnnxSource(Strict):
    """A statically quantised (QLinear) ONNX CNN, read with onnxruntime.

    ``path`` is relative to the models folder (setting ``models_dir``) unless absolute. The image processor
    (:func:`onnx_image_processor`) resizes the photograph to ``resize_to`` (``resize: squash``: both sides, as
    GluonCV's ``Resize(resize_to)``; ``shorter-side``: the shorter side, keeping the aspect ratio), bilinear,
    centre-crops ``image_size`` and normalises with ``image_mean`` / ``image_std`` (ImageNet's by default), in RGB
    order, on pixels in [0, 1] (``pixel_scale: 1``) or in [0, 255] (``pixel_scale: 255``, Caffe's convention).
    ``channel_order: bgr`` feeds the channels in BGR order and ``input_layout: nhwc`` channels-last, as graphs
    converted from Caffe / TensorFlow expect. ``package``: the file is ``path`` inside that installed package;
    ``sha256``: the file's checksum, checked before reading.
    """

    kind: Literal["onnx"]
    path: str = Field(min_length=1)
    package: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    distribution: str | None = None
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    image_size: int = Field(default=224, ge=8)
    resize: Literal["squash", "shorter-side"] = "squash"
    resize_to: int = Field(default=256, ge=8)
    image_mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    image_std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    pixel_scale: Literal[1, 255] = 1
    channel_order: Literal["rgb", "bgr"] = "rgb"
    input_layout: Literal["nchw", "nhwc"] = "nchw"

    @model_validator(mode="after")
    def _crop_fits(self) -> "OnnxSource":
        if self.image_size > self.resize_to:
            raise ValueError(f"image_size {self.image_size} is larger than resize_to {self.resize_to}")
        return self


def _kernel(node) -> tuple[int, ...]:
    for a in node.attribute:
        if a.name == "kernel_shape":
            return tuple(a.ints)
    return ()


def _consumers(graph) -> dict[str, list]:
    """Tensor name → the nodes that read it."""
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return consumers


def quantized_block_taps(graph) -> list[str]:
    """Names of the quantised tensors between the blocks of a QLinear CNN graph, in forward order.

    ``graph``: an ``onnx.GraphProto`` in topological order. The taps are the first QLinearConv's output (the
    stem), then for every 1 x 1 QLinearConv fed by a 3 x 3 QLinearConv (a block's projection) the projection's
    output or, if it only goes into a QLinearAdd (the block's residual branch), that residual sum, and last the final QLinearConv's output (the head)
    if it is not a projection itself. Raises ValueError if the graph has no QLinearConv.
    """
    producer = {out: node for node in graph.node for out in node.output}
    consumers = _consumers(graph)
    convs = [n for n in graph.node if n.op_type == "QLinearConv"]
    if not convs:
        raise ValueError("no QLinearConv node: not a statically quantised CNN")
    taps = [convs[0].output[0]]
    for conv in convs[1:]:
        source = producer.get(conv.input[0])
        if _kernel(conv) == (1, 1) and source is not None and source.op_type == "QLinearConv" \
                and _kernel(source) == (3, 3):
            out = conv.output[0]
            users = consumers.get(out, [])
            # The residual branch of a block goes only into its sum; a block output without a residual also
            # feeds the next block (and, as its skip input, the next block's sum).
            residual = len(users) == 1 and users[0].op_type == "QLinearAdd"
            taps.append(users[0].output[0] if residual else out)
    if convs[-1].output[0] not in taps:
        taps.append(convs[-1].output[0])
    return taps


def float_block_taps(graph) -> list[str]:
    """Names of the float tensors between the blocks of a residual CNN graph, in forward order.

    The stem's output (the first MaxPool's, else the first Relu's), then the output of every residual block: the
    Relu applied to a residual sum (an Add of two feature maps whose only consumer is a Relu), or the sum itself
    where no Relu follows. Raises ValueError if the graph has no Conv.
    """
    if not any(n.op_type == "Conv" for n in graph.node):
        raise ValueError("no Conv node: not a CNN")
    consumers = _consumers(graph)
    inits = {i.name for i in graph.initializer}
    stem = next((n for n in graph.node if n.op_type == "MaxPool"), None) \
        or next(n for n in graph.node if n.op_type == "Relu")
    taps = [stem.output[0]]
    for node in graph.node:
        if node.op_type != "Add" or any(i in inits for i in node.input):
            continue  # a bias addition, not a residual sum
        users = consumers.get(node.output[0], [])
        if len(users) == 1 and users[0].op_type == "Relu":
            taps.append(users[0].output[0])
        elif users and all(u.op_type in ("Conv", "Add", "MaxPool", "AveragePool", "GlobalAveragePool") for u in users):
            taps.append(node.output[0])
    return taps


def _quantization(graph, tensor: str) -> tuple[str, str]:
    """(scale, zero point) initializer names of a tensor produced by QLinearConv / QLinearAdd."""
    for node in graph.node:
        if tensor in node.output:
            if node.op_type not in ("QLinearConv", "QLinearAdd"):
                raise ValueError(f"tap {tensor!r} is produced by {node.op_type}, not QLinearConv / QLinearAdd")
            return node.input[6], node.input[7]
    raise ValueError(f"no node produces tap {tensor!r}")


class OnnxTappedCNN(nn.Module):
    """A quantised ONNX CNN that answers like a transformers vision model.

    ``model(pixel_values=x, output_hidden_states=True)`` with ``x`` a float (B, 3, H, W) tensor returns a
    :class:`~aniso.sources.builders.TappedCNNOutput`: ``logits`` (B, classes), the graph's (dequantised) output,
    and ``hidden_states``, the dequantised (B, C, H', W') maps of :func:`quantized_block_taps`. Runs on the CPU
    with onnxruntime whatever ``.to()`` says (the module has no parameters).

    Raises ImportError naming the package if onnx or onnxruntime is missing, ValueError if the graph is not a
    QLinear CNN with one image input.
    """

    def __init__(self, path: Path | str, threads: int | None = None, channel_order: str = "rgb",
                 input_layout: str = "nchw"):
        super().__init__()
        try:
            import onnx
            import onnxruntime as ort
        except ImportError as exc:
            raise ImportError(f"reading ONNX models needs onnx and onnxruntime (pip install onnx onnxruntime): "
                              f"{exc}") from None
        model = onnx.load(str(path))
        graph = model.graph
        inits = {i.name: i for i in graph.initializer}
        inputs = [i.name for i in graph.input if i.name not in inits]
        if len(inputs) != 1:
            raise ValueError(f"{path}: expected one image input, found {inputs}")
        self.input_name = inputs[0]
        self.output_name = graph.output[0].name
        self.channel_order, self.input_layout = channel_order, input_layout
        self.quantized = any(n.op_type == "QLinearConv" for n in graph.node)
        self.taps = quantized_block_taps(graph) if self.quantized else float_block_taps(graph)
        self._dequant = []
        for tap in self.taps:
            if self.quantized:
                scale, zero = _quantization(graph, tap)
                zp = onnx.numpy_helper.to_array(inits[zero])
                self._dequant.append((float(onnx.numpy_helper.to_array(inits[scale])), float(zp)))
                dtype = inits[zero].data_type
            else:
                self._dequant.append((1.0, 0.0))
                dtype = onnx.TensorProto.FLOAT
            graph.output.append(onnx.helper.make_tensor_value_info(tap, dtype, None))
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        self.config = None

    def forward(self, pixel_values: torch.Tensor, output_hidden_states: bool = False) -> TappedCNNOutput:
        x = pixel_values.detach().cpu().float().numpy()
        if self.channel_order == "bgr":
            x = x[:, ::-1]
        if self.input_layout == "nhwc":
            x = x.transpose(0, 2, 3, 1)
        x = np.ascontiguousarray(x)
        names = [self.output_name] + (self.taps if output_hidden_states else [])
        outs = self._session.run(names, {self.input_name: x})
        logits = torch.from_numpy(np.asarray(outs[0], dtype=np.float32))
        if not output_hidden_states:
            return TappedCNNOutput(logits, None)
        maps = tuple(torch.from_numpy((q.astype(np.float32) - zp) * scale)
                     for q, (scale, zp) in zip(outs[1:], self._dequant))
        return TappedCNNOutput(logits, maps)


def onnx_image_processor(image_size: int, resize: str, resize_to: int, image_mean, image_std,
                         pixel_scale: int = 1) -> Any:
    """The image processor of an ONNX CNN (transformers' PIL backend, bilinear).

    ``resize="squash"``: the photograph to ``resize_to`` x ``resize_to`` whatever its aspect ratio (GluonCV's
    ``transforms.Resize(resize_to)``, ``keep_ratio=False``, which the ONNX Model Zoo's MXNet-trained CNNs were
    evaluated with); ``"shorter-side"``: the shorter side to ``resize_to``. Then a centre crop of ``image_size`` x
    ``image_size``, rescaling to [0, 1] (``pixel_scale`` 1; 255 keeps the pixels in [0, 255]) and ``(x - mean) /
    std`` per channel, RGB order. Raises ValueError for another ``resize``.
    """
    from PIL import Image

    from ..inputs.processors import pil_image_processor

    common = dict(resample=Image.Resampling.BILINEAR, crop_size={"height": image_size, "width": image_size},
                  image_mean=list(image_mean), image_std=list(image_std), do_rescale=pixel_scale == 1)
    if resize == "squash":
        return pil_image_processor("DeiTImageProcessor", size={"height": resize_to, "width": resize_to}, **common)
    if resize == "shorter-side":
        return pil_image_processor("BitImageProcessor", size={"shortest_edge": resize_to}, **common)
    raise ValueError(f"resize must be 'squash' or 'shorter-side', got {resize!r}")


def model_file(entry, ctx: SourceContext) -> Path:
    """The entry's ONNX file: ``path`` inside the installed ``package``, else relative to the models folder (setting
    ``models_dir``) unless absolute. Raises ModelUnavailable naming the model if the package, the folder or the file
    is missing, or the file's SHA-256 is not the registry's."""
    src = entry.source
    if src.package:
        from .parts import package_file

        path = package_file(entry, src.package, src.path)
    else:
        path = in_models_dir(entry, ctx, src.path, "model file")
    if src.sha256 and sha256_file(path) != src.sha256:
        raise ModelUnavailable(f"{entry.id}: {path} has another SHA-256 than the registry's {src.sha256}")
    return path


def fingerprint(entry, ctx: SourceContext) -> str:
    """``onnx:<file sha256 prefix>:<preprocessing>``."""
    check_permissions(entry)
    src = entry.source
    pre = (f"{src.resize}{src.resize_to}/{src.image_size}/{src.image_mean}/{src.image_std}"
           + (f"/x{src.pixel_scale}/{src.channel_order}/{src.input_layout}"
              if (src.pixel_scale, src.channel_order, src.input_layout) != (1, "rgb", "nchw") else ""))
    path = model_file(entry, ctx)  # checks the registry's sha256, where given: no second hash of the file
    return f"onnx:{(src.sha256 or sha256_file(path))[:16]}:{pre}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    check_permissions(entry)
    src, path = entry.source, model_file(entry, ctx)
    try:
        model = OnnxTappedCNN(path, channel_order=src.channel_order, input_layout=src.input_layout)
    except ImportError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    except Exception as exc:  # onnx / onnxruntime raise their own types for unreadable graphs
        raise ModelUnavailable(f"{entry.id}: could not read {path} as an ONNX CNN: "
                               f"{str(exc)[:300]}") from None
    processor = onnx_image_processor(src.image_size, src.resize, src.resize_to, src.image_mean, src.image_std,
                                     src.pixel_scale)
    return LoadedModel(entry, model, None, f"onnx: {path} (onnxruntime, "
                       f"{'int8 maps dequantised' if model.quantized else 'float maps'}, {len(model.taps)} maps)",
                       processor)


def _vision_cnn_only(entry) -> str | None:
    if (entry.modality, entry.architecture) != ("vision", "cnn"):
        return "an onnx source is a CNN: it needs modality 'vision' and architecture 'cnn'"
    return None


KIND = SourceKind("onnx", OnnxSource, fingerprint, load, check_entry=_vision_cnn_only)
