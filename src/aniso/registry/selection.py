"""Which claims a run measures: the one parser of setting ``claims``, whichever door it comes through (``aniso run
--claims``, ``pytest --aniso-claims``, ``ANISO_CLAIMS``, ``aniso.check(claims=...)``).

A filter is comma-separated claim ids (``G.token-nlp-anisotropic``) or prefixes: an item ending in ``.`` or ``*``
(``G.``, ``R.decoder*``) takes every catalogue id that starts with it. An empty filter (``""`` or None) takes every
claim. Each item must name something: an unknown id, a prefix that no id starts with (``Q.``), a filter of
commas only (``,``), or one of blanks only (``"  "``, as the command line refuses ``--claims '  '``) is refused with
one line that names it, rather than deselecting or selecting every claim.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .catalog import CLAIMS

__all__ = ["ClaimsFilter", "parse_claims", "FAMILIES"]

#: The claim families, by id prefix: G (Godey et al. 2024), R (Razzhigaev et al. 2024), M (Machina & Mercer 2024),
#: X (later work that explains G and R: massive activations, attention sinks, rogue dimensions), S (this suite).
FAMILIES: tuple[str, ...] = tuple(sorted({cid.split(".", 1)[0] + "." for cid in CLAIMS}))


@dataclass(frozen=True)
class ClaimsFilter:
    """A parsed setting ``claims``: exact ``ids`` and id ``prefixes`` (``G.``, ``R.decoder``); neither takes every
    claim."""

    ids: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()

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
        return ",".join([*self.ids, *self.prefixes])


def parse_claims(text: str | None) -> ClaimsFilter:
    """Parse setting ``claims`` (see the module docstring).

    Raises ValueError with one line starting ``claims:`` that names the item: an id that is not in the catalogue
    (with the closest id or family), a prefix that no claim id starts with (with the families), a filter that names
    nothing (``","``), a filter of blanks only (``"  "``: a slip, not the empty filter that takes every claim).
    """
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
        starred = item.endswith("*")
        item = item.rstrip("*")
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
