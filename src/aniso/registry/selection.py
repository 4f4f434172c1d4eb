"""Which claims a run measures: the one parser of setting ``claims``, whichever door it comes through (``aniso run
--claims``, ``pytest --aniso-claims``, ``ANISO_CLAIMS``, ``aniso.check(claims=...)``).

A filter is comma-separated claim ids (``G.token-nlp-anisotropic``) or prefixes: an item ending in ``.`` or ``*``
(``G.``, ``R.decoder*``) takes every catalogue id that starts with it. An empty filter (``""`` or None), or ``*``, takes every
claim. Each item must name something: an unknown id, a prefix that no id starts with (``Q.``), a filter of
commas only (``,``), or one of blanks only (``"  "``, as the command line refuses ``--claims '  '``) is refused with
one line that names it, rather than deselecting or selecting every claim; items joined by a semicolon, a bar or blanks
(``G.token-nlp-anisotropic;R.``) are refused with the comma-separated form.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .catalog import CLAIMS

__all__ = ["ClaimsFilter", "parse_claims", "FAMILIES"]

#: The claim families, by id prefix: G (Godey et al. 2024), R (Razzhigaev et al. 2024), M (Machina & Mercer 2024),
#: X (later work that explains G and R: massive activations, attention sinks, rogue dimensions), S (this suite).
FAMILIES: tuple[str, ...] = tuple(sorted({cid.split(".", 1)[0] + "." for cid in CLAIMS}))


@dataclass(frozen=True)
class ClaimsFilter:
    """A parsed setting ``claims``: exact ``ids`` and id ``prefixes`` (``G.``, ``R.decoder``); neither takes every
    claim. Each is a tuple (or list, kept as a tuple) of str. Raises TypeError naming ``ids`` or ``prefixes`` for a
    str (its characters would be read as the items, and ``in`` as a substring test) or any other value; a text of
    comma-separated ids is :func:`parse_claims`'s."""

    ids: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field in ("ids", "prefixes"):
            value = getattr(self, field)
            if not isinstance(value, (tuple, list)) or not all(isinstance(item, str) for item in value):
                raise TypeError(f"{field}: {value!r:.60} ({type(value).__name__}); give a tuple of claim "
                                f"{'ids' if field == 'ids' else 'id prefixes'}, e.g. "
                                f"{('G.token-nlp-anisotropic',) if field == 'ids' else ('G.',)!r}, or use "
                                "parse_claims for a comma-separated text")
            object.__setattr__(self, field, tuple(value))

    @property
    def everything(self) -> bool:
        """True when the filter names nothing, i.e. takes every claim."""
        return not self.ids and not self.prefixes

    def selects(self, claim_id: str) -> bool:
        """Whether the claim with id ``claim_id`` is measured under this filter."""
        return self.everything or claim_id in self.ids or claim_id.startswith(self.prefixes)

    def selected(self) -> list[str]:
        """The catalogue ids this filter takes, in catalogue order."""
        return [cid for cid in CLAIMS if self.selects(cid)]

    def __str__(self) -> str:
        """The filter as setting ``claims`` is written, which :func:`parse_claims` reads back to an equal filter: a
        prefix that does not end at a family's dot keeps its ``*`` (``G.token*``; ``G.token`` would be read as an
        id)."""
        return ",".join([*self.ids, *(p if p.endswith(".") else p + "*" for p in self.prefixes)])


#: What a filter's items are mistaken to be separated by (claim ids hold none of these): a semicolon, a bar, blanks.
_NOT_SEPARATORS = re.compile(r"[;|\s]+")


def _check_separators(item: str, text: str) -> None:
    """Raise ValueError (one line starting ``claims:``) when ``item`` (one comma-separated item of the filter
    ``text``) is several ids or prefixes joined by another separator than a comma (``G.token-nlp-anisotropic;R.``,
    ``G. R.``), naming it and giving the comma-separated form."""
    if any(cid == item.rstrip("*") or cid.startswith(item.rstrip("*")) for cid in CLAIMS):
        return
    parts = [p for p in _NOT_SEPARATORS.split(item) if p]
    if len(parts) < 2:
        return
    option = next((p for p in item.split() if p.startswith("-")), None)
    if option is not None:  # "$C --twin" quoted: an option inside the value, not a claim id
        raise ValueError(f"claims: {item!r} holds {option!r}, an option quoted into the value of the claims: give it "
                         "apart, outside the quotes")
    used = sorted({"a blank" if m.isspace() else repr(m.strip()[0]) for m in _NOT_SEPARATORS.findall(item)})
    fixed = ",".join(p for chunk in text.split(",") for p in _NOT_SEPARATORS.split(chunk.strip()) if p)
    verb = "do" if len(used) > 1 else "does"
    raise ValueError(f"claims: {item!r} is no claim id or prefix: {' and '.join(used)} {verb} not separate them, "
                     f"commas do; give {fixed!r}")


def parse_claims(text: str | None) -> ClaimsFilter:
    """Parse setting ``claims`` (see the module docstring).

    Raises TypeError with one line starting ``claims:`` when ``text`` is no str or None (a list's or bytes' text
    would be parsed as one item), and ValueError with one line starting ``claims:`` that names the item: an id that
    is not in the catalogue (with the closest id or family), a prefix that no claim id starts with (with the families), a filter that names
    nothing (``","``), a filter of blanks only (``"  "``: a slip, not the empty filter that takes every claim), items
    joined by another separator than a comma (:func:`_check_separators`).
    """
    if text is not None and not isinstance(text, str):
        raise TypeError(f"claims: {text!r:.60} ({type(text).__name__}); give claim ids or prefixes as one "
                        "comma-separated str, e.g. 'G.,R.decoder*' (a list of ids: ','.join(ids)), or None for every "
                        "claim")
    if text is None or str(text) == "":
        return ClaimsFilter()
    if not str(text).strip():
        raise ValueError(f"claims: {str(text)!r} is blank; give claim ids or prefixes (aniso list claims), or an empty "
                         "filter ('', or leave the setting out) to measure every claim")
    ids: list[str] = []
    prefixes: list[str] = []
    for raw in str(text).split(","):
        item = raw.strip()
        if not item:
            continue
        _check_separators(item, str(text))
        if "*" in item.rstrip("*"):  # a glob: only a trailing * (a prefix) is read
            import fnmatch

            matched = [cid for cid in CLAIMS if fnmatch.fnmatchcase(cid, item)]
            raise ValueError(f"claims: {item!r}: a * is read only at the end of a prefix (e.g. 'G.*', 'G.token*')"
                             + (f"; the ids it would match, with commas: {','.join(matched)!r}" if matched else
                                f"; the claim families are {', '.join(FAMILIES)}") + " (aniso list claims)")
        starred = item.endswith("*")
        item = item.rstrip("*")
        if starred and not item:  # '*' alone: the prefix every claim id starts with
            return ClaimsFilter()
        if starred or item.endswith("."):
            if not item or not any(cid.startswith(item) for cid in CLAIMS):
                raise ValueError(f"claims: no claim id starts with {raw.strip()!r}; the claim families are "
                                 f"{', '.join(FAMILIES)} (aniso list claims)")
            prefixes.append(item)
        elif item in CLAIMS:
            ids.append(item)
        else:
            family = item + "." if item + "." in FAMILIES else None
            close = [family] if family else difflib.get_close_matches(item, list(CLAIMS), n=1)
            raise ValueError(f"claims: {item!r} is no claim id" + (f"; did you mean {close[0]!r}?" if close else
                                                                    f"; the families are {', '.join(FAMILIES)}")
                             + " (aniso list claims)")
    if not ids and not prefixes:
        raise ValueError(f"claims: {str(text).strip()!r} names no claim id or prefix; leave the setting empty to "
                         "measure every claim")
    return ClaimsFilter(tuple(ids), tuple(prefixes))
