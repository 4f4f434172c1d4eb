"""Griffe extension of the API reference (``mkdocs.yml``: mkdocstrings' ``extensions``): the docstrings are written
in the NumPy layout with reStructuredText markup, as the project's house style (:mod:`aniso.metrics`) has it; this
turns them into what mkdocstrings renders, before they are parsed.

- Sphinx roles (``:func:`x```, ``:class:`~a.b.C```, ``:data:``, ``:meth:``, ``:mod:``, ``:attr:``, ``:exc:``) become
  cross-references: a link to the object where the site documents it, else the name as code. A relative name is
  resolved in the scope of the docstring's object, as Sphinx does; ``~`` shows the last part only.
- reST literals (double backticks) become Markdown code; a paragraph ending in ``::`` ends in ``:`` (the indented
  block after it is code in both).
- An entry ``name : what it is`` of a Parameters or Attributes section, whose text after the colon is prose rather
  than a type, is read as a description (the type then comes from the signature); a Returns, Yields or Raises
  section written as prose becomes an admonition ("Return value", "Errors"), so that no prose is set as code.

``tests/test_docs.py`` builds the site and fails on any role or double backtick left in its pages.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

#: A Sphinx role: ``:role:`target``` (with an optional ``~`` before the target).
ROLE = re.compile(r":(?:py:)?(?P<role>func|data|class|meth|mod|attr|exc|obj|const):`(?P<tilde>~?)(?P<target>[^`]+)`")
#: A reST literal: ``text`` (not touching a third backtick).
LITERAL = re.compile(r"(?<!`)``(?!`)(?P<text>[^`]+?)``(?!`)")
#: A NumPy section header (the title, then a line of dashes).
SECTIONS_NAMED = ("Parameters", "Other Parameters", "Attributes", "Receives")
#: A section written as prose → the title of the admonition it becomes (a NumPy title would be read as items).
SECTIONS_PROSE = {"Returns": "Return value", "Yields": "Yielded values", "Raises": "Errors", "Warns": "Warnings"}
#: What reads as a type after ``name :`` (a few words of names, brackets, ``|`` and commas: ``list[str] | None``,
#: ``int, optional``, ``np.ndarray of shape (n, d)`` is already prose).
TYPE_LIKE = re.compile(r"^[\w.\[\]|, ()*'\"-]+$")


def _type_like(text: str) -> bool:
    return bool(TYPE_LIKE.match(text)) and len(text.split()) <= 3 and not ROLE.search(text) and "``" not in text


def _resolve(obj: Object, target: str) -> str:
    """The full path of ``target`` seen from ``obj`` (itself where it cannot be resolved)."""
    if target.startswith("aniso.") or target == "aniso":
        return target
    head, _, rest = target.partition(".")
    scope = obj if obj.is_module or obj.is_class else obj.parent
    while scope is not None:
        try:
            found = scope.resolve(head)
        except Exception:  # griffe's NameResolutionError and alias errors alike: try the enclosing scope
            scope = scope.parent
            continue
        return f"{found}.{rest}" if rest else found
    return target


def _reference(obj: Object, match: re.Match) -> str:
    target = match["target"].strip().rstrip("()")
    shown = target.rsplit(".", 1)[-1] if match["tilde"] else target
    if match["role"] in ("func", "meth"):
        shown += "()" if not shown.endswith(")") else ""
    return f'<autoref identifier="{_resolve(obj, target)}" optional><code>{shown}</code></autoref>'


def _sections(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line of the body, end, title) of each NumPy section."""
    heads = [(i, lines[i].strip()) for i in range(len(lines) - 1)
             if lines[i].strip() and set(lines[i + 1].strip()) == {"-"} and not lines[i].startswith(" ")]
    return [(i + 2, heads[k + 1][0] if k + 1 < len(heads) else len(lines), title)
            for k, (i, title) in enumerate(heads)]


def _named_items(body: list[str]) -> list[str]:
    out = []
    for line in body:
        name, sep, rest = line.partition(" : ")
        if sep and not line.startswith(" ") and re.fullmatch(r"\*{0,2}\w+(, \*{0,2}\w+)*", name) \
                and not _type_like(rest.strip()):
            out += [name, "    " + rest.strip()]
        else:
            out.append(line)
    return out


def _prose_items(title: str, body: list[str]) -> list[str] | None:
    """The section as an admonition of its own title (see :data:`SECTIONS_PROSE`), or None when it is written as
    NumPy items (a type, then indented text)."""
    items = [line for line in body if line.strip() and not line.startswith(" ")]
    if items and all(_type_like(line.strip()) for line in items):
        return None
    text = [line.strip() for line in body]
    while text and not text[-1]:
        text.pop()
    title = SECTIONS_PROSE[title]
    return [title, "-" * len(title)] + text


def markdown_docstring(obj: Object, text: str) -> str:
    """The docstring ``text`` of ``obj`` in the Markdown that mkdocstrings renders (see the module's docstring)."""
    lines = text.splitlines()
    out: list[str] = []
    position = 0
    for start, end, title in _sections(lines):
        out += lines[position:start]
        body = lines[start:end]
        if title in SECTIONS_NAMED:
            out += _named_items(body)
        elif title in SECTIONS_PROSE and (prose := _prose_items(title, body)) is not None:
            out = out[:-2] + prose  # replaces the title and its dashes
        else:
            out += body
        position = end
    out += lines[position:]
    converted, code = [], False
    for k, line in enumerate(out):
        if code and line.strip() and not line.startswith("    "):
            code = False
        if not code:
            line = ROLE.sub(lambda m: _reference(obj, m), line)
            line = LITERAL.sub(lambda m: f"`{m['text']}`", line)
            if line.rstrip().endswith("::") and k + 1 < len(out) and not out[k + 1].strip():
                line, code = line.rstrip()[:-1], True
        converted.append(line)
    return "\n".join(converted)


def _walk(obj: Object, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member, seen)


class ReferenceDocstrings(Extension):
    """Rewrites every docstring of a loaded package (see the module's docstring)."""

    def on_package(self, *, pkg, **kwargs: Any) -> None:
        for obj in _walk(pkg, set()):
            if obj.docstring is not None:
                obj.docstring.value = markdown_docstring(obj, obj.docstring.value)
