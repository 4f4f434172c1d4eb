"""The model of source kind ``onnx`` (:mod:`aniso.sources.onnx_cnn`): an ONNX CNN run by onnxruntime that answers
like a transformers vision model. Imported when such a model is loaded (it needs torch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from .builders import TappedCNNOutput
from .onnx_graph import NotACNN, attention_found, float_block_taps, quantization, quantized_block_taps, unsigned_weights

__all__ = ["OnnxTappedCNN"]


class OnnxTappedCNN(nn.Module):
    """A quantised ONNX CNN that answers like a transformers vision model.

    ``model(pixel_values=x, output_hidden_states=True)`` with ``x`` a float (B, 3, H, W) tensor returns a
    :class:`~aniso.sources.builders.TappedCNNOutput`: ``logits`` (B, classes), the graph's (dequantised) output,
    and ``hidden_states``, the dequantised (B, C, H', W') maps of :func:`quantized_block_taps`. Runs on the CPU
    with onnxruntime whatever ``.to()`` says (the module has no parameters). The int8 weights of its integer
    products are read as uint8 (:func:`~aniso.sources.onnx_graph.unsigned_weights`), so that its maps are the
    graph's exact integer arithmetic on any x86-64 CPU.

    Raises ImportError naming the package if onnx or onnxruntime is missing, NotACNN (a ValueError) naming what was
    found if the graph holds attention (:func:`~aniso.sources.onnx_graph.attention_found`), ValueError if the graph
    is not a CNN with one image input.
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
        attention = attention_found(graph)
        if attention is not None:
            raise NotACNN(f"its graph holds attention, not a CNN's blocks: {attention}")
        if len(inputs) != 1:
            raise ValueError(f"{path}: expected one image input, found {inputs}")
        self.input_name = inputs[0]
        image_input = next(i for i in graph.input if i.name == inputs[0])
        #: The graph input's dimensions, None where it leaves one free (a symbolic or unset dimension).
        self.input_dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                           for d in image_input.type.tensor_type.shape.dim]
        self.output_name = graph.output[0].name
        self.channel_order, self.input_layout = channel_order, input_layout
        self.quantized = any(n.op_type == "QLinearConv" for n in graph.node)
        self.taps = quantized_block_taps(graph) if self.quantized else float_block_taps(graph)
        self._dequant = []
        for tap in self.taps:
            if self.quantized:
                scale, zero = quantization(graph, tap)
                zp = onnx.numpy_helper.to_array(inits[zero])
                self._dequant.append((float(onnx.numpy_helper.to_array(inits[scale])), float(zp)))
                dtype = inits[zero].data_type
            else:
                self._dequant.append((1.0, 0.0))
                dtype = onnx.TensorProto.FLOAT
            graph.output.append(onnx.helper.make_tensor_value_info(tap, dtype, None))
        if self.quantized:  # exact integer products on every x86-64 CPU (see unsigned_weights)
            unsigned_weights(graph)
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
