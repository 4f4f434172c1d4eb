"""Source kind ``hub``: a model on the Hugging Face hub, loaded with ``from_pretrained`` at a revision.

The local Hugging Face cache is tried first; the hub only if it is reachable (probed once per run), so an offline
machine skips hub models at once, saying which weights it could not load. Safetensors only; remote code and
credentials only with the entry's explicit opt-in.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..schema import Strict
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
    """``hub:<repo>@<revision>`` (pin a commit hash as revision for exact reproducibility)."""
    check_permissions(entry)
    return f"hub:{entry.source.repo}@{entry.source.revision}{placement_key(entry.source)}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    """From the local Hugging Face cache, else from the hub if reachable. Raises ModelUnavailable naming the model
    (not cached and offline, or a load error)."""
    check_permissions(entry)
    src = entry.source
    try:
        model, tok, proc = from_pretrained(entry, src.repo, revision=src.revision, local_files_only=True)
        origin = f"hub cache: {src.repo}@{src.revision}"
    except OSError:
        if not ctx.hub.reachable():
            raise ModelUnavailable(
                f"{entry.id}: weights not available offline (hub id {src.repo!r} at revision {src.revision!r} "
                "is not in the local Hugging Face cache and the hub cannot be reached)"
            ) from None
        try:
            model, tok, proc = from_pretrained(entry, src.repo, revision=src.revision)
        except OSError as exc:
            raise ModelUnavailable(f"{entry.id}: could not load {src.repo!r}@{src.revision}: {exc}") from None
        origin = f"hub: {src.repo}@{src.revision}"
    commit = getattr(model.config, "_commit_hash", None)
    if commit:
        origin += f" (commit {commit})"
    return LoadedModel(entry, model, tok, origin, proc)


KIND = SourceKind("hub", HubSource, fingerprint, load)
