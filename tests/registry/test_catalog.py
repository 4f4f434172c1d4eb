"""The claim catalogue, the claim tests and docs/claims.md agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aniso.registry.catalog import CLAIMS, get_claim, not_yet_executable

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"""pytest\.mark\.claim\(\s*["']([^"']+)["']""")


def _tested_ids() -> set[str]:
    return {m for p in (ROOT / "claims").glob("test_*.py") for m in MARKER.findall(p.read_text())}


def test_every_executable_claim_has_a_test_and_no_other():
    tested = _tested_ids()
    assert tested <= set(CLAIMS), f"claim tests name unknown ids: {sorted(tested - set(CLAIMS))}"
    executable = {c.id for c in CLAIMS.values() if c.executable}
    assert tested == executable, (f"tests without executable=True: {sorted(tested - executable)}; "
                                  f"executable without a test: {sorted(executable - tested)}")
    assert {c.id for c in not_yet_executable()} == set(CLAIMS) - tested


def test_docs_specify_every_claim_with_its_status():
    doc = (ROOT / "docs" / "claims.md").read_text()
    for cid in CLAIMS:
        assert f"`{cid}`" in doc, f"docs/claims.md does not specify {cid}"
    status = doc.split("## Status", 1)[1].split("\n## ", 1)[0]
    not_yet_row = next(line for line in status.splitlines() if line.startswith("| not yet executable"))
    assert set(re.findall(r"`([^`]+)`", not_yet_row)) == {c.id for c in not_yet_executable()}


def test_unknown_claim_names_itself():
    with pytest.raises(KeyError, match="G.no-such-claim"):
        get_claim("G.no-such-claim")


#: The claim context's methods that read other models' statistics (aniso.session).
READS_OTHERS = {"available_stats", "available_series", "reference_stats"}


def _claims_reading_other_models() -> set[str]:
    """The claim ids whose test reads other models, directly or through a helper of its module (source, not run)."""
    import ast

    from aniso.common.workers import claims_of_module

    found = set()
    for path in (ROOT / "claims").glob("test_*.py"):
        functions = {n.name: n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}

        def called(fn):
            return {c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
                    for c in ast.walk(fn) if isinstance(c, ast.Call)}

        reads = {name for name, fn in functions.items() if called(fn) & READS_OTHERS}
        while True:  # helpers that call helpers that read
            more = {name for name, fn in functions.items() if called(fn) & reads} - reads
            if not more:
                break
            reads |= more
        found |= {claim for test, claim in claims_of_module(path).items() if test in reads}
    return found


def test_the_claims_that_compare_models_are_the_ones_whose_tests_read_other_models():
    """:attr:`Claim.compares_models` schedules a claim's tests after the models' own (aniso.common.workers): a test
    that reads other models without it waits on them mid-run, and one marked without reading them runs late for
    nothing."""
    marked = {c.id for c in CLAIMS.values() if c.compares_models}
    reading = _claims_reading_other_models()
    assert reading, "no claim test reads another model: the scan is broken"
    assert marked == reading, (f"read other models but not marked: {sorted(reading - marked)}; "
                               f"marked but read none: {sorted(marked - reading)}")


def test_every_statistic_has_a_minimum_of_vectors_and_every_claim_over_inputs_needs_some():
    """:data:`MIN_VECTORS` has a row for every statistic the pipeline computes (a new statistic must say how many
    vectors its claims are decided on), and a claim that reads inputs' hidden states (its statistics, or checkpoint
    series over seeds) needs at least one vector; the untrained block's claims, which draw their own, need none."""
    from aniso.registry.catalog import CLAIMS, MIN_VECTORS
    from aniso.stats.pipeline import ALL_STATISTICS

    assert set(MIN_VECTORS) == set(ALL_STATISTICS)
    for claim in CLAIMS.values():
        reads_inputs = any(MIN_VECTORS[s] for s in claim.statistics) or claim.over_seeds
        assert (claim.min_vectors > 0) == reads_inputs, claim.id
    assert CLAIMS["X.rogue-dimensions"].min_vectors == MIN_VECTORS["second-order"]
    assert CLAIMS["G.qk-dot-grows"].min_vectors == MIN_VECTORS["first-order"]
    assert CLAIMS["G.block-norm-fixed-point"].min_vectors == 0
