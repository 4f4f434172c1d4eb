"""The one matplotlib helper of the report: a headless pyplot with legible type, and a figure as a base64 PNG that
knows the width at which its text reads at its nominal size.

Legibility on screen: a figure saved at ``DPI`` dots per inch and shown ``css_width`` CSS pixels wide (96 per inch)
shows its text at its point size; shown ``w`` pixels wide, at ``font_pt * w / css_width`` points. The report shows
every figure at ``css_width`` (or less where the window is narrower), no figure is wider than ``MAX_WIDTH_IN``, and no
text is smaller than ``MIN_FONT_PT``, so at 100% zoom on a 1,366-pixel screen every label reads at >= 9 pt.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import io

__all__ = ["pyplot", "png", "Png", "label", "symlog", "text_overlaps", "checked", "DPI", "MAX_WIDTH_IN",
           "MIN_FONT_PT"]

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
    shows at its point size), ``font_pt`` (its smallest text, in points), ``pixel_width`` (its width in pixels),
    ``overlaps`` (pairs of texts drawn over each other, see :func:`text_overlaps`; empty in a legible figure; None
    where not checked, see :func:`checked`) and
    ``model_colours`` (model id -> the colours its curves were drawn in, from the artists whose ``gid`` is a model
    id: one colour per model across the report, see :func:`aniso.report.modalities.model_styles`)."""

    css_width: int
    font_pt: float
    pixel_width: int
    overlaps: tuple[tuple[str, str], ...] | None
    model_colours: dict[str, tuple[str, ...]]

    def __new__(cls, data: str, css_width: int, font_pt: float, pixel_width: int,
                overlaps: tuple[tuple[str, str], ...] | None = None,
                model_colours: dict[str, tuple[str, ...]] | None = None):
        obj = super().__new__(cls, data)
        obj.css_width, obj.font_pt, obj.pixel_width = css_width, font_pt, pixel_width
        obj.overlaps, obj.model_colours = overlaps, dict(model_colours or {})
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


def _tick_labels(axis) -> list:
    """The tick labels ``axis`` draws: those of its ticks inside the view (a locator also places ticks beyond it)."""
    axis.get_ticklabels(which="both")  # places the ticks and sets their labels
    lo, hi = sorted(axis.get_view_interval())
    eps = (hi - lo) * 1e-9
    return [t for tick in axis.get_major_ticks() + axis.get_minor_ticks() if lo - eps <= tick.get_loc() <= hi + eps
            for t in (tick.label1, tick.label2)]


def _texts(fig) -> list[tuple[str, object]]:
    """(label, artist) of every piece of text the figure draws: titles, axis labels, the tick labels in view, free
    text, and each legend as one box."""
    items = [(t.get_text(), t) for t in dict.fromkeys([getattr(fig, "_suptitle", None), *fig.texts]) if t is not None]
    items += [("legend", leg) for leg in fig.legends]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        items += [(t.get_text(), t) for t in (ax.title, *ax.texts)]
        if ax.axison:
            items += [(t.get_text(), t) for t in (ax.xaxis.label, ax.yaxis.label)]
            items += [(t.get_text(), t) for t in _tick_labels(ax.xaxis) + _tick_labels(ax.yaxis)]
        if ax.get_legend() is not None:
            items.append(("legend", ax.get_legend()))
    return [(text, a) for text, a in items if a.get_visible() and str(text).strip()]


def text_overlaps(fig, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts of ``fig`` drawn over each other (by more than ``tolerance`` pixels both ways at the figure's
    dpi): a title over the tick labels of the axes above, "0" over "10⁻¹" on a symlog axis, a legend over a label.
    Text is read as in :func:`_texts`; the figure is drawn first (a third more time for :func:`png`, which
    therefore checks only inside :func:`checked`)."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    boxes = [(text, a.get_window_extent(renderer)) for text, a in _texts(fig)]
    out = []
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            if (a.x0 < b.x1 - tolerance and b.x0 < a.x1 - tolerance and a.y0 < b.y1 - tolerance
                    and b.y0 < a.y1 - tolerance):
                out.append((ta, tb))
    return out


def _model_colours(fig) -> dict[str, tuple[str, ...]]:
    from matplotlib.colors import to_hex

    found: dict[str, set[str]] = {}
    for a in fig.findobj(lambda a: a.get_gid() is not None):
        if hasattr(a, "get_color") and not hasattr(a, "get_facecolors"):  # a line
            colours = [a.get_color()]
        elif hasattr(a, "get_facecolors"):  # a scatter or a bar collection
            colours = [c for c in (*a.get_facecolors(), *a.get_edgecolors()) if len(c) and c[3] > 0][:1]
        else:
            colours = [a.get_facecolor()] if hasattr(a, "get_facecolor") else []
        found.setdefault(a.get_gid(), set()).update(to_hex(c) for c in colours)
    return {gid: tuple(sorted(c)) for gid, c in found.items()}


def symlog(ax, linthresh: float, top: float | None = None, axis: str = "x") -> None:
    """A symmetric-log ``axis`` from 0 (linear below ``linthresh``, logarithmic above), ticked at 0 and at the
    powers of ten from ``linthresh`` up to ``top`` (default: the axis' upper limit), so that no tick label sits
    on another (matplotlib's own ticks put "0" on "10⁻¹" for a threshold of 0.5). Raises ValueError for a
    threshold that is not positive."""
    import math

    from matplotlib.ticker import FixedLocator, NullLocator

    if not linthresh > 0:
        raise ValueError(f"symlog threshold {linthresh!r}: must be positive")
    if axis == "x":
        ax.set_xscale("symlog", linthresh=linthresh)
        ax.set_xlim(left=0)
        target, hi = ax.xaxis, ax.get_xlim()[1]
    else:
        ax.set_yscale("symlog", linthresh=linthresh)
        ax.set_ylim(bottom=0)
        target, hi = ax.yaxis, ax.get_ylim()[1]
    hi = max(top if top is not None else hi, linthresh)
    decades = range(math.ceil(math.log10(linthresh) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)
    target.set_major_locator(FixedLocator([0.0] + [10.0 ** k for k in decades]))
    target.set_minor_locator(NullLocator())


_CHECK: contextvars.ContextVar[bool] = contextvars.ContextVar("aniso_report_check_text", default=False)


@contextlib.contextmanager
def checked():
    """Within this context, :func:`png` also records the texts of each figure drawn over each other
    (:attr:`Png.overlaps`, from :func:`text_overlaps`); outside it, ``overlaps`` is None (not checked)."""
    token = _CHECK.set(True)
    try:
        yield
    finally:
        _CHECK.reset(token)


def png(fig) -> Png:
    """``fig`` as a base64-encoded :class:`Png` (``DPI`` dots per inch, tight bounding box). A figure whose tight
    box is wider than ``MAX_WIDTH_IN`` is narrowed (its axes, not its type) until it fits. Raises ValueError if any
    text in the figure is smaller than ``MIN_FONT_PT``. The colour of each model (artists with a model id as
    ``gid``) and, inside :func:`checked`, the texts drawn over each other (:func:`text_overlaps`) are recorded on
    the result."""
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
    return Png(base64.b64encode(data).decode("ascii"), round(pixel_width * 96 / DPI), small, pixel_width,
               tuple(text_overlaps(fig)) if _CHECK.get() else None, _model_colours(fig))


def label(text: str, limit: int = 48) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis) for a tick label or legend entry; the report's tables
    carry the full name."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


#: The most entries a legend of models lists (:func:`bounded_legend`): a run of a few hundred models would otherwise
#: spend minutes laying out its legends, and a legend of hundreds of entries is read by no one; the report's tables
#: and verdict matrix name every model.
MAX_LEGEND = 40


def bounded_legend(target, handles=None, labels=None, limit: int = MAX_LEGEND, **kwargs):
    """``target.legend(handles, labels, **kwargs)`` (an Axes or a Figure; by default the handles and labels of
    ``target``) with at most ``limit`` entries: beyond that, the first ``limit - 1`` and one entry saying how many
    more there are, which the report's tables name. Returns the legend."""
    if handles is None:
        handles, labels = target.get_legend_handles_labels()
    handles, labels = list(handles), list(labels)
    if len(handles) > limit:
        from matplotlib.lines import Line2D

        more = len(handles) - (limit - 1)
        handles = handles[:limit - 1] + [Line2D([], [], ls="none")]
        labels = labels[:limit - 1] + [f"… and {more} more (named in the tables)"]
    return target.legend(handles, labels, **kwargs)
