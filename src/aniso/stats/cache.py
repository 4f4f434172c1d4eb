"""The statistics cache on disk: per-model statistics (safetensors plus a checksummed JSON sidecar) and small JSON
results, keyed by :func:`aniso.common.versions.cache_key`.

An entry whose checksum or contents do not verify is set aside (quarantined) with a warning and recomputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..common.files import atomic_write, sha256_file
from ..common.versions import STATS_FORMAT_VERSION
from .accumulators import LayerAccumulator
from .results import LayerSummary, ModelStats, summary_dict

__all__ = ["StatsCache", "JsonCache"]


class StatsCache:
    """Per-model statistics on disk, keyed by :func:`cache_key`.

    Each entry is a safetensors file (no pickle) plus a JSON sidecar holding the metadata and the summaries, and
    one SHA-256 over the data file and every other field of the sidecar; both are written atomically. An entry whose
    checksum or contents do not verify is reported with a warning and treated
    as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.root / f"{key}.safetensors", self.root / f"{key}.json"

    def load(self, key: str) -> ModelStats | None:
        """The cached :class:`ModelStats` for ``key``, or None if absent, not yet complete, or corrupt (corrupt:
        moved aside, with a warning; a data file or sidecar that is a symbolic link or no regular file, which the
        cache never writes, counts as corrupt and is not read).

        An entry is complete once its sidecar (``KEY.json``, written last by :meth:`save`) exists: data without a
        sidecar is an entry another process is writing (or one a crash left unfinished), and is left in place as
        absent; the caller computes the entry under the lock (:func:`aniso.common.files.exclusive`), which waits
        for the writer and then reads the complete entry, or writes over an unfinished one.
        """
        from safetensors.numpy import load_file

        data_path, meta_path = self._paths(key)
        if not meta_path.exists():
            return None
        try:
            for path in (meta_path, data_path):  # the cache writes regular files: a link (to /dev/zero) is never read
                if path.is_symlink() or (path.exists() and not path.is_file()):
                    raise ValueError(f"{path.name} is " + ("a symbolic link" if path.is_symlink() else
                                                           "no regular file") + ", not a file the cache wrote")
            meta = json.loads(meta_path.read_text())
            if meta.get("sha256") != self._entry_digest(sha256_file(data_path), meta):
                raise ValueError("checksum mismatch (data or sidecar)")
            arrays = load_file(str(data_path))
            layers = []
            for i in range(len(meta["layer_names"])):
                state = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"layer{i}/")}
                layers.append(LayerAccumulator.from_state(state))
            stats = ModelStats(meta["model_id"], list(meta["layer_names"]), layers, meta.get("meta", {}))
            if meta.get("summaries") is not None:
                stats._summaries = [
                    LayerSummary(**{k: (math.nan if v is None else v) for k, v in s.items()}) for s in meta["summaries"]
                ]
            return stats
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            from ..common.files import quarantine

            moved = quarantine(data_path, meta_path)
            warnings.warn(
                f"statistics cache entry {data_path} is corrupt or truncated ({exc}); {moved}; recomputing it",
                RuntimeWarning,
                stacklevel=2,
            )
            return None

    def save(self, key: str, stats: ModelStats) -> None:
        """Write ``stats`` under ``key`` atomically (data first, then the sidecar that validates it)."""
        from safetensors.numpy import save_file

        data_path, meta_path = self._paths(key)
        tensors = {}
        for i, acc in enumerate(stats.layers):
            for name, arr in acc.state().items():
                tensors[f"layer{i}/{name}"] = np.ascontiguousarray(arr)
        atomic_write(data_path, lambda p: save_file(tensors, str(p)))
        meta = {
            "format": STATS_FORMAT_VERSION,
            "model_id": stats.model_id,
            "layer_names": stats.layer_names,
            "meta": stats.meta,
            "summaries": [summary_dict(s) for s in stats.summaries()],
        }
        meta = json.loads(json.dumps(meta, default=str))  # as the reader will see it
        meta["sha256"] = self._entry_digest(sha256_file(data_path), meta)
        atomic_write(meta_path, lambda p: p.write_text(json.dumps(meta, indent=1)))

    @staticmethod
    def _entry_digest(data_sha256: str, meta: dict) -> str:
        """The checksum of a whole entry: SHA-256 of the data file's SHA-256 and the canonical JSON of every other
        field of the sidecar (summaries, layer names, metadata), so that an edit to any byte the reader trusts, in
        either file, makes the entry corrupt."""
        body = {k: v for k, v in meta.items() if k != "sha256"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
        return hashlib.sha256(f"{data_sha256}\n{text}".encode("utf-8")).hexdigest()


class JsonCache:
    """Small JSON results (e.g. an untrained-block sweep) on disk, keyed by :func:`cache_key`.

    Each entry is one file ``<root>/<key>.json`` holding the payload and its
    SHA-256, written atomically; an entry that does not verify is reported with
    a warning and treated as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    @staticmethod
    def _digest(payload: Any) -> str:
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def load(self, key: str) -> Any | None:
        """The cached payload for ``key``, or None if absent or corrupt (with a warning)."""
        path = self._path(key)
        if not path.exists():
            return None
        try:
            doc = json.loads(path.read_text())
            if doc.get("sha256") != self._digest(doc["payload"]):
                raise ValueError("checksum mismatch")
            return doc["payload"]
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            from ..common.files import quarantine

            warnings.warn(f"cache entry {path} is corrupt or truncated ({exc}); {quarantine(path)}; recomputing it",
                          RuntimeWarning, stacklevel=2)
            return None

    def save(self, key: str, payload: Any) -> None:
        """Write ``payload`` (JSON-serialisable) under ``key`` atomically."""
        doc = {"payload": payload, "sha256": self._digest(payload)}
        atomic_write(self._path(key), lambda p: p.write_text(json.dumps(doc)))
