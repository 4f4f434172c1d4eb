"""Image processors pinned to one backend, so that pixels do not depend on what else is installed.

transformers >= 5 has two backends for most image processors: torchvision (chosen whenever torchvision is
installed) and PIL (the fallback). They resize with different kernels, so the same photograph gives different
pixel values, and a model's hidden states and predictions move with an unrelated install. The suite always asks
for the PIL backend by name: :func:`pil_image_processor` for a processor it configures itself,
:func:`pretrained_image_processor` for one read from a model folder. With transformers 4, whose default image
processors are the PIL ones, the same calls give the same classes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["pil_image_processor", "pretrained_image_processor", "IMAGE_BACKEND"]

#: The image-processing backend the suite uses everywhere (recorded with every result).
IMAGE_BACKEND = "pil"


def pil_image_processor(name: str, **config: Any) -> Any:
    """The PIL-backend image processor of transformers class ``name`` (e.g. ``"ConvNextImageProcessor"``).

    ``config`` is passed to the constructor. Returns ``<name>Pil`` where transformers has it (version 5 and
    later), else ``<name>`` (version 4, where that class is the PIL implementation). Raises AttributeError
    naming the class if transformers has neither.
    """
    import transformers

    cls = getattr(transformers, name + "Pil", None) or getattr(transformers, name, None)
    if cls is None:
        raise AttributeError(f"transformers {transformers.__version__} has no image processor {name!r}")
    return cls(**config)


def pretrained_image_processor(where: str, **kwargs: Any) -> Any:
    """``AutoImageProcessor.from_pretrained(where, **kwargs)`` with the PIL backend asked for explicitly."""
    import transformers
    from transformers import AutoImageProcessor

    major = int(transformers.__version__.split(".")[0])
    backend = {"backend": IMAGE_BACKEND} if major >= 5 else {"use_fast": False}
    return AutoImageProcessor.from_pretrained(where, **backend, **kwargs)
