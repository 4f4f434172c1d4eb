"""A registry record's numbers as data: each run compares them with what it measured, within a stated tolerance.

A record (``expected:`` in ``models.yaml``, :class:`aniso.registry.entries.ExpectedVerdict`) keeps the numbers its
verdict rests on in ``measured``, under the keys the claim reports. A run measuring the same model on the same
inputs at the profile the records were measured at (the registry's ``recorded_profile``) compares every recorded
number with its own: a number outside its tolerance makes the record *stale*, which fails the claim test (the record
must be re-measured, its reason re-rendered), and the report and ``aniso diff`` show it. The tolerances are
:data:`TOLERANCES`, chosen by the key's name:

* p-values (keys ``p``, ``p_value``, ``*_p``, ``*_p_value``): 0.002 absolute or 1% relative, whichever is larger; an
  exact permutation p-value moves in steps of 2/n! (0.0004 for 7 points) when two points swap ranks;
* any other real number: 1% relative, or 1e-4 absolute near zero;
* whole numbers, booleans and words: equal.

Lists and mappings are compared element by element with their key's tolerance. A recorded key that the run does not
report is stale too (the record names a number no run measures).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Tolerance", "TOLERANCES", "tolerance_of", "Drift", "stale_numbers"]


@dataclass(frozen=True)
class Tolerance:
    """``|measured - recorded| <= max(absolute, relative * |recorded|)``; ``name`` says which rule it is."""

    name: str
    relative: float
    absolute: float

    def admits(self, recorded: float, measured: float) -> bool:
        """Whether ``measured`` is within this tolerance of ``recorded`` (NaN equals NaN)."""
        if math.isnan(recorded) or math.isnan(measured):
            return math.isnan(recorded) and math.isnan(measured)
        return abs(measured - recorded) <= max(self.absolute, self.relative * abs(recorded))

    def __str__(self) -> str:
        return f"{self.name}: ±max({self.absolute:g}, {self.relative:.0%} relative)"


#: (key pattern, tolerance), first match wins; see the module docstring.
TOLERANCES: tuple[tuple[re.Pattern, Tolerance], ...] = (
    (re.compile(r"(^|_)p(_value)?$"), Tolerance("p-value", 0.01, 0.002)),
    (re.compile(r".*"), Tolerance("real number", 0.01, 1e-4)),
)


def tolerance_of(key: str) -> Tolerance:
    """The tolerance of a recorded number under ``key`` (the last part of its path, e.g. ``spearman_p``)."""
    return next(t for pattern, t in TOLERANCES if pattern.search(key))


@dataclass(frozen=True)
class Drift:
    """One recorded number that the run measured otherwise: its ``key`` (a path such as ``decoder_contrasts.gemma``),
    the ``recorded`` and ``measured`` values (None: not reported by the run) and the ``tolerance`` it was held to."""

    key: str
    recorded: Any
    measured: Any
    tolerance: str

    def __str__(self) -> str:
        got = "not reported by this run" if self.measured is None else _short(self.measured)
        return f"{self.key} recorded {_short(self.recorded)}, measured {got} ({self.tolerance})"


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_real(v: Any) -> bool:
    return isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool))


def stale_numbers(recorded: dict[str, Any] | None, measured: dict[str, Any]) -> list[Drift]:
    """The recorded numbers of a record that ``measured`` (a claim result's ``measured``) does not reproduce within
    their tolerance (:data:`TOLERANCES`), in the record's key order; empty when the record holds no numbers."""
    out: list[Drift] = []

    def walk(path: str, key: str, want: Any, got: Any) -> None:
        if got is None and want is not None:
            out.append(Drift(path, want, None, "not reported"))
        elif isinstance(want, dict):
            if not isinstance(got, dict):
                out.append(Drift(path, want, got, "a mapping"))
                return
            for k, v in want.items():
                walk(f"{path}.{k}", str(k), v, got.get(k))
        elif isinstance(want, (list, tuple)):
            if not isinstance(got, (list, tuple)) or len(got) != len(want):
                out.append(Drift(path, want, got, f"a list of {len(want)}"))
                return
            for i, (a, b) in enumerate(zip(want, got)):
                walk(f"{path}[{i}]", key, a, b)
        elif isinstance(want, bool) or isinstance(want, str) or want is None:
            if want != got:
                out.append(Drift(path, want, got, "equal"))
        elif isinstance(want, int) and isinstance(got, int) and not isinstance(got, bool):
            if want != got:
                out.append(Drift(path, want, got, "equal (a count)"))
        elif _is_real(want) and _is_real(got):
            tol = tolerance_of(key)
            if not tol.admits(float(want), float(got)):
                out.append(Drift(path, want, got, str(tol)))
        else:
            out.append(Drift(path, want, got, "the same kind of value"))

    for k, v in (recorded or {}).items():
        walk(str(k), str(k), v, measured.get(k))
    return out
