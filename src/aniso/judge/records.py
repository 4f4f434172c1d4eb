"""A registry record's numbers as data: each run compares them with what it measured, within a stated tolerance.

A record (``expected:`` in ``models.yaml``, :class:`aniso.registry.entries.ExpectedVerdict`) keeps the numbers its
verdict rests on in ``measured``, under the keys the claim reports. A run measuring the same model on the same
inputs at the profile the records were measured at (the registry's ``recorded_profile``) compares every recorded
number with its own: a number outside its tolerance makes the record *stale*, which fails the claim test (the record
must be re-measured, its reason re-rendered), and the report and ``aniso diff`` show it. The tolerances are
:data:`TOLERANCES`, chosen by the key's name:

* p-values (keys ``p``, ``p_value``, ``*_p``, ``*_p_value``): 0.002 absolute or 1% relative, whichever is larger; an
  exact permutation p-value moves in steps of 2/n! (0.0004 for 7 points) when two points swap ranks. Where the test
  says its p-values are Monte Carlo (a ``p_method`` or ``*_p_method`` of the same numbers starting "Monte Carlo"),
  0.002 absolute or :data:`aniso.metrics.MC_RELATIVE_ERROR` (10%) relative: the precision its orderings are sized
  for, so that another null sample of the same size is not a stale record;
* any other real number: 1% relative, or 1e-4 absolute near zero;
* whole numbers, booleans and words: equal.

Lists and mappings are compared element by element with their key's tolerance. A recorded key that the test does not
report is stale too (the record names a number no run measures), unless the test reports none of the record's keys:
a claim measured by two tests keeps one record, compared with the test whose numbers it names (:func:`names_any`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..metrics import MC_RELATIVE_ERROR

__all__ = ["Tolerance", "TOLERANCES", "tolerance_of", "Drift", "stale_numbers", "names_any", "refresh_records",
           "record_new_findings", "contradicts_record", "contradicted_records"]


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
P_VALUE_KEY = re.compile(r"(^|_)p(_value)?$")
TOLERANCES: tuple[tuple[re.Pattern, Tolerance], ...] = (
    (P_VALUE_KEY, Tolerance("p-value", 0.01, 0.002)),
    (re.compile(r".*"), Tolerance("real number", 0.01, 1e-4)),
)
#: A Monte Carlo p-value's tolerance: the relative precision its orderings are sized for.
MONTE_CARLO_P = Tolerance("Monte Carlo p-value", MC_RELATIVE_ERROR, 0.002)


def tolerance_of(key: str, monte_carlo: bool = False) -> Tolerance:
    """The tolerance of a recorded number under ``key`` (the last part of its path, e.g. ``spearman_p``);
    ``monte_carlo``: the test's p-values are Monte Carlo ones (:data:`MONTE_CARLO_P` for a p-value key)."""
    if monte_carlo and P_VALUE_KEY.search(key):
        return MONTE_CARLO_P
    return next(t for pattern, t in TOLERANCES if pattern.search(key))


def _monte_carlo(measured: dict[str, Any]) -> bool:
    """Whether a claim result's ``measured`` numbers say their p-values are Monte Carlo ones."""
    return any(str(k).endswith("p_method") and str(v).startswith("Monte Carlo") for k, v in measured.items())


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
    monte_carlo = _monte_carlo(measured)

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
        elif isinstance(want, str) or isinstance(got, str):  # a name (a layer "3" may be read back as 3)
            if str(want) != str(got):
                out.append(Drift(path, want, got, "equal"))
        elif isinstance(want, bool) or want is None:
            if want != got:
                out.append(Drift(path, want, got, "equal"))
        elif isinstance(want, int) and isinstance(got, int) and not isinstance(got, bool):
            if want != got:
                out.append(Drift(path, want, got, "equal (a count)"))
        elif _is_real(want) and _is_real(got):
            tol = tolerance_of(key, monte_carlo)
            if not tol.admits(float(want), float(got)):
                out.append(Drift(path, want, got, str(tol)))
        else:
            out.append(Drift(path, want, got, "the same kind of value"))

    for k, v in (recorded or {}).items():
        walk(str(k), str(k), v, measured.get(k))
    return out


def names_any(recorded: dict[str, Any] | None, measured: dict[str, Any]) -> bool:
    """Whether ``measured`` reports any of the record's keys: a claim measured by two tests (e.g. the attention sink
    at the last checkpoint and along training) keeps one record, compared with the test whose numbers it names."""
    return any(k in measured for k in (recorded or {}))


def _rounded(v: Any) -> Any:
    """A measured value as a record keeps it: floats to 4 significant digits, recursively."""
    if isinstance(v, float):
        return float(f"{v:.4g}") if math.isfinite(v) else v
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_rounded(x) for x in v]
    return v


def row_digests(text: str) -> dict[str, str]:
    """SHA-256 (hex) of each row of a registry file's text, by id, and under ``""`` of its fields outside the rows:
    the canonical JSON of the YAML values (comments and layout are no part of them). Raises ValueError for text
    that is no registry (no mapping, or ``models`` no list)."""
    import hashlib
    import json

    import yaml

    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), list):
        raise ValueError("not a registry: no list of models")

    def digest(value: Any) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str,
                                         ensure_ascii=False).encode()).hexdigest()

    rows = {str(r["id"]): digest(r) for r in doc["models"] if isinstance(r, dict) and "id" in r}
    return rows | {"": digest({k: v for k, v in doc.items() if k != "models"})}


def run_row_digests(text: str, results, ids) -> dict[str, list[str]]:
    """For the rows ``ids`` a run took from the registry ``text`` (and ``""``, the fields outside the rows): the
    digest of each as read (:func:`row_digests`) and as ``aniso record`` of ``results`` would leave it
    (:func:`refresh_records`, then :func:`record_new_findings`)."""
    recorded, _ = refresh_records(text, results)
    recorded, _ = record_new_findings(recorded, results)
    before, after = row_digests(text), row_digests(recorded)
    return {i: [before[i], after.get(i, before[i])] for i in ["", *ids] if i in before}


def _flow(mapping: dict) -> str:
    """``mapping`` as a one-line YAML flow mapping, keys in their order."""
    import yaml

    return yaml.safe_dump(mapping, default_flow_style=True, width=10**9, sort_keys=False, allow_unicode=True).strip()


def refresh_records(text: str, results) -> tuple[str, list[str]]:
    """A registry file's text with the recorded numbers of every record that ``results`` found stale replaced by the
    numbers the run measured (4 significant digits, the record's own keys and order), and one line per change.

    ``results``: :class:`~aniso.judge.results.ClaimResult` objects (a run's ``results.json``). A record is rewritten
    only where its result compared the numbers (``record_drift`` non-empty: same inputs, the recorded profile's
    sizes). A recorded key the run did not report is left as it was and named (the record needs editing by hand). The
    reason, whose numbers are placeholders into ``measured``, renders the new numbers. Only the record's
    ``measured`` value is rewritten, found through the YAML's own positions (any key order, quoting or comment, a
    block or flow mapping over one line or several, a record written as one flow mapping): it becomes a one-line
    flow mapping after ``measured:``; what followed it on its last line (a comment), the comments inside it (after
    the new mapping), its anchor and the rest of the file are kept byte for byte. A record whose verdict the run
    contradicts (:func:`contradicts_record`) is left as it is, numbers too. Raises ValueError naming the model and
    claim when a record cannot be found in ``text`` or rewritten in place (its ``measured`` an alias), and
    ``yaml.YAMLError`` for text that is not YAML.
    """
    notes: list[str] = []
    edits: dict[tuple[int, int], str] = {}
    for r in results:
        if not r.record_drift or not r.expected or not r.expected.get("measured") or contradicts_record(r):
            continue  # a contradicted record's numbers stay with its verdict: both are edited by hand
        where = f"{r.model_id} {r.claim_id}"
        start, end, old, keep, comments = _measured_span(text, r.model_id, r.claim_id)
        new, missing = {}, []
        for k, v in old.items():
            if r.measured.get(k) is None:
                new[k] = v
                missing.append(k)
            else:  # a value the run reports as text (a layer's label, '5') that the record writes as a number
                new[k] = v if str(v) == str(r.measured[k]) else _rounded(r.measured[k])
        edits[(start, end)] = f" {keep}{_flow(new)}{comments}"
        changed = [f"{k} {old[k]} -> {new[k]}" for k in old if new[k] != old[k]]
        notes.append(f"{where}: " + ("; ".join(changed) or "no number changed")
                     + (f"; not reported by the run, left as recorded: {', '.join(missing)}" if missing else ""))
    for (start, end), value in sorted(edits.items(), reverse=True):  # from the end: earlier spans keep their places
        text = text[:start] + value + text[end:]
    return text, notes


def record_new_findings(text: str, results, detected: list[dict] | None = None) -> tuple[str, list[str]]:
    """A registry file's text with a record added for every new finding among ``results``: a claim that does not
    hold on a model for which the registry records nothing about that claim (``expected`` None), neither fragile
    nor measured on a twin; and one line per record added.

    Each record is ``verdict: does-not-hold, source: measured``, the result's numbers (scalars, 4 significant
    digits) under ``measured``, the ``inputs`` it was measured on, and a reason to be rewritten by hand once the
    finding is understood. A model that has no row in ``text`` gets its row from ``detected`` (the rows
    ``aniso run`` detected for files, folders or hub ids the registry lacked) with its records; one that is in
    neither is named in a line and left out. Comments and the rest of the file are kept. Raises ValueError naming
    the model where a record added to its row would reach another row too (:func:`_new_record_problem`: a shared
    ``expected``, or a row that merges this one with ``<<: *name``).
    """
    new: dict[str, list] = {}
    for r in results:
        fragile = r.uncertainty is not None and r.uncertainty.fragile
        if r.verdict == "does not hold" and r.expected is None and r.model_id and not r.twin and not fragile \
                and all(o.claim_id != r.claim_id for o in new.get(r.model_id, [])):  # one record a claim: a claim
            new.setdefault(r.model_id, []).append(r)  # tested twice (a sink, and its emergence) keeps its first
    rows = {row["id"]: row for row in detected or []}
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    notes: list[str] = []
    for model_id, found in new.items():
        start, row_end = _row_lines("".join(lines), model_id) or (None, None)
        shared = _new_record_problem("".join(lines), model_id) if start is not None else None
        if shared is not None:  # written, it would give another row a record no run of it measured
            raise ValueError(shared)
        if start is None and model_id not in rows:
            notes.append(f"{model_id}: no row in the registry and no detected row beside the results: add its row "
                         "by hand, then run aniso record again")
            continue
        if start == -1:
            notes.append(f"{model_id}: its row is written as one flow mapping ({{id: …}}): write it as a block "
                         "mapping (one field a line), then run aniso record again")
            continue
        rows_at = next((len(line) - len(line.lstrip()) for line in lines if line.lstrip().startswith("- id:")), 0)
        pad = " " * (2 + (len(lines[start]) - len(lines[start].lstrip()) if start is not None else rows_at))
        if start is not None:  # a claim recorded already (an earlier aniso record of the same run) stays as it is
            found = [r for r in found if f"{pad}  {r.claim_id}:\n" not in lines[start:row_end]]
        records = []
        for r in found:
            measured = {k: _rounded(v) for k, v in r.measured.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)}
            records += [f"{pad}  {r.claim_id}:\n", f"{pad}    verdict: does-not-hold\n", f"{pad}    source: measured\n",
                        *([f"{pad}    inputs: '{r.inputs}'\n"] if r.inputs else []),
                        *([f"{pad}    seeds: [{', '.join(r.seeds)}]\n"] if getattr(r, "seeds", None) else []),
                        *([f"{pad}    measured: {_flow(measured)}\n"] if measured else []),
                        f"{pad}    reason: >-\n", f"{pad}      a new finding of the model's first run, recorded by "
                        "aniso record as measured; say here why it does not hold\n"]
            notes.append(f"{model_id} {r.claim_id}: recorded as does-not-hold (a new finding)")
        if not records:
            continue
        if start is None:
            import yaml

            row = {k: v for k, v in rows[model_id].items() if k != "expected"}
            block = yaml.safe_dump([row], sort_keys=False, allow_unicode=True, width=10**9)
            indent = " " * rows_at  # as deep as the registry's other rows
            lines += ["\n", *(indent + line for line in block.splitlines(keepends=True)), f"{pad}expected:\n",
                      *records]
            continue
        end = row_end
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        at = next((i for i in range(start + 1, end) if lines[i].rstrip() == f"{pad}expected:"), None)
        if at is not None:  # after the records already there
            end = next((i for i in range(at + 1, end)
                        if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= len(pad)), end)
        lines[end:end] = records if at is not None else [f"{pad}expected:\n", *records]
    return "".join(lines), notes


def contradicts_record(r) -> bool:
    """Whether the verdict of ``r`` (a :class:`~aniso.judge.results.ClaimResult`) contradicts the registry's record
    that binds it (same inputs and sizes; :func:`aniso.judge.verdicts.decide`): it holds against a record of
    does-not-hold or underpowered, or does not hold against a record of holds. Such a record is never rewritten by
    ``aniso record`` (its verdict and reason are the registry keeper's to change); twin and fragile verdicts, and
    verdicts that differ from a record made on other inputs, contradict nothing."""
    from .verdicts import DOES_NOT_HOLD, UNEXPECTEDLY_HOLDS

    fragile = r.uncertainty is not None and r.uncertainty.fragile
    return (r.expected is not None and not r.twin and not fragile and r.differs_from_record is None
            and r.verdict in (UNEXPECTEDLY_HOLDS, DOES_NOT_HOLD))


def contradicted_records(results) -> list[str]:
    """One line per result among ``results`` whose verdict contradicts its record (:func:`contradicts_record`),
    naming the model, the claim, the recorded verdict and numbers, and the verdict and numbers the run measured
    (the record's keys; the run's own numbers where the record keeps none), in the results' order."""
    out = []
    for r in results:
        if not contradicts_record(r):
            continue
        recorded = r.expected.get("measured") or {}
        keys = list(recorded) or [k for k, v in r.measured.items() if _is_real(v)][:3]
        was = ", ".join(f"{k}={_short(recorded[k])}" for k in recorded)
        now = ", ".join(f"{k}={_short(r.measured[k]) if r.measured.get(k) is not None else 'not reported'}"
                        for k in keys)
        out.append(f"{r.model_id} {r.claim_id}: recorded {r.expected.get('verdict') or 'holds'}"
                   + (f" ({was})" if was else "") + f", measured {r.verdict}" + (f" ({now})" if now else ""))
    return out


def _new_record_problem(text: str, model_id: str) -> str | None:
    """Why a record added to registry row ``model_id`` would reach another row too, or None: its ``expected`` is
    shared (:func:`_shared_problem`), or, where it has none, another row merges this one (``<<: *name``) without an
    ``expected`` of its own and would take the new one."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    row = _row_node(root, model_id)
    if row is None:
        return None
    expected = _value_of(row, "expected")
    if expected is not None:
        return _shared_problem(root, row, [expected[1]], model_id)
    for other in _row_nodes(root):
        merge = _value_of(other, "<<")
        merged = [] if merge is None else merge[1].value if isinstance(merge[1], yaml.SequenceNode) else [merge[1]]
        if other is not row and any(m is row for m in merged) and _value_of(other, "expected") is None:
            i = _value_of(other, "id")
            return (f"{model_id}: the row {i[1].value if i else 'another row'!r} merges this row (<<: *name) and would "
                    "take a record added here, which no run of it measured: give that row its own expected: (or "
                    "write this row's record by hand) and record again")
    return None


def _row_lines(text: str, model_id: str) -> tuple[int, int] | None:
    """The first line of registry row ``model_id`` in ``text`` and the line after its last character (0-based),
    found through the YAML's own positions (any key order, quoting or comment); None where it has no such row,
    (-1, -1) where the row is one flow mapping (``- {id: …}``), to which no record is added line by line."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        row = _row_node(loader.get_single_node(), model_id)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    if row is None:
        return None
    if row.flow_style:
        return -1, -1
    end = _content_end(row)
    return row.start_mark.line, text.count("\n", 0, end) + 1


def _content_end(node) -> int:
    """The index just past the last character of ``node``'s own text: a block mapping or sequence ends where the
    next token begins (after its newline, blank lines and comments), so its end is that of its last value."""
    import yaml

    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1])
    return node.end_mark.index


def _value_of(node, key: str):
    """The (key node, value node) of the first scalar key ``key`` of mapping ``node``, or None."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    return next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _row_node(root, model_id: str):
    """The node of registry row ``model_id`` (the first item of the root's ``models`` list whose ``id`` is that
    scalar, in any key order or quoting), or None."""
    import yaml

    return next((n for n in _row_nodes(root)
                 if (i := _value_of(n, "id")) and isinstance(i[1], yaml.ScalarNode) and i[1].value == model_id), None)


def _row_nodes(root) -> list:
    """The nodes of the root's ``models`` list (the registry's rows), or [] where it has none."""
    import yaml

    rows = _value_of(root, "models")
    return rows[1].value if rows and isinstance(rows[1], yaml.SequenceNode) else []


def _reached(node, seen: set[int] | None = None) -> set[int]:
    """The ids of every node under ``node`` (itself included) that its value holds, through anchors and aliases (an
    alias is the anchored node itself in a composed document) and merge keys (of a mapping merged with ``<<``, the
    values of the keys the mapping does not set itself)."""
    import yaml

    seen = set() if seen is None else seen
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            own = {k.value for k, _ in n.value if isinstance(k, yaml.ScalarNode) and k.value != "<<"}
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode) and k.value == "<<":  # merged: only the keys it does not set itself
                    for merged in (v.value if isinstance(v, yaml.SequenceNode) else [v]):
                        stack += [mv for mk, mv in (merged.value if isinstance(merged, yaml.MappingNode) else [])
                                  if not (isinstance(mk, yaml.ScalarNode) and mk.value in own)]
                else:
                    stack += [k, v]
        elif isinstance(n, yaml.SequenceNode):
            stack += n.value
    return seen


def _shared_problem(root, row, nodes, where: str) -> str | None:
    """Why a rewrite of registry ``row``'s record (its ``nodes`` on the way: its ``expected``, the record, its
    ``measured``) would change another row too, or None: one of them is reached from another row of the
    registry (``<<: *name`` merging this row into another, ``expected: *name``, an anchored record aliased
    elsewhere), so written in place it would give that row numbers no run of it measured."""
    import yaml

    others = [n for n in _row_nodes(root) if n is not row]
    mine = {id(n) for n in nodes if n is not None}
    sharing = []
    for other in others:
        if mine & _reached(other):
            i = _value_of(other, "id")
            sharing.append(repr(i[1].value) if i and isinstance(i[1], yaml.ScalarNode) else "another row")
    if not sharing:
        return None
    return (f"{where}: this record is shared with the row(s) {', '.join(sharing)} through a YAML anchor or merge key "
            "(<<: *name, *name): one YAML node holds the record of them all, so it cannot be written for "
            "this row alone; write the record out on each row (no anchor or merge key for expected) and record again")


_COMMENT = re.compile(r"(?:^|[ \t])(#.*)$")


def _measured_span(text: str, model_id: str, claim_id: str) -> tuple[int, int, dict, str, str]:
    """Where the ``measured`` value of record ``claim_id`` under registry row ``model_id`` is in ``text``, found
    through the YAML's own positions (``yaml.compose``), so any key order, quoting, comment, block or flow layout,
    on one line or several, is found: ``(start, end, value, keep, comments)``, the character span from just after
    ``measured:`` to the value's last character, the value, what of that span a rewrite keeps in front of the new
    mapping (an anchor ``&name``) and the comments inside the span, which a rewrite keeps after it.
    Raises ValueError naming the model and claim when the record is not in ``text`` or cannot be rewritten in place
    (its value an alias of another record's, or not a mapping)."""
    import yaml

    where = f"{model_id} {claim_id}"
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        row = _row_node(root, model_id)
        if row is None:
            raise ValueError(f"{where}: no row with id {model_id!r} in the registry")
        expected = _value_of(row, "expected")
        record = _value_of(expected[1], claim_id) if expected else None
        found = _value_of(record[1], "measured") if record else None
        if found is None:
            if _value_of(row, "<<") is not None:
                raise ValueError(f"{where}: the row takes its record through a YAML merge key (<<: *name) from "
                                 "another row: write the record on this row itself (its own expected:) and record "
                                 "again")
            raise ValueError(f"{where}: no 'measured:' in this record of the registry")
        key, node = found
        if node.start_mark.index < key.end_mark.index:
            raise ValueError(f"{where}: its 'measured' is an alias of another record's numbers (*name): rewriting "
                             "it would change that record too; write this record's numbers out and record again")
        shared = _shared_problem(root, row, [expected[1], record[1], node], where)
        if shared is not None:
            raise ValueError(shared)
        if not isinstance(node, yaml.MappingNode):
            raise ValueError(f"{where}: its 'measured' is not a mapping of numbers")
        old = loader.construct_document(node)
    finally:
        loader.dispose()
    start = text.index(":", key.end_mark.index) + 1
    end = _content_end(node)
    span = text[start:end]
    keep = ""
    head = text[node.start_mark.index:end]
    if head.startswith("&"):  # its anchor, which aliases elsewhere name
        keep = head.split(None, 1)[0] + " "
    comments = [m.group(1).rstrip() for line in span.splitlines() if (m := _COMMENT.search(line))]
    return start, end, old, keep, "".join(f"  {c}" for c in comments)
