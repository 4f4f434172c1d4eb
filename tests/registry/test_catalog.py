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
