"""Source kind ``hub``: a model on the Hugging Face hub, loaded with ``from_pretrained`` at a revision.

The local Hugging Face cache is read first (the revision resolved to a commit there, no network; a model folder
gets there with ``aniso hub import``, see :mod:`aniso.sources.hubcache`); the hub only if it is reachable (probed once per
run), so an offline machine skips hub models at once, saying which weights are not cached here. Safetensors only;
remote code and credentials only with the entry's explicit opt-in.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions

__all__ = ["HubSource", "Placement", "KIND", "from_pretrained", "placement_key"]


class Placement(Strict):
    """How a model's weights are held: ``dtype`` (float32, the default, or half precision for models too big for
    it) and ``device_map: auto`` (accelerate spreads the layers over every GPU of the node, then the CPU)."""

    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    device_map: Literal["auto"] | None = None


class HubSource(Placement):
    """A model on the Hugging Face hub, loaded with ``from_pretrained`` at ``revision``."""

    kind: Literal["hub"]
    repo: str = Field(min_length=1)
    revision: str = "main"


def placement_key(source) -> str:
    """What a source's placement adds to its fingerprint: ``""`` for float32, else ``":<dtype>"`` (half precision
    changes the numbers; where the layers run does not)."""
    dtype = getattr(source, "dtype", "float32")
    return "" if dtype == "float32" else f":{dtype}"


def from_pretrained(entry, where: str, **kwargs: Any) -> tuple[Any, Any, Any]:
    """``(model, tokenizer, processor)`` from a Hugging Face folder or hub id: the model (safetensors, eval mode, in
    the source's ``dtype`` and ``device_map``, see :class:`Placement`) and, by the entry's modality, its tokenizer (text), feature extractor (speech) or image processor
    (vision, PIL backend). Raises OSError as transformers does when the files cannot be found."""
    from transformers import AutoFeatureExtractor, AutoModel, AutoTokenizer

    from ..inputs.processors import pretrained_image_processor

    common = dict(trust_remote_code=entry.trust_remote_code, **kwargs)
    if entry.use_auth_token:
        common["token"] = True
    placement = {"dtype": getattr(entry.source, "dtype", "float32")}
    if getattr(entry.source, "device_map", None):
        placement["device_map"] = entry.source.device_map
    model = AutoModel.from_pretrained(where, use_safetensors=True, **placement, **common)
    model.eval()
    preprocessors = {
        "speech": lambda: (None, AutoFeatureExtractor.from_pretrained(where, **common)),
        "vision": lambda: (None, pretrained_image_processor(where, **common)),
        "text": lambda: (AutoTokenizer.from_pretrained(where, **common), None),
    }
    tokenizer, processor = preprocessors[entry.modality]()
    return model, tokenizer, processor


def fingerprint(entry, ctx: SourceContext) -> str:
    """``hub:<repo>@<revision>`` (pin a commit hash as revision for exact reproducibility), followed by
    ``#<commit>`` when the local Hugging Face cache resolves the revision to a commit (read from the cache, no
    network), so statistics of an imported folder and of a later download of the same revision are kept apart."""
    from .hubcache import HubCacheError, resolve_commit

    check_permissions(entry)
    src = entry.source
    try:
        commit = resolve_commit(src.repo, src.revision)
    except (HubCacheError, OSError):
        commit = None
    pinned = f"#{commit}" if commit and commit != src.revision else ""
    return f"hub:{src.repo}@{src.revision}{pinned}{placement_key(src)}"


def _not_cached(entry) -> ModelUnavailable:
    from .hubcache import cache_root, cached_revisions

    src = entry.source
    held = cached_revisions(src.repo)
    has = f"; it holds revision(s) {', '.join(held)} of it" if held else ""
    return ModelUnavailable(
        f"{entry.id}: hub id {src.repo!r} at revision {src.revision!r} is not cached here ({cache_root()}{has}) and "
        f"the hub cannot be reached (HF_HUB_OFFLINE=1 or no network); `aniso hub import {src.repo} FOLDER` puts a "
        "model folder there"
    )


def load(entry, ctx: SourceContext) -> LoadedModel:
    """From the local Hugging Face cache (the revision resolved there, no network), else from the hub if
    reachable. ``origin`` names the repo, revision and commit, and whether the snapshot was downloaded or
    imported from a folder (``aniso hub import``). Raises ModelUnavailable naming the model: not cached here and
    the hub unreachable (at once, no retries), or a load error."""
    from .hubcache import HubCacheError, cached_state

    check_permissions(entry)
    src = entry.source
    try:
        state = cached_state(src.repo, src.revision)
    except HubCacheError as exc:
        raise ModelUnavailable(f"{entry.id}: {exc}") from None
    if state is not None and state["missing"]:  # a download cut short: the hub may complete it
        if not ctx.hub.reachable():
            raise ModelUnavailable(f"{entry.id}: hub id {src.repo!r} at revision {src.revision!r} is in the hub "
                                   f"cache (commit {state['commit']}) but {state['missing']}, and the hub cannot be "
                                   "reached")
        state = None
    if state is None:
        if not ctx.hub.reachable():
            raise _not_cached(entry)
        try:
            model, tok, proc = from_pretrained(entry, src.repo, revision=src.revision)
        except OSError as exc:
            raise ModelUnavailable(f"{entry.id}: could not load {src.repo!r}@{src.revision}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        state = cached_state(src.repo, src.revision)
        where = "hub"
    else:
        try:
            model, tok, proc = from_pretrained(entry, src.repo, revision=state["commit"], local_files_only=True)
        except OSError as exc:
            raise ModelUnavailable(f"{entry.id}: {src.repo!r}@{src.revision} is in the hub cache "
                                   f"(commit {state['commit']}) but cannot be loaded from it: "
                                   f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        where = "hub cache"
    origin = f"{where}: {src.repo}@{src.revision}"
    if state is not None:
        origin += f" (commit {state['commit']}, {state['origin']})"
    return LoadedModel(entry, model, tok, origin, proc)


KIND = SourceKind("hub", HubSource, fingerprint, load)
