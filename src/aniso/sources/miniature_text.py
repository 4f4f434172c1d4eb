"""Source kind ``miniature-text``: a byte-level BERT (masked LM) or GPT-2 (causal LM) pre-trained by the suite
itself on the training text (setting ``train_text``, e.g. enwik8), see :mod:`aniso.experiments.miniature_text`.

``steps`` picks a checkpoint of the run (0: the initialisation; left out: the run's last step); the run's length,
width and batch come from the run profile (settings ``miniature_steps``, ``miniature_width``,
``miniature_batch``) unless ``config`` overrides them. The fingerprint covers the recipe, the training text's bytes
and the library versions; loading trains the whole run once (every checkpoint, cached as safetensors) or reads the
checkpoint from the cache.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import InputsMissing, LoadedModel, ModelUnavailable, SourceContext, SourceKind, TrainedBySuite

__all__ = ["MiniatureTextSource", "KIND", "RECIPE_OVERRIDES"]

#: Recipe fields a registry entry may override in ``config``.
RECIPE_OVERRIDES = ("total_steps", "hidden_size", "num_layers", "num_heads", "seq_len", "batch_size", "lr",
                    "weight_decay", "warmup_fraction")


class MiniatureTextSource(TrainedBySuite):
    """A miniature text model trained by the suite: ``arch`` bert|gpt2, ``seed``, ``steps`` (a checkpoint of the
    run; None = its last), ``config`` (overrides of :data:`RECIPE_OVERRIDES`)."""

    RECIPE_FIELDS: ClassVar[tuple[str, ...]] = RECIPE_OVERRIDES
    kind: Literal["miniature-text"]
    arch: Literal["bert", "gpt2"]
    steps: int | None = Field(default=None, ge=0)


def recipe_of(entry, ctx: SourceContext):
    """The :class:`~aniso.experiments.miniature_text.TextRecipe` of an entry: the profile's sizes
    (``ctx.miniature_sizes``), then the entry's ``config``. Raises ModelUnavailable naming the entry if invalid."""
    from ..experiments.miniature_text import TextRecipe

    src = entry.source
    try:
        return TextRecipe(src.arch, src.seed, **(dict(ctx.miniature_sizes) | src.config))
    except (TypeError, ValueError) as exc:
        raise ModelUnavailable(f"{entry.id}: miniature cannot be trained: {exc}") from None


def _training_text(entry, ctx: SourceContext):
    from pathlib import Path

    if not ctx.train_text:
        raise InputsMissing(f"{entry.id}: miniature cannot be trained: no training text (setting train_text: "
                            "--aniso-train-text or ANISO_TRAIN_TEXT, e.g. ../shared/data/text/enwik8_first100000bytes)")
    path = Path(ctx.train_text).expanduser()
    if not path.is_file():
        raise InputsMissing(f"{entry.id}: miniature cannot be trained: training text {path} does not exist "
                            "(setting train_text)")
    return path


def run_key(entry, ctx: SourceContext) -> str:
    """The cache key of the entry's training run: recipe, training text (SHA-256), device, CPU threads
    (:data:`~aniso.common.devices.TRAINING_THREADS`) and library versions (a run trained on another device, or at
    another thread count, differs in its last bits, so it is another run)."""
    from dataclasses import asdict

    from ..common.files import sha256_file
    from ..common.versions import cache_key

    path = _training_text(entry, ctx)
    from ..common.devices import TRAINING_THREADS

    return cache_key({"miniature-text": asdict(recipe_of(entry, ctx)), "train_text": sha256_file(path),
                      "device": ctx.device, "threads": TRAINING_THREADS})


def step_of(entry, ctx: SourceContext) -> int:
    """The checkpoint an entry names: its ``steps``, else the run's last step."""
    s = entry.source.steps
    return recipe_of(entry, ctx).total_steps if s is None else s


def fingerprint(entry, ctx: SourceContext) -> str:
    """``miniature-text:<run key>:step<N>``."""
    return f"miniature-text:{run_key(entry, ctx)}:step{step_of(entry, ctx)}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    """The checkpoint from the cache, or after training the run."""
    import logging

    import numpy as np

    from ..experiments.miniature_text import byte_stream, byte_tokenizer, load_checkpoint

    recipe, step, path = recipe_of(entry, ctx), step_of(entry, ctx), _training_text(entry, ctx)

    def stream() -> np.ndarray:
        return byte_stream(path.read_bytes())

    try:
        model, log = load_checkpoint(recipe, step, stream, ctx.cache_dir or ".", run_key(entry, ctx),
                                     progress=logging.getLogger(__name__).info, device=ctx.device)
    except ValueError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    origin = (f"MINIATURE pre-trained by this suite: byte-level {recipe.arch}, {recipe.num_layers} layers x "
              f"{recipe.hidden_size}, seed {recipe.seed}, step {step} of {recipe.total_steps} on {path.name}")
    return LoadedModel(entry, model, byte_tokenizer(), origin, meta={"training": log | {"recipe": vars(recipe)}})


def checkpoint_steps(entry, ctx: SourceContext) -> list[int]:
    """Every checkpoint the entry's run saves (0, powers of two, the last step)."""
    from ..experiments.miniature_text import checkpoint_steps as steps

    return steps(recipe_of(entry, ctx).total_steps)


#: The training text the registry's records of the text miniatures were measured with, by the first 16 hex digits
#: of its SHA-256 (the file ``enwik8_first100000bytes``): named by its content, never by its file name.
RECORDED_TRAINING_TEXT = ("581bee9758c531de", "enwik8-first-100000-bytes")


def trained_on(entry, settings, recorded_profile: str) -> tuple[str, str] | None:
    """What a trained text miniature is trained on in this run (``settings``: its training text, by content, and the
    steps of its run) and what the registry's records were measured with (:data:`RECORDED_TRAINING_TEXT` at the
    steps of ``recorded_profile``), one phrase each (``"training text t150.txt@…, 10 steps"``), where they differ;
    None where they do not, for an untrained row (step 0) or without a readable training text (the row is then
    skipped for want of it)."""
    import os
    from pathlib import Path

    from ..common.settings import PROFILES

    if not KIND.trained(entry.source) or not settings.train_text:
        return None
    from ..common.files import sha256_file

    path = Path(settings.train_text).expanduser()
    try:  # sha256_file reads a file once a process (remembered under its path, inode, size and time)
        st = os.stat(path)
        digest = sha256_file(path)[:16]
    except OSError:
        return None
    steps = PROFILES.get(recorded_profile, {}).get("miniature_steps")
    if (digest, settings.miniature_steps) == (RECORDED_TRAINING_TEXT[0], steps):
        return None
    name = RECORDED_TRAINING_TEXT[1] if digest == RECORDED_TRAINING_TEXT[0] else path.name
    return (f"training text {name}@{digest} ({st.st_size:,} bytes), {settings.miniature_steps} steps",
            f"training text {RECORDED_TRAINING_TEXT[1]}@{RECORDED_TRAINING_TEXT[0]}, {steps} steps")


def _consistent(entry) -> str | None:
    from ..experiments.names import TEXT_ARCHS as ARCHS

    role = ARCHS[entry.source.arch]
    if entry.role != role:
        return f"a miniature-text {entry.source.arch} needs role {role!r}"
    return None


def _initialised(entry, seed: int):
    """The suite's byte-level BERT / GPT-2 at initialisation, small (2 layers of 32), for the offline check."""
    from ..experiments.miniature_text import TextRecipe, build_model, byte_tokenizer

    recipe = TextRecipe(entry.source.arch, seed, **(dict(hidden_size=32, num_layers=2, num_heads=4)
                                                    | dict(entry.source.config)))
    return build_model(recipe).eval(), byte_tokenizer(), None


KIND = SourceKind("miniature-text", MiniatureTextSource, fingerprint, load, check_entry=_consistent,
                  initialised=_initialised, miniature=True,
                  needs=(("modality", "text"), ("granularity", "byte")), is_a="a byte-level text miniature",
                  trained=lambda src: src.steps != 0, checkpoints=checkpoint_steps, trained_on=trained_on)
