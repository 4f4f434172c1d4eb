"""Whether a model folder is the model a registry hub row names: the check of ``aniso hub import`` under a row's hub
id and of the hub source's load of a row's cached snapshot.

A registry hub row says what its model is: its ``full`` config (the real model's config.json fields: widths,
layers, heads, vocabulary) and its parameter count (``params_m``). A folder imported under the row's hub id, or a
snapshot of the hub cache loaded for the row, whose config.json contradicts them is another model: measured, its
numbers would be reported under the row's name. :func:`row_problem` says so in one phrase; the callers refuse it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["PARAMS_TOLERANCE", "SIZE_FIELDS", "hub_rows", "row_problem", "safetensors_parameters"]

#: The config fields compared with a row's ``full`` config: its widths, layers (depths), heads and vocabulary, by the
#: names transformers' configs give them (EfficientNet's by its width and depth coefficients). Only these: a field of
#: the ``full`` config that sizes something else (an image, a patch, a kernel) would refuse a genuine checkpoint if
#: the row's value were off, and says nothing these do not about which model a folder holds.
SIZE_FIELDS = frozenset({"hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "hidden_sizes",
                         "num_hidden_layers", "num_layers", "n_layer", "num_decoder_layers", "depths", "depth",
                         "num_attention_heads", "num_heads", "n_head", "vocab_size", "intermediate_size", "d_ff",
                         "ffn_dim", "hidden_dim", "width_coefficient", "depth_coefficient"})
#: How far a folder's parameter count may lie from a row's ``params_m`` (a fraction of it) when the row has no
#: ``full`` config to compare: rows round their counts, and a checkpoint may hold a head the count leaves out.
PARAMS_TOLERANCE = 0.25


def hub_rows(entries, hub_id: str) -> list:
    """The registry rows (of ``entries``) whose hub source names ``hub_id`` (their ``repo``: of the source kinds'
    schemas, only :class:`aniso.sources.hub.HubSource` has one), in order."""
    return [e for e in entries if getattr(e.source, "repo", None) == hub_id]


def _config(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # no config, or a damaged one: the import and the load say so themselves
    return data if isinstance(data, dict) else None


def _differences(config: dict, expected: dict) -> tuple[list[str], list[tuple[str, object, object]]]:
    """The size fields of ``expected`` that ``config`` holds too, and those among them whose values differ."""
    compared = [k for k, v in expected.items() if k in SIZE_FIELDS and k in config
                and isinstance(v, (int, list)) and not isinstance(v, bool)]
    return compared, [(k, config[k], expected[k]) for k in compared if config[k] != expected[k]]


def _twin_fields(entry) -> list[dict]:
    """The config fields of the row's twin (:func:`aniso.sources.twin.twin_spec`, at its tiny sizes), as the row's
    own and as a checkpoint's of its series (a checkpoint's entry, ``ID.stepN``, has no series, but its twin was
    built with the series' depth); none when the row has no twin."""
    from .twin import _DEPTH_FIELDS, _SERIES_LAYERS, TwinError, twin_spec

    try:
        fields = twin_spec(entry)[1]
    except (TwinError, KeyError, TypeError, ValueError):
        return []
    deeper = {k: max(v, _SERIES_LAYERS) if k in _DEPTH_FIELDS and isinstance(v, int) else v for k, v in fields.items()}
    return [fields, deeper]


def safetensors_parameters(folder: Path) -> int | None:
    """The number of parameters the ``*.safetensors`` files of ``folder`` hold, read from their headers (no tensor
    is loaded), or None when a header cannot be read (the import and the load name the damaged file)."""
    total = 0
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    for path in files:
        try:
            with path.open("rb") as f:
                n = int.from_bytes(f.read(8), "little")
                header = json.loads(f.read(n).decode("utf-8")) if 2 <= n <= 100_000_000 else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        if not isinstance(header, dict):
            return None
        for name, info in header.items():
            if name != "__metadata__" and isinstance(info, dict) and isinstance(info.get("shape"), list):
                total += math.prod(info["shape"])
    return total


def row_problem(entry, folder: str | Path, twins: bool = False) -> str | None:
    """Why the model folder (or hub snapshot) ``folder`` is not the model of registry hub row ``entry``, in one
    phrase naming the row and the mismatch, or None.

    With a ``full`` config the row's widths, layers, heads and vocabulary (:data:`SIZE_FIELDS`) are compared with
    the same fields of the folder's config.json (those it holds); without one, or when config.json holds none of
    them, the parameter count of its safetensors weights with the row's ``params_m`` (within
    :data:`PARAMS_TOLERANCE`). ``twins``: a folder at the sizes of the row's twin (its ``tiny`` config, as ``aniso
    run ID --twin`` builds and imports it into a hub cache of its own) passes too. A row that says neither (a row
    detected from a hub id), or a folder without a readable config.json, passes: there is nothing to compare.
    """
    folder = Path(folder)
    config = _config(folder)
    if config is None:
        return None
    named = f"the registry row {entry.id} (hub id {entry.source.repo})"
    for twin in _twin_fields(entry) if twins else ():
        compared, differ = _differences(config, twin)
        if compared and not differ:
            return None
    full = getattr(entry, "full", None) or {}
    compared, differ = _differences(config, full)
    if differ:
        said = ", ".join(f"{k} {got}" for k, got, _ in differ[:4]) + (f" (and {len(differ) - 4} more)"
                                                                       if len(differ) > 4 else "")
        want = ", ".join(f"{k} {want}" for k, _, want in differ[:4])
        return (f"its config.json says {said}, where {named} says {want} (its full config): another model; import "
                "it under its own hub id")
    if compared or entry.params_m is None:
        return None
    count = safetensors_parameters(folder)
    if count is None:
        return None
    if abs(count / 1e6 - entry.params_m) > PARAMS_TOLERANCE * entry.params_m:
        return (f"its weights hold {count / 1e6:.1f} M parameters, where {named} says params_m {entry.params_m:g} "
                f"(within {PARAMS_TOLERANCE:.0%}): another model; import it under its own hub id")
    return None
