"""The one matplotlib helper of the report: a headless pyplot, and a figure as a base64 PNG."""

from __future__ import annotations

import base64
import io

__all__ = ["pyplot", "png"]


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig) -> str:
    """``fig`` as a base64-encoded PNG (90 dpi, tight bounding box), for a data URI."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")
