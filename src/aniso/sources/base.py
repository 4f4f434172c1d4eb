"""What every source kind shares: the protocol of a kind, what loading gives, and what loading may need.

A source kind is one module under :mod:`aniso.sources` that defines a :class:`SourceKind`: the registry schema of
its ``source:`` field, how to fingerprint the exact weights an entry points at without loading them, and how to load
them. :data:`aniso.sources.SOURCE_KINDS` is the table of kinds; the registry derives the allowed ``kind`` values and
their schemas from it.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Union

from pydantic import Field, field_validator

from ..common.schema import Strict

if TYPE_CHECKING:
    from ..inputs.media import MediaSet
    from ..registry.entries import ModelEntry

__all__ = ["ModelUnavailable", "InputsMissing", "ModelRefused", "LoadedModel", "HubStatus", "SourceContext", "SourceKind",
           "check_permissions", "in_models_dir", "TrainedBySuite", "note_row", "row_of"]


class TrainedBySuite(Strict):
    """The ``seed`` and ``config`` fields of the kinds whose models the suite trains itself: ``config`` may
    override only the recipe fields the kind names in ``RECIPE_FIELDS``."""

    RECIPE_FIELDS: ClassVar[tuple[str, ...]] = ()
    seed: int = Field(default=0, ge=0)
    config: dict[str, Union[int, float]] = Field(default_factory=dict)

    @field_validator("config")
    @classmethod
    def _recipe_fields(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(cls.RECIPE_FIELDS))
        if unknown:
            raise ValueError(f"unknown recipe field(s) {unknown}; allowed: {list(cls.RECIPE_FIELDS)}")
        return value


class ModelUnavailable(RuntimeError):
    """The weights of a registry model cannot be loaded here; the message says why."""


class ModelRefused(ModelUnavailable):
    """A model's files are here but cannot be loaded faithfully (a damaged or truncated weights file, a config that
    does not match the weights, so that some modules would be randomly initialised, missing preprocessing files, a
    config that cannot be built); the one-line message names the folder and what is wrong. ``aniso run`` exits 2 on
    it, where a model that is merely not here is skipped."""


class InputsMissing(ModelUnavailable):
    """A model cannot be measured here for want of inputs (a data folder), not of weights or code; the message
    names the setting that supplies them."""


@dataclass
class LoadedModel:
    """A model ready for extraction.

    ``model`` is a transformers ``PreTrainedModel`` (or a module that answers
    like one, see :mod:`aniso.sources.builders`) in eval mode, float32, on CPU;
    ``tokenizer`` its tokenizer (text) and ``processor`` its feature extractor
    (speech) or image processor (vision); ``origin`` says where the weights came from;
    ``meta`` goes into the statistics' meta (e.g. a miniature's training log).
    """

    entry: "ModelEntry"
    model: Any
    tokenizer: Any
    origin: str
    processor: Any = None
    meta: dict = field(default_factory=dict)


class HubStatus:
    """Whether the Hugging Face hub can be reached, probed once and remembered.

    ``HF_HUB_OFFLINE=1`` means unreachable without probing. The probe resolves
    and connects with a short timeout (``timeout`` seconds), so an offline
    machine learns it at once rather than through a network time-out per model.
    """

    def __init__(self, host: str = "huggingface.co", timeout: float = 3.0):
        self.host = host
        self.timeout = timeout
        self._reachable: bool | None = None

    def reachable(self) -> bool:
        if self._reachable is None:
            self._reachable = self._probe()
        return self._reachable

    def _probe(self) -> bool:
        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
            return False
        result: list[bool] = []

        def attempt() -> None:
            try:
                with socket.create_connection((self.host, 443), timeout=self.timeout):
                    result.append(True)
            except OSError:
                result.append(False)

        t = threading.Thread(target=attempt, daemon=True)
        t.start()
        t.join(self.timeout + 0.5)  # name resolution is not covered by the socket timeout
        return bool(result and result[0])


@dataclass
class SourceContext:
    """What a source kind may need besides the registry entry.

    ``hub``: the run's :class:`HubStatus`; ``registry_dir``: the registry file's folder (relative local paths);
    ``models_dir``: the models folder (setting ``models_dir``; relative model files); ``cache_dir``: the run's
    cache folder (the suite's own trained miniatures); ``media``: the run's recordings or photographs by modality
    (raises :class:`~aniso.inputs.media.InputsUnavailable`), for kinds that train on inputs; ``train_text``: the
    text file the text miniatures pre-train on (setting ``train_text``); ``miniature_sizes``: the run profile's
    recipe sizes for them (``total_steps``, ``hidden_size``, ``batch_size``); ``device``: the torch device that
    trains them (setting ``device``); ``read_weights``: whether a source kind's ``fingerprint`` reads the model
    files' bytes (their digests, and the registry's ``sha256`` checked against them). False for a listing
    (:func:`aniso.sources.weights_here`), which needs to know only that the files are there and can be opened: the
    fingerprint then checks that much (:func:`aniso.common.files.check_readable`, the same refusals) and is no
    identity of the weights (``<kind>:unread``), so :func:`aniso.sources.source_fingerprint` refuses such a context.
    ``twin_manifest``: the manifest of the twin run measuring (setting ``twin``), or None: a hub cache's snapshot a
    twin run kept (:func:`aniso.sources.hubcache.kept_twin_manifest`) loads only in the twin run of that manifest.
    """

    hub: HubStatus = field(default_factory=HubStatus)
    registry_dir: Path | None = None
    models_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    media: Callable[[str], "MediaSet"] | None = None
    train_text: str | Path | None = None
    miniature_sizes: dict = field(default_factory=dict)
    device: str = "cpu"
    read_weights: bool = True
    twin_manifest: str | Path | None = None


@dataclass(frozen=True)
class SourceKind:
    """One row of the source-kind table.

    Attributes
    ----------
    name : the registry's ``source.kind``
    schema : the pydantic model of the ``source:`` field (a :class:`~aniso.common.schema.Strict` with ``kind: Literal[name]``)
    fingerprint : ``(entry, ctx) -> str``, the identity of the exact weights, computed without loading them; raises
        ModelUnavailable (InputsMissing for want of a data folder) as ``load`` would
    load : ``(entry, ctx) -> LoadedModel``; raises ModelUnavailable naming the model and why
    check_entry : ``(entry) -> str | None``, what is inconsistent between the source and the rest of the entry
        beyond ``needs`` (e.g. a miniature's architecture against its recipe's), or None
    needs : ``(field, value)`` pairs the entry of a row of this kind must have (e.g. ``("modality", "text")`` for a
        language-model format); :meth:`problem` checks them
    is_a : what a model of this kind is, for the message of a row that lacks ``needs`` (``a language model``)
    transformers_folder : ``(entry, ctx) -> Path | None``, the folder transformers' ``from_pretrained`` reads as it
        is, for the rows of this kind that have one (``aniso bench command`` times a bare script on it)
    initialised : ``(entry, seed) -> (model, tokenizer, processor)``, a small model of the row at initialisation for
        the offline architecture check (:mod:`aniso.extract.architecture_check`), for kinds whose rows have no
        ``tiny`` config (the suite's miniatures); None: the check builds the row's ``tiny`` config
    miniature : whether the rows of this kind are models the suite trains itself
    trained_on : ``(entry, settings, recorded_profile) -> (this run's, the record's) | None``: for rows whose weights
        this run trains (the text miniatures), what they are trained on in this run and what the registry's records
        were measured with at ``recorded_profile``'s sizes, as one phrase each (training text and steps); None where
        that is not part of what a record was measured on
    trained : ``(source) -> bool``, whether the weights are trained (False for untrained blocks, step-0 miniatures)
    checkpoints : ``(entry, ctx) -> list[int]``, the training steps of every checkpoint the source has (for a
        registry series with ``steps: all``), or None where the kind does not list them
    detect : ``(path) -> dict | None``, for ``aniso run PATH``: the registry fields (``source``, ``modality``,
        ``granularity``, ``architecture``, ``role``, ``family``) of a file or folder in the format this kind reads,
        None when ``path`` is not in it; raises :class:`~aniso.sources.detect.UndetectableModel` (a ValueError, one
        line) when it is, but what its entry needs cannot be told (:func:`aniso.sources.detect.detect_entry`)
    detects : what ``detect`` recognises, in words (for the error that names the formats ``aniso run`` reads)
    twins : whether a row of this kind has a twin (:mod:`aniso.sources.twin`: its architecture with random weights,
        in a folder laid out as its repository, imported into the hub cache)
    hub_access : whether a row of this kind downloads its model from the hub, where a model may be gated: the
        entry's ``gated`` and ``use_auth_token`` mean something only then, and are refused on another kind
    model_code : ``(source) -> str | None``, where the model's own code comes from (``its repository``), in words,
        for a source whose loading can run it (transformers' ``from_pretrained``, with ``trust_remote_code``); None
        where it never runs a model's code: the entry's ``needs_remote_code`` and ``trust_remote_code`` are refused
    """

    name: str
    schema: type["Strict"]
    fingerprint: Callable[["ModelEntry", SourceContext], str]
    load: Callable[["ModelEntry", SourceContext], LoadedModel]
    check_entry: Callable[["ModelEntry"], str | None] = lambda entry: None
    trained: Callable[[Any], bool] = lambda source: True
    checkpoints: Callable[["ModelEntry", SourceContext], list[int]] | None = None
    detect: Callable[[Path], dict[str, Any] | None] | None = None
    detects: str = ""
    twins: bool = False
    needs: tuple[tuple[str, str], ...] = ()
    is_a: str = ""
    transformers_folder: Callable[["ModelEntry", SourceContext], Path | None] | None = None
    initialised: Callable[["ModelEntry", int], tuple[Any, Any, Any]] | None = None
    miniature: bool = False
    trained_on: Callable[["ModelEntry", Any, str], tuple[str, str] | None] | None = None
    hub_access: bool = False
    model_code: Callable[[Any], str | None] = lambda source: None

    @property
    def runs_model_code(self) -> bool:
        """Whether some row of this kind can run its model's own code (``model_code`` is not the default)."""
        return self.model_code is not SourceKind.__dataclass_fields__["model_code"].default

    def problem(self, entry: "ModelEntry") -> str | None:
        """What is inconsistent between a row of this kind and the rest of its entry (``needs``, then
        ``check_entry``), in one phrase, or None."""
        article = "an" if self.name[0] in "aeiou" else "a"
        if any(getattr(entry, name) != value for name, value in self.needs):
            return (f"{article} {self.name} source " + (f"is {self.is_a}: it " if self.is_a else "")
                    + "needs " + " and ".join(f"{name} {value!r}" for name, value in self.needs))
        from . import SOURCE_KINDS

        for name in ("gated", "use_auth_token"):
            if getattr(entry, name) and not self.hub_access:
                hub = ", ".join(k.name for k in SOURCE_KINDS.values() if k.hub_access)
                return (f"{name}: true on {article} {self.name} source, which downloads nothing from the hub: gated "
                        f"and use_auth_token (a gated hub model and the credentials to download it) are for source "
                        f"kind {hub} only; remove the field")
        for name in ("needs_remote_code", "trust_remote_code"):
            if getattr(entry, name) and self.model_code(entry.source) is None:
                fmt = getattr(entry.source, "format", None)
                code = ", ".join(k.name for k in SOURCE_KINDS.values() if k.runs_model_code)
                return (f"{name}: true on {article} {self.name} source" + (f" of format {fmt!r}" if fmt else "")
                        + ", which never runs a model's own code: needs_remote_code and trust_remote_code are for "
                        f"models that transformers' from_pretrained reads (source kind {code}); remove the field")
        return self.check_entry(entry)


#: Where each registry row in memory was read (by ``id()`` of the row; see :func:`note_row`).
_ROWS_READ_AT: dict[int, str] = {}


def note_row(entry: "ModelEntry", where: str) -> None:
    """Remember where a registry row was read (``FILE: models[I] (id 'ID')``), for a refusal of the row once its
    model's files are read (:func:`row_of`); forgotten when the row is."""
    import weakref

    key = id(entry)
    _ROWS_READ_AT[key] = where
    weakref.finalize(entry, _ROWS_READ_AT.pop, key, None)


_SEEDS: dict[int, "ModelEntry"] = {}


def note_seed(entry: "ModelEntry", seed: "ModelEntry") -> None:
    """Remember the seed row a registry row stands for (its ``stands_for``), for the check of a row whose relation
    says it is the seed's own weights against the seed's ``full`` config once its model is read (:func:`seed_of`);
    forgotten when the row is."""
    import weakref

    key = id(entry)
    _SEEDS[key] = seed
    weakref.finalize(entry, _SEEDS.pop, key, None)


def seed_of(entry: "ModelEntry") -> "ModelEntry | None":
    """The seed row noted for ``entry`` (:func:`note_seed`), or None."""
    return _SEEDS.get(id(entry))


def row_of(entry: "ModelEntry") -> str:
    """``FILE: models[I] (id 'ID')`` for a row read from a registry file (:func:`note_row`), else ``registry row
    'ID'``."""
    return _ROWS_READ_AT.get(id(entry)) or f"registry row {entry.id!r}"


def check_permissions(entry: "ModelEntry", download: bool = True) -> None:
    """Raise ModelUnavailable if the entry needs remote code or credentials it has not opted in to. Credentials
    are needed only to download a gated model (``download``): weights already in the local cache or a folder load
    without them."""
    if entry.needs_remote_code and not entry.trust_remote_code:
        from . import SOURCE_KINDS

        kind = SOURCE_KINDS.get(entry.source.kind)
        where = (kind.model_code(entry.source) if kind is not None else None) or "its repository"
        raise ModelUnavailable(
            f"{entry.id}: needs custom code from {where}; not run unless its registry entry opts in "
            "with trust_remote_code: true"
        )
    if download and entry.gated and not entry.use_auth_token:
        raise ModelUnavailable(
            f"{entry.id}: gated model, not in the local cache; credentials are not used to download it unless its "
            "registry entry opts in with use_auth_token: true"
        )


def in_models_dir(entry: "ModelEntry", ctx: SourceContext, name: str, what: str,
                  present: Callable[[Path], bool] = Path.is_file) -> Path:
    """The path ``name`` of an entry's source, relative to the models folder (setting ``models_dir``) unless
    absolute, ``~`` expanded. ``what`` names it in errors (e.g. "model file"); ``present`` says whether the path is
    there as it should be (a file by default).

    Raises ModelUnavailable naming the model if the path is relative and the folder is not set, if it is missing,
    or if it is a Git LFS pointer (:func:`aniso.common.files.lfs_pointer`).
    """
    from ..common.files import url_path_problem

    url = url_path_problem(name)
    if url is not None:
        raise ModelUnavailable(f"{entry.id}: its {what}: {url}")
    path = Path(os.path.expanduser(name))
    if not path.is_absolute():
        if ctx.models_dir is None:
            raise ModelUnavailable(f"{entry.id}: set ANISO_MODELS_DIR (--aniso-models-dir, e.g. ../shared/models): "
                                   f"its {what} {name} is relative to the models folder, which is not set")
        path = Path(ctx.models_dir) / path
    if not present(path):
        if path.exists():  # there, but not what the entry names: a folder where a file is due, or the reverse
            kind = "a folder" if path.is_dir() else "a file" if path.is_file() else "neither a file nor a folder"
            due = "a folder" if present is Path.is_dir else "a file"
            hint = ("; a transformers model folder (it holds config.json) is read by a row of source kind local"
                    if entry.source.kind != "local" and path.is_dir() and (path / "config.json").is_file() else "")
            raise ModelUnavailable(f"{entry.id}: {what} {path} is {kind}; source kind {entry.source.kind} reads {due} "
                                   f"there{hint}")
        raise ModelUnavailable(f"{entry.id}: {what} {path} does not exist (models folder: {ctx.models_dir})")
    from ..common.files import lfs_pointer

    pointer = lfs_pointer(path)  # a clone without git-lfs: the file's name, not its bytes
    if pointer is not None:
        raise ModelUnavailable(f"{entry.id}: {what} {path} {pointer}")
    return path
