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


def test_a_zero_or_narrow_width_never_cuts_or_drops_an_id(monkeypatch):
    """COLUMNS 0 printed nothing, and a narrow one cut ids ("G.char-only-more-anisotropi") and dropped columns: the
    width is at least 80, and a table whose one-line columns do not fit is printed as tab-separated rows."""
    ids = ["G.char-only-more-anisotropic", "a-model-id-that-is-long-" + "x" * 70]
    for columns in ("0", "1", "20", "30"):
        monkeypatch.setenv("COLUMNS", columns)
        out = io.StringIO()
        print_table([[ids[0], "§3.1 Fig. 2", "statement " * 12], [ids[1], None, "short"]],
                    ["claim", "where", "statement"], title="2 claims", file=out, no_wrap=["claim"])
        text = out.getvalue()
        assert ids[0] in text.split() and ids[1] in text.split(), (columns, text)
        assert "where" in text and "statement" in text and "§3.1" in text  # no column dropped
        out = io.StringIO()
        print_table([[ids[0], "x"]], ["claim", "where"], file=out, no_wrap=["claim"])
        assert ids[0] in out.getvalue().split() and "where" in out.getvalue() and max(
            len(line) for line in out.getvalue().splitlines()) <= 80  # laid out as a table at 80 columns
