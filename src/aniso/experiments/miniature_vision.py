"""A controlled miniature pair: a small vision Transformer and a small CNN trained by the suite, everything else
held equal (beyond the papers; after Godey et al. 2024 §3.2, Fig. 3b vs Fig. 4).

G §3.2 compares pre-trained vision Transformers with pre-trained CNNs that differ in data, objective, size and
training recipe. Here the architecture is the only difference: the same real photographs (those of the image folder
*not* used for the measurement), the same self-supervised task, the same optimiser, schedule, number of steps,
batch order, augmentation and seed, and roughly the same number of parameters.

Task: rotation prediction (Gidaris et al. 2018, "Unsupervised representation learning by predicting image
rotations"): each training image is randomly cropped and flipped, rotated by k·90°, and the model predicts k (4
classes). It needs no labels and learns from a few hundred photographs, which a 96-class classifier would only
memorise.

Architectures (transformers classes, randomly initialised from a config; see :data:`ARCHITECTURES`):
``vit`` (ViT, isotropic Transformer on 8×8 patches), ``convnext`` (ConvNeXt: the CNN that borrows ViT's macro
design, LayerNorm, GELU and residual stream; its token mixer is a 7×7 depthwise convolution instead of
self-attention) and ``resnet`` (ResNet with basic blocks; its stage outputs come after a ReLU).

Checkpoints are saved as safetensors (no pickle) in the cache, keyed by the recipe, the training set and the
library versions, with the training log (loss curve, held-out accuracy, seconds) in the file's metadata.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from ..common.files import atomic_write, exclusive
from . import warmup_cosine_lr

log = logging.getLogger(__name__)

__all__ = ["ARCHITECTURES", "VisionRecipe", "TrainedMiniature", "build_model", "image_processor", "training_pixels",
           "rotation_batch", "rotation_accuracy", "train", "load_or_train", "parameter_count", "RECIPE_OVERRIDES"]

#: Rotation classes: k·90° for k = 0..3.
N_ROTATIONS = 4

#: Recipe fields a registry entry may override in ``config`` (the rest of :class:`VisionRecipe` is ``arch``,
#: ``seed`` and ``steps``); the source kind ``miniature`` (:mod:`aniso.sources.miniature`) takes them from here.
from .names import VISION_RECIPE_OVERRIDES as RECIPE_OVERRIDES  # noqa: E402 - read by the registry schema


def _vit(image_size: int):
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(image_size=image_size, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=6,
                    num_attention_heads=4, intermediate_size=128, num_labels=N_ROTATIONS,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return ViTForImageClassification(cfg)


def _convnext(image_size: int):
    from transformers import ConvNextConfig, ConvNextForImageClassification

    cfg = ConvNextConfig(num_channels=3, patch_size=4, num_stages=4, hidden_sizes=[16, 32, 64, 112],
                         depths=[1, 1, 3, 1], drop_path_rate=0.0, num_labels=N_ROTATIONS, image_size=image_size)
    return ConvNextForImageClassification(cfg)


def _resnet(image_size: int):
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(num_channels=3, embedding_size=16, hidden_sizes=[16, 32, 64, 96], depths=[1, 1, 2, 1],
                       layer_type="basic", downsample_in_first_stage=False, num_labels=N_ROTATIONS)
    return ResNetForImageClassification(cfg)


#: Architecture name → (builder from image size, "transformer" or "cnn").
ARCHITECTURES: dict[str, tuple[Callable[[int], Any], str]] = {
    "vit": (_vit, "transformer"),
    "convnext": (_convnext, "cnn"),
    "resnet": (_resnet, "cnn"),
}


@dataclass(frozen=True)
class VisionRecipe:
    """How one miniature is trained. ``steps = 0`` gives the initialisation itself (the control at step 0).

    Attributes
    ----------
    arch : a key of :data:`ARCHITECTURES`
    seed : seeds the initialisation, the batch order, crops, flips and rotations
    steps : optimiser steps
    image_size : side of the square crops, pixels (training crops come from images resized to 9/8 of it)
    batch_size, lr, weight_decay, warmup_fraction : AdamW with linear warm-up then cosine decay to 0
    """

    arch: str
    seed: int = 0
    steps: int = 300
    image_size: int = 64
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"unknown miniature architecture {self.arch!r}; known: {sorted(ARCHITECTURES)}")
        if self.steps < 0 or self.batch_size < 1 or self.image_size < 16 or self.image_size % 8:
            raise ValueError(f"miniature recipe needs steps >= 0, batch_size >= 1 and image_size a multiple of 8 "
                             f">= 16; got {self}")


@dataclass
class TrainedMiniature:
    """A trained (or step-0) miniature: the classification model in eval mode, its image processor and its log.

    ``log`` holds ``parameters``, ``steps``, ``loss`` (list of [step, mean training loss over the last
    interval]), ``heldout_rotation_accuracy`` (over the held-out photographs × 4 rotations; chance = 0.25),
    ``n_train_images``, ``n_heldout_images`` and ``seconds``.
    """

    recipe: VisionRecipe
    model: Any
    processor: Any
    log: dict


def parameter_count(model: torch.nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def build_model(arch: str, image_size: int, seed: int):
    """A randomly initialised transformers ``*ForImageClassification`` with 4 outputs, float32, train mode.

    The initialisation is seeded by ``seed`` on a forked RNG (the global RNG is left as it was).
    Raises ValueError for an unknown architecture.
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown miniature architecture {arch!r}; known: {sorted(ARCHITECTURES)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ARCHITECTURES[arch][0](image_size)
    return model.float()


def image_processor(image_size: int, crop: bool = True):
    """The miniatures' image processor: resize the shorter side to 9/8·``image_size``, centre-crop
    ``image_size`` (``crop=False``: keep the 9/8 square, for training crops), scale to [-1, 1]."""
    from ..inputs.processors import pil_image_processor

    big = image_size * 9 // 8
    side = image_size if crop else big
    return pil_image_processor("ConvNextImageProcessor", size={"shortest_edge": side}, crop_pct=side / big,
                               image_mean=[0.5] * 3, image_std=[0.5] * 3)


def training_pixels(images: Sequence, image_size: int) -> torch.Tensor:
    """The training photographs as one (N, 3, S, S) float32 tensor in [-1, 1], S = 9/8·``image_size``."""
    proc = image_processor(image_size, crop=False)
    return torch.cat([proc(list(images[i:i + 64]), return_tensors="pt")["pixel_values"]
                      for i in range(0, len(images), 64)])


def rotation_batch(pixels: torch.Tensor, batch_size: int, image_size: int, generator: torch.Generator
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """A training batch: random images, random ``image_size`` crops, random horizontal flips, rotated by k·90°.

    Parameters
    ----------
    pixels : (N, 3, S, S) training images, S >= image_size

    Returns
    -------
    (x, k): x (batch_size, 3, image_size, image_size) float32 and k (batch_size,) int64 in 0..3.
    """
    n, _, side, _ = pixels.shape
    idx = torch.randint(n, (batch_size,), generator=generator)
    off = torch.randint(side - image_size + 1, (batch_size, 2), generator=generator)
    flip = torch.rand(batch_size, generator=generator) < 0.5
    k = torch.randint(N_ROTATIONS, (batch_size,), generator=generator)
    out = torch.empty(batch_size, 3, image_size, image_size)
    for j in range(batch_size):
        y0, x0 = int(off[j, 0]), int(off[j, 1])
        img = pixels[idx[j], :, y0:y0 + image_size, x0:x0 + image_size]
        if flip[j]:
            img = img.flip(-1)
        out[j] = torch.rot90(img, int(k[j]), dims=(1, 2))
    return out, k


@torch.no_grad()
def rotation_accuracy(model, pixels: torch.Tensor) -> float:
    """Fraction of (image, rotation) pairs whose rotation the model predicts; ``pixels`` (N, 3, s, s) centre crops.

    Each image is shown at all 4 rotations; chance is 0.25.
    """
    was_training = model.training
    model.eval()
    hits = 0
    for k in range(N_ROTATIONS):
        logits = model(pixel_values=torch.rot90(pixels, k, dims=(2, 3))).logits
        hits += int((logits.argmax(-1) == k).sum())
    model.train(was_training)
    return hits / (N_ROTATIONS * len(pixels))


def train(recipe: VisionRecipe, train_images: Sequence, heldout_images: Sequence,
          progress: Callable[[str], None] | None = None) -> TrainedMiniature:
    """Train one miniature on rotation prediction (see the module docstring).

    Parameters
    ----------
    recipe : the :class:`VisionRecipe`
    train_images : RGB ``PIL.Image`` photographs to train on
    heldout_images : photographs never trained on, for the held-out rotation accuracy
    progress : optional callable receiving a line every 100 steps

    Trains at a fixed number of CPU threads (:func:`aniso.common.devices.training_threads`). Raises ValueError if
    there are no training or held-out images.
    """
    if not train_images or not heldout_images:
        raise ValueError(f"miniature {recipe.arch}: needs training and held-out images, got {len(train_images)} "
                         f"and {len(heldout_images)}")
    from ..common.devices import training_threads

    with training_threads():  # the same miniature on any number of cores
        return _train(recipe, train_images, heldout_images, progress)


def _train(recipe: VisionRecipe, train_images: Sequence, heldout_images: Sequence,
           progress: Callable[[str], None] | None) -> TrainedMiniature:
    """:func:`train`'s loop, at :data:`aniso.common.devices.TRAINING_THREADS` threads."""
    t0 = time.perf_counter()
    model = build_model(recipe.arch, recipe.image_size, recipe.seed)
    pixels = training_pixels(train_images, recipe.image_size)
    heldout = image_processor(recipe.image_size)(list(heldout_images), return_tensors="pt")["pixel_values"]
    gen = torch.Generator().manual_seed(recipe.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    model.train()
    losses, curve = [], []
    from ..common.progress import bar

    for step in bar(range(recipe.steps), desc=f"{recipe.arch} seed {recipe.seed}: training", unit="step"):
        for group in opt.param_groups:
            group["lr"] = warmup_cosine_lr(step, recipe.steps, recipe.lr, recipe.warmup_fraction)
        x, k = rotation_batch(pixels, recipe.batch_size, recipe.image_size, gen)
        loss = torch.nn.functional.cross_entropy(model(pixel_values=x).logits, k)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if (step + 1) % 50 == 0 or step + 1 == recipe.steps:
            curve.append([step + 1, round(sum(losses) / len(losses), 4)])
            losses = []
            if progress is not None and (step + 1) % 100 == 0:
                progress(f"{recipe.arch} seed {recipe.seed}: step {step + 1}/{recipe.steps}, loss {curve[-1][1]}")
    model.eval()
    log = {"parameters": parameter_count(model), "steps": recipe.steps, "loss": curve,
           "heldout_rotation_accuracy": rotation_accuracy(model, heldout), "n_train_images": len(train_images),
           "n_heldout_images": len(heldout_images), "seconds": round(time.perf_counter() - t0, 1)}
    return TrainedMiniature(recipe, model, image_processor(recipe.image_size), log)


def load_or_train(recipe: VisionRecipe, train_images: Sequence, heldout_images: Sequence, cache_dir: Path | str,
                  key: str, progress: Callable[[str], None] | None = None) -> TrainedMiniature:
    """The miniature of ``recipe`` from ``cache_dir/miniatures/<key>.safetensors``, else trained and saved there.

    ``key`` must identify the recipe, the training set and the library versions. A cache file that cannot be
    read is reported with a warning and retrained. See :func:`train` for the other parameters.
    """
    path = Path(cache_dir) / "miniatures" / f"{key}.safetensors"
    with exclusive(path):  # processes sharing the cache train a miniature once
        return _load_or_train(recipe, path, train_images, heldout_images, progress)


def _load_or_train(recipe: VisionRecipe, path: Path, train_images, heldout_images, progress) -> TrainedMiniature:
    from safetensors import safe_open
    from safetensors.torch import save_file

    if path.exists():
        try:
            model = build_model(recipe.arch, recipe.image_size, recipe.seed)
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                state = {name: f.get_tensor(name) for name in f.keys()}
            model.load_state_dict(state, strict=True)
            model.eval()
            log_doc = json.loads(meta["log"])
            if json.loads(meta["recipe"]) != asdict(recipe):
                raise ValueError("recipe in the file differs")
            return TrainedMiniature(recipe, model, image_processor(recipe.image_size), log_doc | {"cache_hit": True})
        except Exception as exc:  # noqa: BLE001 - any defect means: retrain
            from ..common.files import warn_as_file

            warn_as_file(str(path), f"miniature checkpoint {path} cannot be used ({exc}); training it again",
                         RuntimeWarning, __name__)
    trained = train(recipe, train_images, heldout_images, progress)
    state = {k: v.contiguous() for k, v in trained.model.state_dict().items()}
    atomic_write(path, lambda tmp: save_file(state, str(tmp), metadata={"recipe": json.dumps(asdict(recipe)),
                                                                         "log": json.dumps(trained.log)}))
    trained.log["cache_hit"] = False
    return trained


def recipe_of(source) -> VisionRecipe:
    """The :class:`VisionRecipe` of a registry ``miniature`` source (``arch``, ``seed``, ``steps``, ``config``).

    Raises ValueError naming the field if ``config`` has a key that is not a recipe field.
    """
    unknown = sorted(set(source.config) - set(RECIPE_OVERRIDES))
    if unknown:
        raise ValueError(f"miniature source config: unknown field(s) {unknown}; allowed: {sorted(RECIPE_OVERRIDES)}")
    return VisionRecipe(source.arch, source.seed, source.steps, **source.config)
