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

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..common.files import check_readable, sha256_file
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions, in_models_dir
from .onnx_graph import NotACNN, float_block_taps, quantized_block_taps

__all__ = ["OnnxSource", "KIND", "quantized_block_taps", "float_block_taps", "OnnxTappedCNN", "onnx_image_processor",
           "model_file", "input_shape_problem",
           "normalisation_scale_problem"]


class OnnxSource(Strict):
    """A statically quantised (QLinear) ONNX CNN, read with onnxruntime.

    ``path`` is relative to the models folder (setting ``models_dir``) unless absolute. The image processor
    (:func:`onnx_image_processor`) resizes the photograph to ``resize_to`` (``resize: squash``: both sides, as
    GluonCV's ``Resize(resize_to)``; ``shorter-side``: the shorter side, keeping the aspect ratio), bilinear,
    centre-crops ``image_size`` and normalises with ``image_mean`` / ``image_std`` (ImageNet's by default), in RGB
    order, on pixels in [0, 1] (``pixel_scale: 1``) or in [0, 255] (``pixel_scale: 255``, Caffe's convention).
    ``channel_order: bgr`` feeds the channels in BGR order and ``input_layout: nhwc`` channels-last, as graphs
    converted from Caffe / TensorFlow expect. ``package``: the file is ``path`` inside that installed package;
    ``sha256``: the file's checksum, checked before reading. Raises ValueError (at registry load) for a standard
    deviation that is not positive and finite, a mean that is not finite, or a mean / standard deviation on another
    scale than the pixels (:func:`normalisation_scale_problem`).
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

    @field_validator("image_mean")
    @classmethod
    def _mean_finite(cls, mean: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(math.isfinite(m) for m in mean):
            raise ValueError(f"{_values(mean)}: the mean of each channel must be a finite number")
        return mean

    @field_validator("image_std")
    @classmethod
    def _std_positive(cls, std: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(math.isfinite(s) and s > 0 for s in std):
            raise ValueError(f"{_values(std)}: each channel's standard deviation divides its pixels and must be a "
                             "positive finite number (ImageNet's on pixels in [0, 1]: [0.229, 0.224, 0.225])")
        return std

    @model_validator(mode="after")
    def _crop_fits(self) -> "OnnxSource":
        if self.image_size > self.resize_to:
            raise ValueError(f"image_size {self.image_size} is larger than resize_to {self.resize_to}")
        problem = normalisation_scale_problem(self.image_mean, self.image_std, self.pixel_scale)
        if problem:
            raise ValueError(problem)
        return self


def _values(values) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


#: A mean or standard deviation above this is on the 0-255 scale; pixels in [0, 1] have every mean and standard
#: deviation below 1.
SCALE_SPLIT = 1.5


def normalisation_scale_problem(image_mean, image_std, pixel_scale: int) -> str | None:
    """One line naming ``image_mean`` / ``image_std`` / ``pixel_scale`` where the mean or standard deviation is on
    another scale than the pixels, else None.

    Pixels in [0, 1] (``pixel_scale`` 1) with any mean or standard deviation above 1.5 (ImageNet's on the 0-255 scale,
    [123.675, 116.28, 103.53] / [58.395, 57.12, 57.375]) are normalised to near-constant inputs; pixels in [0, 255]
    (``pixel_scale`` 255) with every mean and standard deviation below 1.5 (ImageNet's on the 0-1 scale) to inputs
    some 255 times too large. Mean 0 and standard deviation 1, the pixels as they are, suit either scale.
    """
    mean, std = _values(image_mean), _values(image_std)
    if pixel_scale == 1 and max(*image_mean, *image_std) > SCALE_SPLIT:
        return (f"image_mean {mean} / image_std {std} are on the 0-255 scale but the pixels are in [0, 1] "
                f"(pixel_scale: 1): write them divided by 255 (ImageNet's: image_mean: [0.485, 0.456, 0.406], "
                f"image_std: [0.229, 0.224, 0.225]), or pixel_scale: 255 for pixels in [0, 255]")
    identity = all(m == 0 for m in image_mean) and all(s == 1 for s in image_std)
    if pixel_scale == 255 and max(*image_mean, *image_std) < SCALE_SPLIT and not identity:
        return (f"image_mean {mean} / image_std {std} are on the 0-1 scale but the pixels are in [0, 255] "
                f"(pixel_scale: 255): write them times 255 (ImageNet's: image_mean: [123.675, 116.28, 103.53], "
                f"image_std: [58.395, 57.12, 57.375]), or pixel_scale: 1 for pixels in [0, 1]")
    return None


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
    is missing, or the file's SHA-256 is not the registry's (checked where ``ctx.read_weights``; else the file is
    checked readable, not read)."""
    src = entry.source
    if src.package:
        from .parts import package_file

        path = package_file(entry, src.package, src.path)
    else:
        path = in_models_dir(entry, ctx, src.path, "model file")
    if not ctx.read_weights:
        check_readable([path])
    elif src.sha256 and sha256_file(path) != src.sha256:
        raise ModelUnavailable(f"{entry.id}: {path} has another SHA-256 than the registry's {src.sha256}")
    return path


def fingerprint(entry, ctx: SourceContext) -> str:
    """``onnx:<file sha256 prefix>:<preprocessing>:u8u8``; ``u8u8``: the integer products are computed with uint8
    weights (:func:`aniso.sources.onnx_graph.unsigned_weights`), exact on every CPU, so statistics cached before,
    whose products may have saturated, are not served."""
    check_permissions(entry)
    src = entry.source
    pre = (f"{src.resize}{src.resize_to}/{src.image_size}/{src.image_mean}/{src.image_std}"
           + (f"/x{src.pixel_scale}/{src.channel_order}/{src.input_layout}"
              if (src.pixel_scale, src.channel_order, src.input_layout) != (1, "rgb", "nchw") else ""))
    path = model_file(entry, ctx)  # checks the registry's sha256, where given: no second hash of the file
    if not ctx.read_weights:
        return f"onnx:unread:{pre}:u8u8"
    return f"onnx:{(src.sha256 or sha256_file(path))[:16]}:{pre}:u8u8"


def __getattr__(name: str) -> Any:
    if name == "OnnxTappedCNN":  # its module imports torch: only when a model is loaded (``aniso list`` stays quick)
        from .onnx_tapped import OnnxTappedCNN

        return OnnxTappedCNN
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load(entry, ctx: SourceContext) -> LoadedModel:
    """The row's ONNX CNN (:class:`~aniso.sources.onnx_tapped.OnnxTappedCNN`) and its image processor. Raises
    ModelUnavailable naming the row when the file cannot be read as an ONNX CNN, ModelRefused (one line naming the
    row, the file, what was found and what to give) when the graph holds a Transformer's attention
    (:func:`~aniso.sources.onnx_graph.attention_found`), and ModelRefused (one line naming ``source.input_layout``
    or ``source.image_size``, the value and the graph's input shape) when the images the row declares do not fit
    the graph's input (:func:`input_shape_problem`), before any image is run."""
    from .onnx_tapped import OnnxTappedCNN

    check_permissions(entry)
    src, path = entry.source, model_file(entry, ctx)
    try:
        model = OnnxTappedCNN(path, channel_order=src.channel_order, input_layout=src.input_layout)
    except ImportError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    except NotACNN as exc:
        from .base import ModelRefused

        raise ModelRefused(f"{entry.id}: {path}: the row declares architecture: cnn (source kind onnx reads CNNs) but "
                           f"{exc}; give a CNN's ONNX file, or read a Transformer with a row of its own kind (kind: "
                           f"package, format: onnx-dinov2 or onnx-bert; architecture: transformer)") from None
    except Exception as exc:  # onnx / onnxruntime raise their own types for unreadable graphs
        raise ModelUnavailable(f"{entry.id}: could not read {path} as an ONNX CNN: "
                               f"{str(exc)[:300]}") from None
    problem = input_shape_problem(model.input_name, model.input_dims, src.input_layout, src.image_size)
    if problem is not None:
        from .base import ModelRefused

        raise ModelRefused(f"{entry.id}: {path}: {problem}")
    processor = onnx_image_processor(src.image_size, src.resize, src.resize_to, src.image_mean, src.image_std,
                                     src.pixel_scale)
    return LoadedModel(entry, model, None, f"onnx: {path} (onnxruntime, "
                       f"{'int8 maps dequantised' if model.quantized else 'float maps'}, {len(model.taps)} maps)",
                       processor)


def input_shape_problem(name: str, dims: list, layout: str, image_size: int) -> str | None:
    """Whether the images the row declares (``source.input_layout`` ``layout``: ``"nchw"`` or ``"nhwc"``, crops of
    ``source.image_size`` pixels square) fit the graph input ``name`` of dimensions ``dims`` (None where the graph
    leaves one free): None, or one phrase naming the field, its value and what the graph expects (onnxruntime
    would stop the first batch with an InvalidArgument error of its own words)."""
    shown = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    if len(dims) != 4:
        return f"its graph input {name!r} has shape {shown}, not one batch of colour images (4 dimensions)"
    channels, spatial = (dims[1], dims[2:]) if layout == "nchw" else (dims[3], dims[1:3])
    if channels not in (3, None):
        other = "nhwc" if layout == "nchw" and dims[3] == 3 else "nchw" if dims[1] == 3 else None
        return (f"source.input_layout {layout!r} does not fit its graph input {name!r} of shape {shown}: "
                + (f"the graph takes channels {'last' if other == 'nhwc' else 'first'} (input_layout: {other})"
                   if other else "it has no dimension of 3 colour channels where either layout puts them"))
    fixed = [d for d in spatial if d is not None]
    if any(d != image_size for d in fixed):
        need = " x ".join("?" if d is None else str(d) for d in spatial)
        return (f"source.image_size {image_size} does not fit its graph input {name!r} of shape {shown} "
                f"({layout}): the graph takes {need} images"
                + (f" (image_size: {fixed[0]}, with resize_to at least that)" if len(set(fixed)) == 1 else ""))
    return None


def detect(path: Path) -> dict | None:
    """The registry fields of an ONNX CNN file (``.onnx``; a QLinear or float graph with the block maps of
    :func:`quantized_block_taps` / :func:`float_block_taps`), its crop the input's height where the graph fixes it
    (else 224, resized from 256 as the default), channels first or last as its input says; None for any other
    file or a folder. The photographs are normalised with ImageNet's mean and std in RGB order on [0, 1] pixels
    (the defaults; a graph that expects otherwise needs a models.yaml entry written by hand).

    Raises UndetectableModel (one line) for an ONNX file that cannot be read or is no CNN on photographs.
    """
    from .detect import UndetectableModel

    if not (path.is_file() and path.suffix.lower() == ".onnx"):
        return None
    try:
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
    except ImportError:
        raise UndetectableModel("reading an ONNX file needs the onnx package (pip install onnx)") from None
    except Exception as exc:  # noqa: BLE001 - onnx raises its own types for files that are not ONNX
        raise UndetectableModel(f"not a readable ONNX file ({type(exc).__name__}: {str(exc)[:200]})") from None
    inits = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim] \
        if len(inputs) == 1 else []
    if len(dims) != 4 or 3 not in (dims[1], dims[3]):
        raise UndetectableModel(f"an ONNX graph whose input is not one batch of colour images ({len(inputs)} "
                                f"input(s), shape {dims or '?'}); the onnx source reads CNNs on photographs: write "
                                "its models.yaml entry by hand")
    layout = "nchw" if dims[1] == 3 else "nhwc"
    try:
        quantized_block_taps(graph)
        family = "onnx-cnn-int8"
    except ValueError:
        try:
            float_block_taps(graph)
            family = "onnx-cnn"
        except (ValueError, StopIteration):
            raise UndetectableModel("an ONNX graph with no convolution blocks the onnx source can read (no "
                                    "QLinearConv, nor Conv with a ReLU stem)") from None
    size = dims[2] if layout == "nchw" else dims[1]
    source: dict = {"kind": "onnx", "path": str(path.resolve())}
    if size and size != 224:
        source |= {"image_size": size, "resize_to": round(size * 256 / 224)}
    if layout == "nhwc":
        source["input_layout"] = "nhwc"
    return {"source": source, "modality": "vision", "granularity": "pixel", "architecture": "cnn",
            "role": "encoder", "family": family}


KIND = SourceKind("onnx", OnnxSource, fingerprint, load, needs=(("modality", "vision"), ("architecture", "cnn"),
                                                                 ("role", "encoder")),
                  is_a="a CNN image encoder", detect=detect, detects="an ONNX CNN file (.onnx)")
