"""Source kind ``miniature``: a small model trained by the suite itself (:mod:`aniso.experiments.miniature_vision`).

The recipe ``vision-rotation`` trains on the photographs of the image folder that the measurement does not use, so
the miniature is measured on photographs it never saw. Its fingerprint covers the recipe and those training
photographs; loading trains it, or reads its checkpoint (safetensors) from the cache.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ..experiments.names import VISION_RECIPE_OVERRIDES as RECIPE_OVERRIDES
from .base import InputsMissing, LoadedModel, ModelUnavailable, SourceContext, SourceKind, TrainedBySuite

__all__ = ["MiniatureSource", "KIND", "RECIPE_OVERRIDES", "ARCH_FAMILY"]

#: Miniature architecture → the registry ``architecture`` it is.
ARCH_FAMILY = {"vit": "transformer", "convnext": "cnn", "resnet": "cnn"}


class MiniatureSource(TrainedBySuite):
    """A miniature trained by the suite itself.

    ``recipe`` names the experiment (``vision-rotation``: rotation prediction on the photographs of the image folder
    that the measurement does not use); ``arch`` the architecture, ``seed`` the seed of initialisation and batch
    order, ``steps`` the optimiser steps (0: the initialisation itself, an untrained control); ``config``
    overrides other recipe fields (:data:`RECIPE_OVERRIDES`).
    """

    RECIPE_FIELDS: ClassVar[tuple[str, ...]] = RECIPE_OVERRIDES
    kind: Literal["miniature"]
    recipe: Literal["vision-rotation"]
    arch: Literal[tuple(ARCH_FAMILY)]  # type: ignore[valid-type]
    steps: int = Field(ge=0)


def _training(entry, ctx: SourceContext):
    """(recipe, measured photographs, training photographs). Raises ModelUnavailable / InputsMissing naming the
    entry."""
    from ..experiments.miniature_vision import recipe_of
    from ..inputs.media import InputsUnavailable, load_images_excluding

    try:
        recipe = recipe_of(entry.source)
    except ValueError as exc:
        raise ModelUnavailable(f"{entry.id}: miniature cannot be trained: {exc}") from None
    if ctx.media is None:
        raise InputsMissing(f"{entry.id}: miniature cannot be trained: no photographs were given")
    try:
        measured = ctx.media(entry.modality)
        return recipe, measured, load_images_excluding(measured)
    except InputsUnavailable as exc:
        raise InputsMissing(f"{entry.id}: miniature cannot be trained: {exc}") from None


def _key(recipe, training) -> str:
    from ..common.devices import TRAINING_THREADS
    from ..common.versions import cache_key

    return cache_key({"recipe": recipe.__dict__, "training": training.fingerprint, "threads": TRAINING_THREADS})


def fingerprint(entry, ctx: SourceContext) -> str:
    """``miniature:<key>`` over the recipe, the training photographs and the library versions."""
    recipe, _, training = _training(entry, ctx)
    return "miniature:" + _key(recipe, training)


def load(entry, ctx: SourceContext) -> LoadedModel:
    """Train the miniature (or read its checkpoint from ``ctx.cache_dir``)."""
    import logging

    from ..experiments.miniature_vision import load_or_train

    recipe, measured, training = _training(entry, ctx)
    trained = load_or_train(recipe, training.items, measured.items, ctx.cache_dir, _key(recipe, training),
                            progress=logging.getLogger(__name__).info)
    origin = (f"MINIATURE trained by this suite: {recipe.arch}, seed {recipe.seed}, {recipe.steps} steps of "
              f"rotation prediction on {training.label}")
    return LoadedModel(entry, trained.model, None, origin, trained.processor,
                       meta={"training": trained.log | {"recipe": recipe.__dict__, "images": training.describe()}})


def _consistent(entry) -> str | None:
    arch = ARCH_FAMILY[entry.source.arch]
    if entry.architecture != arch:
        return f"a {entry.source.recipe} miniature of arch {entry.source.arch!r} needs architecture {arch!r}"
    return None


def _initialised(entry, seed: int):
    """The vision miniature at initialisation (its architecture is already small), for the offline check."""
    from ..experiments.miniature_vision import build_model, image_processor, recipe_of

    recipe = recipe_of(entry.source)
    return build_model(recipe.arch, recipe.image_size, seed).eval(), None, image_processor(recipe.image_size)


KIND = SourceKind("miniature", MiniatureSource, fingerprint, load, check_entry=_consistent, initialised=_initialised,
                  miniature=True,
                  needs=(("modality", "vision"),), is_a="a vision miniature", trained=lambda src: src.steps > 0)
