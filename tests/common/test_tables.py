"""Terminal tables: they fit the width, wrap words whole, fold a word longer than its column, and print brackets as
they are (no markup)."""

from __future__ import annotations

import io

from aniso.common.tables import print_lines, print_table


def test_a_table_fits_the_width_and_wraps_whole_words():
    out = io.StringIO()
    reason = "missing: set ANISO_MODELS_DIR (--aniso-models-dir, e.g. ../shared/models): its model file is relative"
    print_table([["mobilenetv2-1.0-int8", "[vision] encoder", reason], ["m", None, "x" * 70]],
                ["model", "kind", "weights"], file=out, width=60, no_wrap=["model"])
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 60
    text = " ".join(" ".join(lines).split())
    assert "mobilenetv2-1.0-int8" in text and "[vision]" in text and " - " in text  # None shows as -
    words = {w for line in lines for w in line.split()}
    assert {"missing:", "ANISO_MODELS_DIR", "relative"} <= words  # no word cut at a line end
    assert out.getvalue().count("x") == 70  # a word longer than its column folds rather than being cut off


def test_notes_wrap_with_a_hanging_indent():
    out = io.StringIO()
    print_lines(["  ANISO_CORPUS: " + "word " * 30], file=out, width=40)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 40 and lines[0].startswith("  ANISO_CORPUS:")
    assert all(line.startswith("    ") for line in lines[1:])
