"""The one matplotlib helper of the report: a headless pyplot with legible type, and a figure as a base64 PNG that
knows the width at which its text reads at its nominal size.

Legibility on screen: a figure saved at ``DPI`` dots per inch and shown ``css_width`` CSS pixels wide (96 per inch)
shows its text at its point size; shown ``w`` pixels wide, at ``font_pt * w / css_width`` points. The report shows
every figure at ``css_width`` (or less where the window is narrower), no figure is wider than ``MAX_WIDTH_IN``, and no
text is smaller than ``MIN_FONT_PT``, so at 100% zoom on a 1,366-pixel screen every label reads at >= 9 pt.
"""

from __future__ import annotations

import base64
import io

__all__ = ["pyplot", "png", "Png", "label", "DPI", "MAX_WIDTH_IN", "MIN_FONT_PT"]

#: Dots per inch of the embedded PNGs (1.25x the 96 CSS pixels per inch: sharper on high-density screens, and a
#: full-size view larger than the page's, for about 1.5x the bytes of the former 90 dpi).
DPI = 120
#: The widest figure, in inches (1,190 CSS pixels: inside the page's 1,280-pixel column at 1,366 pixels).
MAX_WIDTH_IN = 12.4
#: The smallest type in any figure, in points.
MIN_FONT_PT = 9.0

_RC = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
       "legend.fontsize": 9, "legend.title_fontsize": 9, "figure.titlesize": 11}


class Png(str):
    """A base64-encoded PNG (usable as a ``str`` in a data URI) with ``css_width`` (CSS pixels at which its text
    shows at its point size), ``font_pt`` (its smallest text, in points) and ``pixel_width`` (its width in pixels)."""

    css_width: int
    font_pt: float
    pixel_width: int

    def __new__(cls, data: str, css_width: int, font_pt: float, pixel_width: int):
        obj = super().__new__(cls, data)
        obj.css_width, obj.font_pt, obj.pixel_width = css_width, font_pt, pixel_width
        return obj


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed), with the report's type sizes (>= 9 pt)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(_RC)
    return plt


def _smallest_text(fig) -> float:
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return float(min(sizes)) if sizes else MIN_FONT_PT


def png(fig) -> Png:
    """``fig`` as a base64-encoded :class:`Png` (``DPI`` dots per inch, tight bounding box). A figure whose tight
    box is wider than ``MAX_WIDTH_IN`` is narrowed (its axes, not its type) until it fits. Raises ValueError if any
    text in the figure is smaller than ``MIN_FONT_PT``."""
    small = _smallest_text(fig)
    if small < MIN_FONT_PT:
        raise ValueError(f"figure {fig.get_suptitle() or ''!r}: text of {small:g} pt, below {MIN_FONT_PT:g} pt")
    import matplotlib

    limit = MAX_WIDTH_IN - 2 * float(matplotlib.rcParams["savefig.pad_inches"])  # the saved box is padded
    for _ in range(4):
        box = fig.get_tightbbox(fig.canvas.get_renderer())
        if box.width <= limit:
            break
        w, h = fig.get_size_inches()
        fig.set_size_inches(max(w - (box.width - limit) - 0.05, 2.0), h)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    data = buf.getvalue()
    pixel_width = int.from_bytes(data[16:20], "big")  # the PNG header's IHDR width
    return Png(base64.b64encode(data).decode("ascii"), round(pixel_width * 96 / DPI), small, pixel_width)


def label(text: str, limit: int = 48) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis) for a tick label or legend entry; the report's tables
    carry the full name."""
    return text if len(text) <= limit else text[:limit - 1] + "…"
