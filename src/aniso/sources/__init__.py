"""Model sources: turn a registry entry into a loaded model and its preprocessor.

Each source kind is one module with a :class:`~aniso.sources.base.SourceKind` row in :data:`SOURCE_KINDS`: its
registry schema, how it fingerprints the exact weights without loading them, and how it loads them. Weights are
read from safetensors, or from formats that hold no code (a CTranslate2 ``model.bin``, a PyTorch state dict read
with ``weights_only=True``, an ONNX graph run by onnxruntime). Remote code is never run unless the entry opts in
(``trust_remote_code: true``).

A model that cannot be had raises :class:`ModelUnavailable` with a reason that names the model
(:class:`InputsMissing` when what is missing is a data folder); the claims report it as skipped with that reason.

To add a source kind: write ``sources/<kind>.py`` with its schema (``kind: Literal["<kind>"]``), ``fingerprint``,
``load`` and a ``KIND`` row, and add the module to :data:`SOURCE_KINDS` below.
"""

from __future__ import annotations

import contextlib

from . import gguf, hub, init, llama2c, local, miniature, miniature_text, onnx_cnn, package
from .base import (HubStatus, InputsMissing, LoadedModel, ModelRefused, ModelUnavailable, SourceContext, SourceKind,
                   check_permissions)
from .hubcache import HubCacheError, cached_state, hub_variable_problem
from .package import load_ct2_whisper

__all__ = ["SOURCE_KINDS", "SourceKind", "SourceContext", "ModelUnavailable", "ModelRefused", "InputsMissing", "LoadedModel",
           "HubStatus", "load_model", "no_loading_bars", "source_fingerprint", "load_ct2_whisper", "weights_here",
           "declared_files_problem", "missing_checkpoints", "unavailable_problem"]

#: The table of source kinds, by the registry's ``source.kind``.
SOURCE_KINDS: dict[str, SourceKind] = {m.KIND.name: m.KIND for m in (hub, local, package, onnx_cnn, gguf, llama2c, init, miniature,
                                                                   miniature_text)}


def source_fingerprint(entry, ctx: SourceContext | None = None) -> str:
    """An identifier of the exact weights an entry points at, computed without loading them (see each kind).

    Raises ModelUnavailable (InputsMissing for want of a data folder) as :func:`load_model` does; ValueError for a
    context that does not read the weights (``read_weights=False``: a listing's, whose fingerprint is no identity).
    """
    if ctx is not None and not ctx.read_weights:
        raise ValueError("source_fingerprint: a context with read_weights=False gives no identity of the weights; "
                         "use read_weights=True")
    return SOURCE_KINDS[entry.source.kind].fingerprint(entry, ctx or SourceContext())


#: How many times more or fewer parameters than a row's ``params_m`` the loaded model may hold (rows round their
#: counts, and a checkpoint may hold a head or pooler the loaded class leaves out, or the reverse).
PARAMS_FACTOR = 1.5


def params_problem(entry, model) -> str | None:
    """Why the loaded ``model`` is not the size registry row ``entry`` states, in one line naming the row, its
    ``params_m`` and the loaded model's count in millions (shared, tied weights counted once), or None: the count
    and ``params_m`` within a factor of :data:`PARAMS_FACTOR` either way, a row without ``params_m``, a model that
    is no torch module (ONNX), one holding quantised modules (their weights are no parameters), or the row's twin
    (its tiny config, :func:`aniso.sources.hubrow._twin_fields`, as ``aniso run ID --twin`` loads it)."""
    stated = getattr(entry, "params_m", None)
    parameters = getattr(model, "parameters", None)
    if stated is None or not callable(parameters) or not callable(getattr(model, "modules", None)):
        return None
    if any("quantized" in type(m).__module__ for m in model.modules()):
        return None
    count = sum(p.numel() for p in parameters())
    if not count or stated / PARAMS_FACTOR <= count / 1e6 <= stated * PARAMS_FACTOR:
        return None
    config = getattr(model, "config", None)
    fields = config.to_dict() if callable(getattr(config, "to_dict", None)) else None
    if isinstance(fields, dict):
        from .hubrow import _differences, _twin_fields

        for twin in _twin_fields(entry):
            compared, differ = _differences(fields, twin)
            if compared and not differ:
                return None
    return (f"{entry.id}: the registry row says params_m {stated:g}, but its loaded model holds "
            f"{count / 1e6:.2f} M parameters (more than {PARAMS_FACTOR:g}x apart): the weights are not the model the "
            "row describes; correct params_m to the weights' count, or point the row's source at the model it names")


def load_model(entry, ctx: SourceContext | None = None) -> LoadedModel:
    """Load the model of a registry entry with its tokenizer or preprocessor (see each kind).

    Raises
    ------
    ModelUnavailable naming the model and saying why (the registry says it cannot run with the locked libraries,
    ``cannot_run``; offline and not cached, package not installed, remote code
    or credentials not opted in, file missing, load error, a model that is not a Transformer in an entry declared
    one and not tagged ``control``: :func:`aniso.sources.detect.transformer_problem`); ModelRefused (a subclass) when
    the entry's modality, architecture, granularity, role or family contradicts its loaded model's config or
    tokenizer (:func:`aniso.sources.detect.declared_problem`), or whose ``params_m`` is more than 1.5 times off
    the loaded model's parameter count (:func:`params_problem`);
    InputsMissing for want of a data folder.
    """
    from .detect import declared_problem, transformer_problem

    blocked = getattr(entry, "cannot_run", None)
    if blocked is not None:
        raise ModelUnavailable(f"{entry.id}: cannot run with the locked libraries: {blocked.why}; it would run with "
                               f"{blocked.would_run_with}")
    with no_loading_bars():
        loaded = SOURCE_KINDS[entry.source.kind].load(entry, ctx or SourceContext())
    config = getattr(loaded.model, "config", None)
    counted = params_problem(entry, loaded.model)
    if counted:
        raise ModelRefused(counted)
    problem = transformer_problem(entry, getattr(config, "model_type", None))
    if problem:
        raise ModelUnavailable(problem)
    declared = declared_problem(entry, config.to_dict() if callable(getattr(config, "to_dict", None)) else None,
                                _vocabulary(loaded.tokenizer) if entry.granularity in ("byte", "char") else None)
    if declared:  # the row's role or family is not its weights': refused, as a file at odds with its config is
        raise ModelRefused(declared)
    if ctx is not None and ctx.media is not None and loaded.tokenizer is not None and entry.modality == "text":
        loaded.meta.setdefault("first_token", _first_token(entry, loaded.tokenizer, ctx))
    return loaded


def _vocabulary(tokenizer) -> list[str] | None:
    """The tokens of a loaded tokenizer (None when it has none, or cannot list them)."""
    try:
        return list(tokenizer.get_vocab())
    except (AttributeError, TypeError, ValueError, NotImplementedError):
        return None


def declared_files_problem(entry, ctx: SourceContext | None = None, kinds_only: bool = False) -> str | None:
    """:func:`aniso.sources.detect.declared_problem` of a row whose model is a transformers folder here (its source
    kind's ``transformers_folder``), read from the folder's ``config.json`` and tokenizer files without loading the
    model: a run refuses such a row before its inputs are read or its statistics are served from the cache, and
    ``aniso list`` (``kinds_only``: what :func:`~aniso.sources.detect.kind_problem` says of the modality,
    architecture and granularity, without the row's name and without importing transformers) names it. None where the folder or its config cannot be had
    here (the loading says why) or nothing contradicts."""
    import json

    from .detect import declared_problem, folder_vocabulary, kind_problem

    folder_of = SOURCE_KINDS[entry.source.kind].transformers_folder
    if folder_of is None or getattr(entry, "cannot_run", None) is not None:
        return None
    try:
        folder = folder_of(entry, ctx or SourceContext())
        config = json.loads((folder / "config.json").read_text(encoding="utf-8")) if folder is not None else None
    except (ModelUnavailable, OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    vocabulary = folder_vocabulary(folder) if entry.granularity in ("byte", "char") else None
    return (kind_problem if kinds_only else declared_problem)(entry, config, vocabulary)


def unavailable_problem(entry, ctx: SourceContext | None = None) -> str | None:
    """The one line naming the row (as ``aniso stats`` and the claims' skip reasons give it) where ``entry``'s weights
    cannot be had here, checked without loading them and without reading their bytes: a local folder or model file
    that is not there, a package not installed, a hub revision neither in the Hugging Face cache nor downloadable (the
    hub unreachable: ``HF_HUB_OFFLINE=1`` or no network). None where they can be had (or will be: the suite trains
    or builds them), and where the row's fields are refused (:class:`ModelRefused`: the load says why). A run checks
    its model so before its claims run: a run whose model never loaded is no run of it."""
    import dataclasses

    ctx = dataclasses.replace(ctx or SourceContext(), read_weights=False)
    if entry.miniature or getattr(entry, "cannot_run", None) is not None or entry.source.kind == "init":
        return None
    try:
        if entry.source.kind == "hub":
            state = cached_state(entry.source.repo, entry.source.revision)
            if (state is None or state["missing"]) and not ctx.hub.reachable():
                return str(hub._not_cached(entry)) if state is None else (
                    f"{entry.id}: hub id {entry.source.repo!r} at revision {entry.source.revision!r} is in the hub "
                    f"cache (commit {state['commit']}) but {state['missing']}, and the hub cannot be reached")
            return None
        SOURCE_KINDS[entry.source.kind].fingerprint(entry, ctx)
    except ModelRefused:
        return None
    except ModelUnavailable as exc:
        return str(exc)
    except (HubCacheError, OSError) as exc:
        return f"{entry.id}: {exc}"
    return None


def missing_checkpoints(entry, ctx: SourceContext) -> str | None:
    """For a row whose checkpoints are folders or files here (a source kind with a ``transformers_folder``: a
    package or a local folder) and whose ``checkpoints`` name their steps and ``vary`` the source: which of them are
    not here, in one phrase naming the first (its step, the source fields and why), else None."""
    series = getattr(entry, "checkpoints", None)
    kind = SOURCE_KINDS[entry.source.kind]
    if series is None or not series.vary or series.steps == "all" or kind.transformers_folder is None:
        return None
    missing = []
    for step in series.steps:
        try:
            kind.fingerprint(entry.checkpoint_entry(step), ctx)
        except ModelUnavailable as exc:
            missing.append((step, str(exc).split(": ", 1)[-1]))
    if not missing:
        return None
    step, why = missing[0]
    fields = ", ".join(f"{k} {v!r}" for k, v in series.source_fields(step).items())
    return (f"{len(missing)} of {len(series.steps)} checkpoint(s) not here, the first step {step} "
            f"({fields}): {why}")


@contextlib.contextmanager
def no_loading_bars():
    """transformers' own progress bars (its ``Loading weights`` bar) off while a model loads, and back as they were
    after: the run's console says which model it loads, and a bar's carriage-return line would be left in logs and
    CI output (a second line of error output for one model)."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def _first_token(entry, tokenizer, ctx: SourceContext) -> dict | None:
    """:func:`aniso.inputs.text.first_token` on the run's text inputs for ``entry`` (None if they cannot be had
    or the tokenizer cannot tokenize a batch)."""
    from ..inputs.media import InputsUnavailable
    from ..inputs.text import first_token

    try:
        return first_token(tokenizer, ctx.media(entry.measured_on or "text").items)
    except (InputsUnavailable, ValueError, TypeError, KeyError):
        return None


def weights_here(entry, ctx: SourceContext) -> str:
    """Where an entry's weights are, checked without network and without loading them: ``"here (package)"`` (an
    installed pip package), ``"here (folder)"`` (a local or models-folder file), ``"here (hub cache)"`` (the hub
    row's repo at its revision is in the Hugging Face cache, downloaded or imported), ``"hub only (not cached)"``,
    ``"trained by the suite on first use"``, ``"built by the suite"`` (untrained initialisations) or
    ``"missing: <why>"`` (package not installed, file absent, remote code not opted in, unreadable cache, checkpoints
    of the row's series absent: :func:`missing_checkpoints`...), ``"refused: <why>"`` (the row's modality,
    architecture or granularity contradicts its model's files: :func:`declared_files_problem`; a hub cache's
    snapshot that is a twin's random weights, kept by ``aniso run --twin --keep-twins``:
    :func:`aniso.sources.hub.kept_twin_problem`; a local folder
    without the weights the load reads, :func:`aniso.sources.hubcache.missing_weights`: config.json only), or
    ``"cannot run with the locked libraries (registry: cannot_run)"`` (the row's ``cannot_run`` says why).

    The model files are checked to be there, regular files, and readable, but not read (``ctx`` is taken with
    ``read_weights=False``): a listing of many rows on the same files reads none of their bytes, and a file whose
    SHA-256 differs from the registry's ``sha256`` is found when the model is measured, not here."""
    import dataclasses

    ctx = dataclasses.replace(ctx, read_weights=False)
    if entry.miniature:
        return "trained by the suite on first use"
    if getattr(entry, "cannot_run", None) is not None:
        return "cannot run with the locked libraries (registry: cannot_run)"
    kind = entry.source.kind
    try:
        if kind == "hub":
            variable = hub_variable_problem()  # HF_HUB_CACHE naming a file was "not cached here"
            if variable is not None:
                return f"missing: {variable}"
            check_permissions(entry, download=False)
            state = cached_state(entry.source.repo, entry.source.revision)
            if state is None:
                if entry.gated and not entry.use_auth_token:
                    return "hub only (not cached; gated: use_auth_token: true to download it)"
                return "hub only (not cached)"
            if state["missing"]:
                return f"missing: in the hub cache, but {state['missing']}"
            from .hub import kept_twin_problem

            twin = kept_twin_problem(entry, state["commit"], ctx)
            if twin is not None:
                return f"refused: {twin}"
            return "here (hub cache)"
        SOURCE_KINDS[kind].fingerprint(entry, ctx)
        missing = missing_checkpoints(entry, ctx)
    except ModelRefused as exc:  # the row's fields are wrong (a package its distribution does not provide...)
        from .base import row_of

        said = str(exc)
        return "refused: " + (said.removeprefix(f"{row_of(entry)}: ") if said.startswith(row_of(entry))
                              else said.split(": ", 1)[-1])
    except (ModelUnavailable, HubCacheError, OSError) as exc:
        return "missing: " + str(exc).split(": ", 1)[-1]
    if missing:
        return f"missing: {missing}"
    refused = declared_files_problem(entry, ctx, kinds_only=True)
    if refused:
        return f"refused: {refused} (fix the row's fields or its source)"
    if kind in ("local", "package"):  # the weights its load looks for (named, not read), as the load refuses them
        from .hubcache import missing_weights
        from .local import directory

        folder = directory(entry, ctx) if kind == "local" else SOURCE_KINDS[kind].transformers_folder(entry, ctx)
        lacking = missing_weights(folder) if folder is not None else None
        if lacking is not None:
            return f"refused: {lacking}"
    if kind == "init":
        return "built by the suite"
    if getattr(entry.source, "package", None):
        return "here (package)"
    return "here (folder)"
