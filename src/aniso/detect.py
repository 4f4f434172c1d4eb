"""A registry entry for a model that is not in the registry, from its transformers config (``aniso run``).

The modality, granularity, architecture and role follow from the config's ``model_type`` and fields; what cannot
be told raises :class:`UndetectableModel` saying which registry fields to write by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["UndetectableModel", "entry_fields", "config_of", "registry_entry"]

#: model_type → (modality, granularity, architecture) for the types that are not subword-text Transformers.
_TYPES: dict[str, tuple[str, str, str]] = {
    **{t: ("text", "char", "transformer") for t in ("canine", "character_bert")},
    **{t: ("text", "byte", "transformer") for t in ("byt5",)},
    **{t: ("speech", "audio-frame", "transformer") for t in ("whisper", "wav2vec2", "hubert", "wavlm", "data2vec-audio",
                                                             "unispeech", "unispeech-sat", "sew", "sew-d")},
    **{t: ("vision", "patch", "transformer") for t in ("vit", "deit", "beit", "segformer", "cvt", "swin", "dinov2",
                                                       "data2vec-vision", "vit_mae", "vit_msn")},
    **{t: ("vision", "pixel", "cnn") for t in ("resnet", "convnext", "convnextv2", "efficientnet", "van", "regnet",
                                               "mobilenet_v1", "mobilenet_v2", "bit")},
}


class UndetectableModel(ValueError):
    """The config does not say enough to write a registry entry; the message names the fields to add by hand."""


def config_of(model: str) -> dict[str, Any]:
    """The config of a local folder (its ``config.json``) or, where the hub is reachable, of a hub id.

    Raises UndetectableModel naming the folder or id when neither can be read (offline: saying so).
    """
    path = Path(model)
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            raise UndetectableModel(f"{path}: no config.json in this folder (a transformers model folder has one)")
        try:
            return json.loads(cfg.read_text())
        except json.JSONDecodeError as exc:
            raise UndetectableModel(f"{cfg}: not valid JSON ({exc})") from None
    if not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)?", model):
        raise UndetectableModel(f"{model!r} is no registry id, no model folder and no hub id")
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(model).to_dict()  # no remote code: trust_remote_code stays False
    except Exception as exc:  # noqa: BLE001 - offline, unknown id, gated: all mean "cannot read it here"
        raise UndetectableModel(f"{model}: cannot read its config from the hub ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}); offline, only registry models "
                                "and local folders run") from None


def entry_fields(config: dict[str, Any]) -> dict[str, str]:
    """``modality``, ``granularity``, ``architecture``, ``role`` and ``family`` from a transformers config dict.

    Raises UndetectableModel when the config has no ``model_type`` or one whose modality is not known here.
    """
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise UndetectableModel("the config has no model_type; add a models.yaml entry with modality, granularity, "
                                "architecture, role and family")
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    if model_type in _TYPES:
        modality, granularity, architecture = _TYPES[model_type]
    elif "vocab_size" in config and ("num_hidden_layers" in config or "n_layer" in config or "num_layers" in config):
        modality, granularity, architecture = "text", "subword", "transformer"
    else:
        raise UndetectableModel(f"model_type {model_type!r}: its modality is not known to aniso; add a models.yaml "
                                "entry with modality, granularity, architecture, role and family")
    if config.get("is_encoder_decoder"):
        role = "encoder-decoder"
    elif modality == "text" and (config.get("is_decoder") or any(a.endswith(("ForCausalLM", "LMHeadModel"))
                                                                 for a in architectures)):
        role = "decoder"
    else:
        role = "encoder"
    return {"modality": modality, "granularity": granularity, "architecture": architecture, "role": role,
            "family": model_type}


def registry_entry(model: str, config: dict[str, Any]) -> dict[str, Any]:
    """A registry row (as YAML data) for ``model`` (a local folder or hub id) with fields from ``config``."""
    path = Path(model)
    ident = re.sub(r"[^A-Za-z0-9._\-]", "-", path.name if path.is_dir() else model).strip("-") or "model"
    source = {"kind": "local", "path": str(path.resolve())} if path.is_dir() else {"kind": "hub", "repo": model}
    return {"id": ident, "source": source, **entry_fields(config),
            "description": f"run by `aniso run {model}`; fields detected from its config"}
