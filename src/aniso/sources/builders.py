"""Architectures for weights shipped as plain PyTorch state dicts, and their preprocessing.

A builder makes the module a ``state-dict`` registry source loads its weights
into (``load_state_dict(strict=True)``: every key must match), and the image
processor that prepares its inputs. The module answers like a transformers
vision model: ``model(pixel_values=..., output_hidden_states=True)`` returns
an object whose ``hidden_states`` are the feature maps (B, C, H, W) of every
stage, and whose ``logits`` are the class scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

__all__ = ["BUILDERS", "Built", "TappedCNNOutput"]


@dataclass
class TappedCNNOutput:
    """``logits`` (B, classes) and ``hidden_states``: the feature map (B, C, H, W) of each tapped layer."""

    logits: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None


@dataclass
class Built:
    """A freshly built module (weights not loaded), its image processor, and what it is."""

    model: nn.Module
    processor: Any
    description: str


class EfficientNetLiteTapped(nn.Module):
    """EfficientNet-Lite (the ``efficientnet-lite-pytorch`` package) with its stage outputs as hidden states.

    Hidden states: the stem output, the output of each MBConv block, and the
    head convolution's output (after its activation), i.e. every feature map
    the network computes between input and pooling; 18 maps for Lite0, from
    32 × 112 × 112 down to 1280 × 7 × 7 at 224 × 224 input.
    """

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net
        self.config = None

    def forward(self, pixel_values: torch.Tensor, output_hidden_states: bool = False) -> TappedCNNOutput:
        maps: list[torch.Tensor] = []
        hooks = []
        if output_hidden_states:
            hooks.append(self.net._blocks[0].register_forward_pre_hook(lambda m, args: maps.append(args[0])))
            for block in self.net._blocks:
                hooks.append(block.register_forward_hook(lambda m, args, out: maps.append(out)))
            hooks.append(self.net._avg_pooling.register_forward_pre_hook(lambda m, args: maps.append(args[0])))
        try:
            logits = self.net(pixel_values)
        finally:
            for h in hooks:
                h.remove()
        return TappedCNNOutput(logits, tuple(maps) if output_hidden_states else None)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.net.load_state_dict(state_dict, strict=strict, assign=assign)


def _efficientnet_lite0() -> Built:
    try:
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise ImportError("builder 'efficientnet-lite0' needs the efficientnet-lite-pytorch package "
                          "(pip install efficientnet-lite-pytorch)") from None
    from ..inputs.processors import pil_image_processor

    net = EfficientNet.from_name("efficientnet-lite0")
    # EfficientNet-Lite's own evaluation preprocessing: resize the shorter side to 224 / 0.875, centre-crop
    # 224 x 224, and (x - 127) / 128 on 0..255 pixel values, i.e. mean 127/255 and std 128/255 after rescaling.
    processor = pil_image_processor("ConvNextImageProcessor", size={"shortest_edge": 224}, crop_pct=0.875,
                                    image_mean=[127 / 255] * 3, image_std=[128 / 255] * 3)
    return Built(EfficientNetLiteTapped(net).eval(), processor,
                 "EfficientNet-Lite0 (efficientnet-lite-pytorch), 224 x 224, (x - 127) / 128")


#: Builder name (the registry's ``builder`` field) → function returning a :class:`Built`.
BUILDERS: dict[str, Callable[[], Built]] = {"efficientnet-lite0": _efficientnet_lite0}
