"""Operationalisations that several claims share (one copy each), computed from a model's layer statistics.

``docs/claims.md``, "Metrics": a layer has *significant anisotropy* when its avg cos exceeds q95(d), the 95th
percentile of the cosine of two isotropic Gaussian vectors in its dimension (G App. B).
"""

from __future__ import annotations

import numpy as np

__all__ = ["significant_anisotropy", "SIGNIFICANCE_RULE"]

#: The rule, in words, as every result states it.
SIGNIFICANCE_RULE = "some layer has avg cos > q95(d)"


def significant_anisotropy(stats) -> tuple[bool, dict]:
    """Whether some layer of ``stats`` (a :class:`~aniso.stats.ModelStats`) has significant anisotropy.

    Returns ``(holds, measured)``: ``measured`` gives the highest avg cos and its layer, the q95(d) and d of the
    layer furthest above its q95 (or least below it), the number of significant layers, the number of layers and
    the avg cos of every layer (rounded to 5 decimals). G §2 Fig. 1, §3.1 Fig. 2, §3.2 Fig. 3b.
    """
    layers = stats.summaries()
    cos = np.array([s.mean_cosine for s in layers])
    q95 = np.array([s.q95 for s in layers])
    significant = cos > q95
    best = int(np.argmax(cos - q95))
    return bool(significant.any()), {
        "max_avg_cos": float(cos.max()),
        "layer_of_max": stats.layer_names[int(np.argmax(cos))],
        "q95": float(q95[best]),
        "d": layers[best].dim,
        "significant_layers": int(significant.sum()),
        "n_layers": len(cos),
        "avg_cos_per_layer": [round(float(v), 5) for v in cos],
    }
