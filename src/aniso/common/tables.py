"""Tables for the terminal: columns that wrap at word boundaries to fit its width (rich), for the command line's
listings.

The width is the terminal's (or ``COLUMNS``; 80 where the output is no terminal and ``COLUMNS`` is unset), and at
least :data:`MIN_WIDTH`. Long words (ids, paths) wrap inside their cell rather than being cut, and a table whose
one-line columns (ids) do not fit the width is printed as plain tab-separated rows: no cell is ever cut or dropped.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Sequence, TextIO

__all__ = ["print_table", "print_lines", "printable", "MIN_WIDTH"]

#: The narrowest width a listing is laid out for (columns): a ``COLUMNS`` of 0 or below this counts as this.
MIN_WIDTH = 80

#: The narrowest a wrapping column may get before a table is printed as tab-separated rows instead.
_MIN_WRAPPED = 8


#: Unicode categories shown escaped by :func:`printable`: control (Cc: ESC, BEL, newline...), format (Cf: the
#: bidirectional overrides such as U+202E, zero-width characters), line and paragraph separators, surrogates, private
#: use and unassigned code points.
_UNPRINTABLE = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def printable(text: object) -> str:
    """``text`` (made a str) with every control, format and other unprintable character (:data:`_UNPRINTABLE`)
    written as its Python escape (``\\x1b``, ``\\u202e``), so that text read from a file (a results file from
    another machine) can neither send the terminal escape sequences, nor reverse a line, nor start a new one."""
    import unicodedata

    text = str(text)
    if text.isprintable():  # (the common case: nothing to escape)
        return text
    return "".join(repr(c)[1:-1] if c != " " and unicodedata.category(c) in _UNPRINTABLE else c for c in text)


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str], *, title: str | None = None,
                file: TextIO | None = None, width: int | None = None, no_wrap: Sequence[str] = (),
                max_width: dict[str, int] | None = None) -> None:
    """Print ``rows`` (one sequence of cells each; None shows as ``-``) under ``headers`` to ``file`` (default:
    standard output), fitting ``width`` columns (default: the terminal's). Columns named in ``no_wrap`` keep each
    cell on one line (short values, ids), the others wrap at spaces, and a word longer than its column folds;
    ``max_width`` caps some columns' widths (their cells wrap), leaving the rest to the others. Where the one-line
    columns' longest cells and the others' narrowest do not fit the width, the title, headers and rows are printed
    as tab-separated lines (a cell's line breaks made spaces), so that no cell is cut and no column dropped."""
    from rich import box
    from rich.table import Table

    rows = [["-" if cell is None else str(cell) for cell in row] for row in rows]
    console = _console(file, width)
    need = 3 * (len(headers) - 1)
    for i, name in enumerate(headers):
        cells = [name, *(row[i] for row in rows if i < len(row))]
        longest = max(len(line) for cell in cells for line in cell.split("\n"))
        need += longest if name in no_wrap else min(longest, _MIN_WRAPPED)
    if need > console.width:
        out = file or sys.stdout
        if title:
            print(title, file=out)
        for line in [list(headers), *rows]:
            print("\t".join(" ".join(cell.split("\n")) for cell in line), file=out)
        return
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title_justify="left",
                  header_style="bold")
    for name in headers:
        table.add_column(name, no_wrap=name in no_wrap, overflow="fold", max_width=(max_width or {}).get(name))
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_lines(lines: Iterable[str], *, hang: int = 2, file: TextIO | None = None, width: int | None = None) -> None:
    """Print each line wrapped at word boundaries to the terminal's width (or ``width``), its continuation lines
    indented ``hang`` spaces more than the line itself."""
    import textwrap

    columns = _console(file, width).width
    for line in lines:
        lead = " " * (len(line) - len(line.lstrip(" ")))
        print(textwrap.fill(line.strip(), columns, initial_indent=lead, subsequent_indent=lead + " " * hang,
                            break_on_hyphens=False, break_long_words=True), file=file or sys.stdout)


def _console(file: TextIO | None, width: int | None):
    """A rich console writing to ``file``, ``width`` columns wide (default: the terminal's or ``COLUMNS``, at least
    :data:`MIN_WIDTH`: a ``COLUMNS`` of 0 would otherwise print nothing, and a narrow one drop columns)."""
    from rich.console import Console

    console = Console(file=file or sys.stdout, width=width, highlight=False, soft_wrap=False, markup=False)
    if width is None and console.width < MIN_WIDTH:
        console = Console(file=file or sys.stdout, width=MIN_WIDTH, highlight=False, soft_wrap=False, markup=False)
    return console
