"""What changed between two runs (``aniso diff OLD NEW``): verdicts, and deciding statistics beyond their intervals.

Results are matched by (claim, model, test), the test by its name and parameters, not by the folder its file was run
from. A *verdict* change is a different verdict string (holds, does not hold,
expected not to hold, skipped, ...). A *number* change is a deciding statistic (:class:`~aniso.judge.results.Uncertainty`)
whose new value lies outside the old run's interval, or the old value outside the new one's: a move larger than the
resampling noise of either run. Without intervals (or with one that does not hold its own value), the scalar
numbers of ``measured`` are compared, and one that differs by more than ``rel_tol`` is reported as a number change
"without interval".

A *record* change is a registry record whose numbers one run measured otherwise than recorded (stale, see
:mod:`aniso.judge.records`) and the other did not, or whose stale numbers differ between the runs: the new run
flags every record it finds stale, so that a stale record is never read as a confirmed finding.

Two runs over different model sets (a one-model ``aniso run`` against a full ``pytest claims/``) share only some
results; ``common_only`` compares just those and :func:`left_aside` counts the rest, instead of listing every
result of the larger run as added or removed.

An *inputs* change is a result measured on other inputs (its ``inputs`` identity, ``<name>@<fingerprint>``) in the
two runs, e.g. WikiText-103 against a local corpus: its other changes may be the inputs' doing, not the code's.
:func:`format_diff` says so in one line beside the table; it is no change of a verdict or number.

A *model* change is a model id whose results the two runs measured from other weights (its ``models[id].meta``
``fingerprint`` differs, e.g. two folders both named ``model``): its results are not compared as one model's change
but listed as removed and added, and :func:`format_diff` names the model, with where each run loaded it from
(``origin``), in one line. A model measured from the same weights (a copy of its folder elsewhere) is compared as
before. So are two twin runs whose twins differ (another commit imported). A twin run against a run of the model is
left to the *sizes* note, which names a twin against its model.

A *sizes* change is a result measured on another number of inputs or vectors (``n_items``, ``n_vectors``) or at
other settings of its model (``models[id].meta.settings``: ``max_length``, ``seed``, ...) in the two runs; a *moved*
change is a deciding statistic or a scalar of ``measured`` that differs between the runs but stays within both runs'
intervals. Neither is counted as a change (they are resampling noise or the settings' doing), but
:func:`format_diff` names them in one line each, so that a diff never says "no number changed" of numbers that did.

A *claims* change is a claims filter (the setting ``claims``, ``aniso run --claims``) that differs between the runs:
a claim one run selected and the other did not is listed as added or removed, and :func:`format_diff` names both
filters in the settings line, so that a claim left out reads as the filter's doing, not the code's. A *registry*
change is a registry file of other content (``registry_sha256``) in the two runs: the settings line names both files
and digests, since a record change may be the registry's doing. A record change says of the side whose numbers are
not stale whether the record was reproduced (compared, all within tolerance), not compared (and why: other sizes,
other inputs) or has no numbers (no record), never "reproduced" of numbers no run compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..judge.results import ClaimResult, ResultsDocument

__all__ = ["Change", "diff_results", "format_diff", "inputs_line", "left_aside", "model_sets", "other_weights"]


@dataclass(frozen=True)
class Change:
    """One difference: ``kind`` is ``"verdict"``, ``"number"``, ``"fragility"``, ``"record"``, ``"inputs"``,
    ``"sizes"``, ``"moved"``, ``"model"``, ``"claims"`` (the runs' claims filters), ``"registry"`` (the registry
    files the runs read, where their SHA-256 differ), ``"added"`` or ``"removed"``;
    ``claim_id``, ``model_id`` and ``test`` say where; ``old`` and ``new`` what (in words)."""

    kind: str
    claim_id: str
    model_id: str | None
    test: str
    old: str
    new: str


def _key(r: ClaimResult) -> tuple[str, str, str]:
    """The identity of a result across runs: its claim, model, and the test's name with its parameters (pytest's
    node id less its file path: the same claim test run from a ``claims/`` folder elsewhere, e.g. beside another
    registry, is the same test)."""
    return (r.claim_id, r.model_id or "", r.test.split("::", 1)[-1])


def _other_test(r: ClaimResult, other: dict) -> str:
    """`` (test T; the other run measured this claim on this model in test U)`` where ``other`` (results by
    :func:`_key`) holds the claim and model of ``r`` from another test only, so that an added or removed row of a
    second test of one claim does not read as the claim itself added or removed; else ``""``."""
    from ..judge.results import short_test_id

    tests = sorted(short_test_id(o.test) for k, o in other.items() if k[:2] == _key(r)[:2] and k[2] != _key(r)[2])
    if not tests:
        return ""
    return (f" (test {short_test_id(r.test)}; the other run measured this claim on this model in test "
            f"{', '.join(tests)})")


def _outside(value: float | None, low: float | None, high: float | None) -> bool:
    return None not in (value, low, high) and not (low <= value <= high)


def _holds_own(u) -> bool:
    """Whether an interval holds its own value: one that does not (a p-value on all inputs resolved further than
    each resample's, below the resamples' Monte Carlo floor) cannot say whether another value moved beyond it, so
    the numbers are compared as numbers instead."""
    return u.value is not None and u.low <= u.value <= u.high


def _scalars(measured: dict) -> dict[str, float]:
    return {k: float(v) for k, v in measured.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _number(value) -> str:
    """A recorded or measured value in words, a float rounded to 4 significant digits as elsewhere in the diff."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _stale(r: ClaimResult) -> str:
    """A result's stale record numbers in words ("" when none)."""
    return "; ".join(f"{d.key} recorded {_number(d.recorded)}, measured {_number(d.measured)}"
                     for d in r.record_drift)


def _record_state(r: ClaimResult) -> str:
    """What a run found of a result's registry record, in words, where its numbers are not stale: reproduced (compared
    and all within tolerance), not compared (and why: other sizes, other inputs, ...), or no record numbers (the row
    has no record, or one without numbers)."""
    check = r.record_check or ""
    if check.startswith("record's numbers compared"):
        return "record's numbers reproduced"
    prefix = "record's numbers not compared: "
    if check.startswith(prefix):
        return f"record not compared ({check[len(prefix):]})"
    return f"record not compared ({check})" if check else "no record numbers"


def _sizes(old: ResultsDocument, new: ResultsDocument, a: ClaimResult, b: ClaimResult) -> str | None:
    """The sizes and model settings that differ between two results of one (claim, model, test), in words
    ("n_items 8 -> 10, n_vectors 581 -> 717"), the twin sizes of two twin runs ("twin tiny -> full size") and the
    models' layer counts where they differ; None when none does."""
    moved = []
    twins = [(doc.provenance.twin or {}).get("size", "tiny") if doc.provenance.twin is not None else "none"
             for doc in (old, new)]
    if twins[0] != twins[1]:  # a tiny and a full-size twin (or a twin and the model) are other models
        moved.append(f"twin {twins[0]} -> {twins[1]}")
    for name in ("n_items", "n_vectors"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and x != y:
            moved.append(f"{name} {x} -> {y}")
    ma, mb = old.models.get(a.model_id or ""), new.models.get(b.model_id or "")
    if ma is not None and mb is not None and len(ma.layer_names) != len(mb.layer_names):
        moved.append(f"layers {len(ma.layer_names)} -> {len(mb.layer_names)}")
    sa = ma.meta.get("settings") if ma is not None else None
    sb = mb.meta.get("settings") if mb is not None else None
    if isinstance(sa, dict) and isinstance(sb, dict):
        for name in sorted(sa.keys() & sb.keys()):
            if name == "n_sequences" and moved:  # said by n_items
                continue
            if sa[name] != sb[name]:
                moved.append(f"{name} {sa[name]} -> {sb[name]}")
    return ", ".join(moved) if moved else None


def other_weights(old: ResultsDocument, new: ResultsDocument) -> dict[str, tuple[str, str]]:
    """The model ids both runs measured, but from other weights (their ``meta.fingerprint`` recorded in both and
    different), with where each run loaded them from (``meta.origin`` and the fingerprint, in words); none between a
    twin run and another run, nor between a tiny and a full-size twin (the *sizes* note names those). Two twin runs of
    one size whose twins' weights differ (another commit imported: another tokenizer trained, another draw) measured
    two models under one id: named here too."""
    twins = [(doc.provenance.twin or {}).get("size", "tiny") if doc.provenance.twin is not None else None
             for doc in (old, new)]
    if twins[0] != twins[1]:
        return {}
    out = {}
    for model_id in old.models.keys() & new.models.keys():
        a, b = old.models[model_id].meta, new.models[model_id].meta
        fa, fb = a.get("fingerprint"), b.get("fingerprint")
        if isinstance(fa, str) and isinstance(fb, str) and fa != fb:
            out[model_id] = tuple(f"{m.get('origin') or 'origin not recorded'} (weights {f})"
                                  for m, f in ((a, fa), (b, fb)))
    return out


def model_sets(old: ResultsDocument, new: ResultsDocument) -> tuple[set[str], set[str]]:
    """The models each run has results for (model-free results left out)."""
    return ({r.model_id for r in old.results if r.model_id}, {r.model_id for r in new.results if r.model_id})


def left_aside(old: ResultsDocument, new: ResultsDocument) -> tuple[int, int]:
    """How many results only ``old`` has and only ``new`` has (what ``common_only`` does not compare)."""
    before, after = {_key(r) for r in old.results}, {_key(r) for r in new.results}
    return len(before - after), len(after - before)


def diff_results(old: ResultsDocument, new: ResultsDocument, rel_tol: float = 1e-6,
                 common_only: bool = False, notes: bool = False) -> list[Change]:
    """The :class:`Change` list from ``old`` to ``new`` (in the new run's order, then the removed ones).

    ``notes``: add the ``"sizes"``, ``"moved"``, ``"claims"`` and ``"registry"`` changes too (what
    :func:`format_diff` names beside the table).

    ``common_only``: compare only the results (claim, model, test) both runs have; no "added" or "removed" change.
    """
    before = {_key(r): r for r in old.results}
    after = {_key(r): r for r in new.results}
    if common_only:
        before = {k: r for k, r in before.items() if k in after}
        after = {k: r for k, r in after.items() if k in before}
    changes: list[Change] = []
    filters = [_claims_filter(doc) for doc in (old, new)]
    if notes and filters[0] != filters[1]:  # a claim one run left out is its filter's doing
        changes.append(Change("claims", "", None, "", *filters))
    registries = [_registry(doc) for doc in (old, new)]
    if notes and None not in registries and registries[0][1] != registries[1][1]:  # records may differ by it
        (path_a, sha_a), (path_b, sha_b) = registries
        changes.append(Change("registry", "", None, "", f"{path_a} (sha256 {sha_a[:12]})",
                              f"{path_b} (sha256 {sha_b[:12]})"))
    others = other_weights(old, new)
    for model_id, (was, now) in sorted(others.items()):
        changes.append(Change("model", "", model_id, "", was, now))
    for key, b in after.items():
        a = before.get(key)
        where = (b.claim_id, b.model_id, b.test)
        if a is None or b.model_id in others:  # another model under the same id: its results are not compared
            changes.append(Change("added", *where, "-", _verdict(b) + _other_test(b, before)))
            continue
        if a.inputs and b.inputs and a.inputs != b.inputs:
            changes.append(Change("inputs", *where, a.inputs, b.inputs))
        sizes = _sizes(old, new, a, b)
        if notes and sizes is not None:
            changes.append(Change("sizes", *where, sizes, ""))
        if a.verdict != b.verdict or bool(a.twin) != bool(b.twin):
            changes.append(Change("verdict", *where, _verdict(a), _verdict(b)))
        stale_a, stale_b = _stale(a), _stale(b)
        if stale_b and stale_a != stale_b:
            changes.append(Change("record", *where, f"stale record: {stale_a}" if stale_a else _record_state(a),
                                  f"stale record: {stale_b}"))
        elif stale_a and not stale_b:
            changes.append(Change("record", *where, f"stale record: {stale_a}", _record_state(b)))
        ua, ub = a.uncertainty, b.uncertainty
        if ua is not None and ub is not None and ua.low is not None and ub.low is not None and ua.informative \
                and ub.informative and _holds_own(ua) and _holds_own(ub):
            if _outside(ub.value, ua.low, ua.high) or _outside(ua.value, ub.low, ub.high):
                changes.append(Change("number", *where, f"{ua.statistic} {ua.value:.4g} [{ua.low:.4g}, {ua.high:.4g}]",
                                      f"{ub.value:.4g} [{ub.low:.4g}, {ub.high:.4g}]"))
            elif notes and not math.isclose(ua.value, ub.value, rel_tol=rel_tol, abs_tol=1e-12):
                sa, sb = _scalars(a.measured), _scalars(b.measured)
                other = [k for k in sa.keys() & sb.keys() if not math.isclose(sa[k], sb[k], rel_tol=rel_tol,
                                                                              abs_tol=1e-12)]
                changes.append(Change("moved", *where, f"{ua.statistic} {ua.value:.4g}", f"{ub.value:.4g}"
                                      + (f" ({', '.join(sorted(other))} moved too)" if other else "")))
            if ua.fragile != ub.fragile:
                changes.append(Change("fragility", *where, "fragile" if ua.fragile else "robust",
                                      "fragile" if ub.fragile else "robust"))
            continue
        sa, sb = _scalars(a.measured), _scalars(b.measured)
        for name in sa.keys() & sb.keys():
            x, y = sa[name], sb[name]
            if not math.isclose(x, y, rel_tol=rel_tol, abs_tol=1e-12):
                changes.append(Change("number", *where, f"{name} {x:.6g}", f"{y:.6g} (without interval)"))
    for key, a in before.items():
        if key not in after or a.model_id in others:
            changes.append(Change("removed", a.claim_id, a.model_id, a.test, _verdict(a) + _other_test(a, after), "-"))
    return changes


def _claims_filter(doc: ResultsDocument) -> str:
    """The claims filter a run was given (its setting ``claims``), in words: quoted, or "every claim"."""
    claims = (doc.provenance.settings or {}).get("claims")
    return repr(claims) if isinstance(claims, str) and claims.strip() else "every claim"


def _registry(doc: ResultsDocument) -> tuple[str, str] | None:
    """The registry file a run read (its setting ``registry``) and that file's SHA-256 (``registry_sha256``); None
    where the run did not record the digest."""
    sha = doc.provenance.registry_sha256
    if not sha:
        return None
    path = (doc.provenance.settings or {}).get("registry")
    return (str(path) if path else "registry path not recorded"), sha


def _verdict(r) -> str:
    """A result's verdict as the table shows it: a twin's (random weights, the code path only) marked so, never to be
    read as the model's."""
    return f"{r.verdict} (twin)" if r.twin else r.verdict


def inputs_line(changes: list[Change], shown: int = 3) -> str | None:
    """One line saying which results were measured on different inputs in the two runs (the ``"inputs"`` changes),
    per pair of inputs: ``inputs differ: A -> B (2 results: G.x on m, G.y on m)``; None when there are none."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        if c.kind == "inputs":
            pairs.setdefault((c.old, c.new), []).append(f"{c.claim_id} on {c.model_id}" if c.model_id else c.claim_id)
    if not pairs:
        return None
    parts = []
    for (old, new), where in pairs.items():
        named = ", ".join(where[:shown]) + (f" and {len(where) - shown} more" if len(where) > shown else "")
        parts.append(f"{old} -> {new} ({len(where)} result(s): {named})")
    return ("inputs differ: " + "; ".join(parts) + "; their changes may be the inputs' doing, not the code's")


def _note(changes: list[Change], kind: str, shown: int = 3) -> list[str]:
    """The ``kind`` changes as "G.x on m: old -> new" phrases, the first ``shown`` and a count of the rest."""
    got = [f"{c.claim_id}{f' on {c.model_id}' if c.model_id else ''}: {c.old}{f' -> {c.new}' if c.new else ''}"
           for c in changes if c.kind == kind]
    return got[:shown] + ([f"and {len(got) - shown} more"] if len(got) > shown else [])


def _cell(text: str) -> str:
    """A cell of the Markdown table: its unprintable characters escaped (:func:`aniso.common.tables.printable`),
    and ``|`` as ``\\|`` (which would otherwise end the cell)."""
    from ..common.tables import printable

    return printable(text).replace("|", "\\|")


def format_diff(changes: list[Change], old_name: str = "old", new_name: str = "new") -> str:
    """The changes as a table, with a one-line count first, and a line naming the results measured on different
    inputs in the two runs (:func:`inputs_line`) last. Text from the results files is shown with its control and
    format characters escaped (:func:`aniso.common.tables.printable`) and ``|`` escaped in the table's cells."""
    from tabulate import tabulate

    from ..common.tables import printable

    note = inputs_line(changes)
    note = printable(note) if note else note
    sizes, moved = [printable(s) for s in _note(changes, "sizes")], [printable(s) for s in _note(changes, "moved")]
    old_name, new_name = printable(old_name), printable(new_name)
    models = [printable(f"model {c.model_id!r} was measured from other weights in the two runs: {c.old} -> {c.new}; "
                        "its results are listed as removed and added, not compared as one model's change")
              for c in changes if c.kind == "model"]
    filters = [printable(f"claims filter {c.old} -> {c.new} (a claim only one run selected is listed as added or "
                         "removed)") for c in changes if c.kind == "claims"]
    filters += [printable(f"registry {c.old} -> {c.new} (its records, and so the record changes, may differ by it)")
                for c in changes if c.kind == "registry"]
    changes = [c for c in changes if c.kind not in ("inputs", "sizes", "moved", "model", "claims", "registry")]
    counts = {k: sum(c.kind == k for c in changes) for k in ("verdict", "number", "fragility", "record", "added",
                                                              "removed")}
    head = f"{old_name} -> {new_name}: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n) if changes else \
        f"{old_name} -> {new_name}: no verdict or number changed" + (" beyond either run's interval" if moved else "")
    if changes:
        rows = [[_cell(v) for v in (c.kind, c.claim_id, c.model_id or "-", c.old, c.new)] for c in changes]
        head += "\n" + tabulate(rows, headers=["change", "claim", "model", "old", "new"], tablefmt="github")
    if moved:
        head += ("\nnumbers moved within both runs' intervals (not counted as changes): " + "; ".join(moved))
    if sizes or filters:
        head += ("\nsizes or settings differ: " + "; ".join(filters + sizes)
                 + ("; numbers are compared across them, and they may be the sizes' doing, not the code's" if sizes
                    else ""))
    return head + "".join(f"\n{line}" for line in models) + (f"\n{note}" if note else "")
