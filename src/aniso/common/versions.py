"""The versions of the libraries that change the suite's numbers.

Every cache key (:func:`cache_key`) and every ``results.json`` names them, so statistics computed
under other versions are never silently reused, and a verdict says what it was computed with.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json

__all__ = ["NUMERIC_PACKAGES", "library_versions", "STATS_FORMAT_VERSION", "cache_key"]

#: Bump when the accumulated state or its meaning changes: old cache entries are then ignored.
STATS_FORMAT_VERSION = 8  # 6: the sidecar's checksum covers the sidecar too; 7: entries sealed, holding their key;
#: 8: TwoNN from the reservoir's distinct vectors (NaN below TWONN_MIN_POINTS of them), summaries hold n_distinct

#: Distributions whose version can change a hidden state, a statistic or a verdict: the tensor and model
#: libraries, the readers of weights (ONNX, CTranslate2 comparisons, EfficientNet-Lite's architecture), and the
#: decoders of inputs (images, audio, the fallback photographs). The suite's own version is included.
NUMERIC_PACKAGES = ("aniso", "torch", "transformers", "tokenizers", "safetensors", "numpy", "scipy", "pillow",
                    "soundfile", "onnx", "onnxruntime", "ctranslate2", "efficientnet-lite-pytorch", "scikit-image")


@functools.cache
def library_versions(packages: tuple[str, ...] = NUMERIC_PACKAGES) -> dict[str, str | None]:
    """``{distribution: installed version or None}`` for ``packages`` (default :data:`NUMERIC_PACKAGES`)."""
    out: dict[str, str | None] = {}
    for dist in packages:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def cache_key(parts: dict) -> str:
    """A stable hex key for the JSON-serialisable ``parts`` (model, revision, corpus fingerprint, settings).

    The key also covers the cache format and the versions of the libraries that change numbers
    (:func:`library_versions`), so an entry written under other versions is not reused.
    """
    payload = json.dumps({"format": STATS_FORMAT_VERSION, "versions": library_versions(), **parts},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]
