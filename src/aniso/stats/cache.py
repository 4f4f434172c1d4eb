"""The statistics cache on disk: per-model statistics (safetensors plus a sealed JSON sidecar) and small JSON
results, keyed by :func:`aniso.common.versions.cache_key`.

Every entry holds the key it was written under and a seal (:mod:`aniso.common.seal`: a digest keyed by the secret in
the cache folder's ``seal.key``) over that key and every byte its reader trusts, so that an entry edited (its
digest recomputed or not) or copied under another entry's key does not verify. An entry that does not verify is set
aside (quarantined) with a warning and recomputed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..common.files import atomic_write, sha256_file, warn_as_file
from ..common.seal import KEY_NAME, SealKeyError, load_key, seal, verify
from ..common.versions import STATS_FORMAT_VERSION
from .accumulators import LayerAccumulator
from .results import LayerSummary, ModelStats, summary_dict

__all__ = ["StatsCache", "JsonCache"]


class StatsCache:
    """Per-model statistics on disk, keyed by :func:`cache_key`.

    Each entry is a safetensors file (no pickle) plus a JSON sidecar holding the entry's key, the metadata and the
    summaries, and one seal (:func:`aniso.common.seal.seal`, keyed by the folder's ``seal.key``) over the data
    file's SHA-256 and every other field of the sidecar; both are written atomically. An entry whose seal, key or
    contents do not verify is reported with a warning and treated as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _key(self) -> bytes:
        """The folder's seal key (made on first use, with a warning where the folder already holds entries: the key
        that sealed them is gone, so none of them can be verified and each is recomputed when it is asked for).
        Raises :class:`aniso.common.seal.SealKeyError`."""
        path = self.root / KEY_NAME
        if not path.exists() and not path.is_symlink():
            entries = sum(1 for _ in self.root.glob("*.safetensors")) if self.root.is_dir() else 0
            key = load_key(path)
            if entries:
                warn_as_file(str(self.root), f"statistics cache {self.root}: its {KEY_NAME} is gone, so none of "
                             f"its {entries} entries can be verified (a cache entry is read only under the key that "
                             f"sealed it); a new {KEY_NAME} was made, and each entry is moved aside and recomputed "
                             "when a run asks for it", RuntimeWarning, __name__)
            return key
        return load_key(path)

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
            seal_key = self._key()
        except SealKeyError as exc:
            warn_as_file(str(data_path), f"statistics cache entry {data_path} cannot be verified ({exc}); "
                         "recomputing it", RuntimeWarning, __name__)
            return None
        try:
            for path in (meta_path, data_path):  # the cache writes regular files: a link (to /dev/zero) is never read
                if path.is_symlink() or (path.exists() and not path.is_file()):
                    raise ValueError(f"{path.name} is " + ("a symbolic link" if path.is_symlink() else
                                                           "no regular file") + ", not a file the cache wrote")
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not isinstance(meta, dict):
                raise ValueError("its sidecar is no JSON object")
            if meta.get("key") != key:
                raise ValueError(f"it was written under the key {str(meta.get('key'))[:16]!r}…, not this entry's: "
                                 "copied from another entry")
            if not verify(seal_key, self._entry_text(sha256_file(data_path), meta), meta.get("seal")):
                raise ValueError("its seal does not verify: edited after it was written, or sealed with another "
                                 f"{KEY_NAME} (another cache folder's, or one since deleted)")
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
                _check_first_order(stats)
            return stats
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            from ..common.files import quarantine

            moved = quarantine(data_path, meta_path)
            warn_as_file(str(data_path), f"statistics cache entry {data_path} is corrupt or truncated ({exc}); "
                         f"{moved}; recomputing it", RuntimeWarning, __name__)
            return None

    def save(self, key: str, stats: ModelStats) -> None:
        """Write ``stats`` under ``key`` atomically (data first, then the sidecar that validates it). Raises OSError
        where a file cannot be written (a full disk, a file-size limit)."""
        data_path, meta_path = self._paths(key)
        seal_key = self._key()  # (before the data file: a first key is made where the folder holds no entry)
        tensors = {}
        for i, acc in enumerate(stats.layers):
            for name, arr in acc.state().items():
                tensors[f"layer{i}/{name}"] = np.ascontiguousarray(arr)
        atomic_write(data_path, lambda p: _save_tensors(tensors, p))
        meta = {
            "key": key,
            "format": STATS_FORMAT_VERSION,
            "model_id": stats.model_id,
            "layer_names": stats.layer_names,
            "meta": stats.meta,
            "summaries": [summary_dict(s) for s in stats.summaries()],
        }
        meta = json.loads(json.dumps(meta, default=str))  # as the reader will see it
        meta["seal"] = seal(seal_key, self._entry_text(sha256_file(data_path), meta))
        atomic_write(meta_path, lambda p: p.write_text(json.dumps(meta, indent=1), encoding="utf-8"))

    @staticmethod
    def _entry_text(data_sha256: str, meta: dict) -> str:
        """What a whole entry's seal covers: the data file's SHA-256 and the canonical JSON of every other field of
        the sidecar (the entry's key, summaries, layer names, metadata), so that an edit to any byte the reader
        trusts, in either file, or the entry copied under another key, makes the entry corrupt."""
        body = {k: v for k, v in meta.items() if k != "seal"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
        return f"{data_sha256}\n{text}"


def _save_tensors(tensors: dict, path: Path) -> None:
    """``safetensors.numpy.save_file``, its write errors (a full disk, a file-size limit), which it raises as a
    ``SafetensorError`` naming the system's error in its text, raised as the OSError they are, so that a run that
    cannot write its cache entry keeps its statistics in memory as for any other write error."""
    from safetensors import SafetensorError
    from safetensors.numpy import save_file

    try:
        save_file(tensors, str(path))
    except SafetensorError as exc:
        said = re.search(r"I/O error: (.*) \(os error (\d+)\)", str(exc))  # "…: File too large (os error 27)"
        if said is None:
            raise OSError(str(exc)) from None
        raise OSError(int(said.group(2)), said.group(1)) from None


def _check_first_order(stats: ModelStats) -> None:
    """Raise ValueError where a layer's stored summary is not what its stored sums give: avg cos, drift norm and mean
    norm recomputed from the first-order sums (cheap: no SVD) must equal the summary's to 1e-6 relative. A sidecar
    edited and sealed again with the folder's own key (whoever can write the cache can read it) is caught here."""
    for name, layer, summary in zip(stats.layer_names, stats.layers, stats._summaries):
        if layer.count == 0:
            continue
        first = layer._first.summarise(layer, 0, 0)
        for key in ("mean_cosine", "drift_norm", "mean_norm"):
            stored, recomputed = getattr(summary, key), float(first[key])
            if math.isnan(stored) and math.isnan(recomputed):
                continue
            if not abs(stored - recomputed) <= 1e-6 * max(1.0, abs(recomputed)):
                raise ValueError(f"layer {name}: its summary's {key} {stored!r} is not what its sums give "
                                 f"({recomputed!r})")


class JsonCache:
    """Small JSON results (e.g. an untrained-block sweep) on disk, keyed by :func:`cache_key`.

    Each entry is one file ``<root>/<key>.json`` holding its key, the payload and their seal (keyed by the folder's
    ``seal.key``), written atomically; an entry that does not verify (edited, or copied under another key) is
    reported with a warning and treated as missing, so the caller recomputes it.
    """

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.json"

    @staticmethod
    def _sealed_text(key: str, payload: Any) -> str:
        return json.dumps({"key": key, "payload": payload}, sort_keys=True)

    def load(self, key: str) -> Any | None:
        """The cached payload for ``key``, or None if absent or corrupt (with a warning)."""
        path = self._path(key)
        if not path.exists():
            return None
        try:
            seal_key = load_key(self.root / KEY_NAME)
        except SealKeyError as exc:
            warn_as_file(str(path), f"cache entry {path} cannot be verified ({exc}); recomputing it",
                         RuntimeWarning, __name__)
            return None
        try:
            if path.is_symlink() or not path.is_file():
                raise ValueError("a symbolic link or no regular file, not a file the cache wrote")
            doc = json.loads(path.read_text(encoding="utf-8"))
            if doc.get("key") != key:
                raise ValueError("it was written under another key: copied from another entry")
            if not verify(seal_key, self._sealed_text(key, doc["payload"]), doc.get("seal")):
                raise ValueError(f"its seal does not verify: edited after it was written, or written with another "
                                 f"cache folder's {KEY_NAME}")
            return doc["payload"]
        except Exception as exc:  # noqa: BLE001 - any defect means: recompute
            from ..common.files import quarantine

            warn_as_file(str(path), f"cache entry {path} is corrupt or truncated ({exc}); {quarantine(path)}; "
                         "recomputing it", RuntimeWarning, __name__)
            return None

    def save(self, key: str, payload: Any) -> None:
        """Write ``payload`` (JSON-serialisable) under ``key`` atomically."""
        doc = {"key": key, "payload": payload,
               "seal": seal(load_key(self.root / KEY_NAME), self._sealed_text(key, payload))}
        atomic_write(self._path(key), lambda p: p.write_text(json.dumps(doc), encoding="utf-8"))
