"""A correlation test over a constant series has no p-value (NaN): its claim is undecided, said in one line, and
the family's Benjamini-Hochberg adjustment runs over the other models' p-values."""

from __future__ import annotations

import numpy as np
import pytest

from aniso import metrics
from aniso.common.settings import Settings
from aniso.judge.rules import underpowered
from aniso.judge.verdicts import HOLDS, UNDERPOWERED
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import PENDING, AnisoSession

CLAIM = "G.drift-correlation-spearman"


def _entry(ident: str) -> ModelEntry:
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "hub", "repo": f"org/{ident}"}, modality="text",
                                          granularity="subword", architecture="transformer", role="encoder",
                                          family="bert"))


def test_a_constant_series_leaves_the_claim_undecided_and_out_of_its_family(tmp_path):
    entries = [_entry(f"m{i}") for i in range(3)]
    settings = Settings(models=",".join(e.id for e in entries), report_dir=str(tmp_path / "reports"),
                        cache_dir=str(tmp_path / "cache"))
    session = AnisoSession.start(settings, Registry(entries), tmp_path)
    session.family_sizes[CLAIM] = 3
    flat = metrics.drift_correlation(np.arange(6.0), np.full(6, 0.3))  # avg cos the same at every layer
    why, power = underpowered(flat, "layers", 0.7)
    results = []
    for entry, c, undecided in ((entries[0], flat, why), (entries[1], None, None), (entries[2], None, None)):
        p = c.p_value if c is not None else (0.01 if entry.id == "m1" else 0.03)
        ctx = session.claim(CLAIM, entry, f"claims/t.py::t[{entry.id}]")
        ctx.conclude(p < 0.05, {"p_value": p}, "p < 0.05", p_value=p, power=0.9, undecided=undecided)
        session.record(ctx.result, seconds=0.0)
        results.append(ctx.result)
    assert results[0].verdict == UNDERPOWERED and "constant" in results[0].underpowered
    assert results[2].verdict == PENDING
    session.adjust_families()  # was scipy's "`ps` must include only numbers between 0 and 1"
    assert results[0].p_adjusted is None and results[0].verdict == UNDERPOWERED
    assert [r.p_adjusted for r in results[1:]] == pytest.approx([0.02, 0.03])  # BH over the 2 tested
    assert [r.verdict for r in results[1:]] == [HOLDS, HOLDS]
