"""The session's run-level verdict rules: Benjamini-Hochberg across an adjusted claim's models (pending verdicts
decided at the end), claims over seeds, and a model the registry has never measured."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from aniso.common.settings import Settings
from aniso.judge.training_rules import SeedResult
from aniso.judge.verdicts import DOES_NOT_HOLD, HOLDS, UNDERPOWERED, Outcome
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import PENDING, AnisoSession
from aniso.sources.base import ModelRefused

CLAIM = "G.drift-correlation-spearman"
REFUSED_CLAIM = "G.token-nlp-anisotropic"


def _entry(ident: str, **extra) -> ModelEntry:
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "hub", "repo": f"org/{ident}"}, modality="text",
                                          granularity="subword", architecture="transformer", role="encoder",
                                          family="bert", **extra))


def _session(tmp_path, entries) -> AnisoSession:
    settings = Settings(models=",".join(e.id for e in entries), report_dir=str(tmp_path / "reports"),
                        cache_dir=str(tmp_path / "cache"))
    return AnisoSession.start(settings, Registry(entries), tmp_path)


def _conclude(session, entry, p: float, power: float = 0.9):
    ctx = session.claim(CLAIM, entry, f"claims/t.py::t[{entry.id}]")
    decision, _ = ctx.conclude(p < 0.05, {"p_value": p}, "p < 0.05", p_value=p, power=power)
    session.record(ctx.result, seconds=0.0)
    return decision, ctx.result


def test_only_p_values_the_family_can_change_wait_for_it(tmp_path):
    """With m = 4 tests, p <= 0.05/4 holds at once and p > 0.05 does not; p in between is pending, and decided at
    the end on its Benjamini-Hochberg adjusted value."""
    entries = [_entry(f"m{i}") for i in range(4)]
    session = _session(tmp_path, entries)
    session.family_sizes[CLAIM] = 4
    ps = [0.001, 0.03, 0.04, 0.5]
    decided = [_conclude(session, e, p) for e, p in zip(entries, ps)]
    assert [d.verdict for d, _ in decided] == [HOLDS, PENDING, PENDING, DOES_NOT_HOLD]
    assert decided[1][0].outcome is Outcome.PASS
    session.adjust_families()
    adjusted = false_discovery_control(ps, method="bh")
    assert [r.p_adjusted for _, r in decided] == pytest.approx(list(adjusted))
    # BH: 0.03 and 0.04 adjust to 0.04 x 4/3 = 0.0533 > 0.05: neither rejects
    assert [r.verdict for _, r in decided] == [HOLDS, DOES_NOT_HOLD, DOES_NOT_HOLD, DOES_NOT_HOLD]
    assert all("Benjamini-Hochberg over the 4 model(s)" in r.p_adjustment for _, r in decided)
    # the two pending verdicts contradict their (implicit) "holds" record: the run fails, naming them
    assert len(session.must_run_failures) == 2 and "adjusted p-value" in session.must_run_failures[0]


def test_a_pending_verdict_the_family_rejects_holds(tmp_path):
    entries = [_entry(f"m{i}") for i in range(3)]
    session = _session(tmp_path, entries)
    session.family_sizes[CLAIM] = 3
    decided = [_conclude(session, e, p) for e, p in zip(entries, [0.01, 0.02, 0.03])]
    assert decided[2][1].verdict == PENDING
    session.adjust_families()
    assert [r.verdict for _, r in decided] == [HOLDS, HOLDS, HOLDS] and session.must_run_failures == []
    assert decided[2][1].p_adjusted == pytest.approx(0.03)


def test_a_pending_non_rejection_without_power_is_underpowered(tmp_path):
    entries = [_entry(f"m{i}") for i in range(2)]
    session = _session(tmp_path, entries)
    session.family_sizes[CLAIM] = 2
    _conclude(session, entries[0], 0.9, power=0.3)
    _, r = _conclude(session, entries[1], 0.04, power=0.3)
    session.adjust_families()
    assert r.p_adjusted == pytest.approx(0.08) and r.verdict == UNDERPOWERED and session.must_run_failures == []


def test_a_family_of_one_is_its_raw_p_value(tmp_path):
    e = _entry("solo")
    session = _session(tmp_path, [e])
    session.family_sizes[CLAIM] = 1
    d, r = _conclude(session, e, 0.04)
    assert d.verdict == HOLDS
    session.adjust_families()
    assert r.p_adjusted == pytest.approx(0.04) and r.verdict == HOLDS


def test_a_claim_over_seeds_is_one_verdict_from_every_seed(tmp_path):
    e = _entry("s0")
    session = _session(tmp_path, [e])
    ctx = session.claim("G.qk-means-align", e, "claims/t.py::t[s0]")
    per_seed = {f"s{i}": SeedResult(True, {"aligned_share": 0.8}) for i in range(3)}
    d, _ = ctx.conclude_over_seeds(per_seed, "rule")
    assert d.verdict == UNDERPOWERED and d.outcome is Outcome.PASS and "5 seeds" in ctx.result.underpowered
    assert ctx.result.measured["seeds_holding"] == 3 and set(ctx.result.measured["per_seed"]) == set(per_seed)
    ctx = session.claim("G.qk-means-align", e, "claims/t.py::t[s0]")
    d, _ = ctx.conclude_over_seeds({f"s{i}": SeedResult(True, {}) for i in range(5)}, "rule")
    assert d.verdict == HOLDS


def test_a_detected_model_that_does_not_hold_is_a_new_finding_not_a_failure(tmp_path):
    e = _entry("mine", detected=True)
    session = _session(tmp_path, [e])
    ctx = session.claim("G.isotropic-baseline", e, "claims/t.py::t[mine]")
    d, message = ctx.conclude(False, {"max_avg_cos": 0.01}, "rule")
    assert (d.verdict, d.outcome, message) == (DOES_NOT_HOLD, Outcome.PASS, "")
    assert "new finding" in ctx.result.reason


def test_each_test_of_a_claim_gets_its_own_seed(tmp_path):
    a, b = _entry("a"), _entry("b")
    session = _session(tmp_path, [a, b])
    seeds = {session.claim(CLAIM, e, "t").seed_for(s) for e in (a, b) for s in ("spearman", "pearson")}
    assert len(seeds) == 4 and all(isinstance(s, int) for s in seeds)
    assert np.random.default_rng(min(seeds)) is not None


def test_a_test_two_claims_report_has_one_seed_whichever_claim_reports_it(tmp_path):
    """The drift correlation's Spearman test is decided by one claim and shown beside the Pearson claim: shared,
    its seed is the model's and the test's, the same in both; on another model it differs."""
    a, b = _entry("a"), _entry("b")
    session = _session(tmp_path, [a, b])
    claims = ("G.drift-correlation-spearman", "G.drift-correlation-pearson")
    on_a = {session.claim(c, a, "t").seed_for("drift-correlation:spearman", shared=True) for c in claims}
    on_b = session.claim(claims[0], b, "t").seed_for("drift-correlation:spearman", shared=True)
    assert len(on_a) == 1 and on_b not in on_a
    assert session.claim(claims[0], a, "t").seed_for("x") != session.claim(claims[1], a, "t").seed_for("x")


def _seed_entry(ident: str, record: dict | None = None) -> ModelEntry:
    extra = {"expected": {"G.qk-means-align": record}} if record else {}
    return _entry(ident, checkpoints={"steps": [0, 8], "vary": {"revision": "step{step}"}}, **extra)


def test_a_record_over_seeds_binds_only_a_run_over_the_same_seeds(tmp_path):
    """A record decided over the seeds s0-s2 does not bind a run of s0 alone (another sign test): its numbers are
    not compared, so the run reports its own underpowered verdict instead of a stale record; over the same seeds
    a number that moved is stale."""
    record = {"verdict": "underpowered", "source": "measured", "seeds": ["s0", "s1", "s2"],
              "measured": {"seeds_holding": 1, "n_seeds": 3}, "decides_at": "5 seeds that agree",
              "reason": "{seeds_holding} of {n_seeds} seeds hold"}
    alone = _session(tmp_path / "alone", [_seed_entry("s0", record)])
    e = alone.registry.get("s0")
    assert alone.record_of(e, "G.qk-means-align")[2] is False
    ctx = alone.claim("G.qk-means-align", e, "claims/t.py::t[s0]")
    d, message = ctx.conclude_over_seeds({"s0": SeedResult(True, {})}, "rule")
    assert d.verdict == UNDERPOWERED and d.outcome is not Outcome.FAIL and "stale" not in message
    assert "decided over the seeds s0, s1, s2, this run over s0" in ctx.result.record_check

    three = _session(tmp_path / "three", [_seed_entry("s0", record), _seed_entry("s1"), _seed_entry("s2")])
    e = three.registry.get("s0")
    assert three.record_of(e, "G.qk-means-align")[2] is True
    ctx = three.claim("G.qk-means-align", e, "claims/t.py::t[s0]")
    d, message = ctx.conclude_over_seeds({f"s{i}": SeedResult(True, {}) for i in range(3)}, "rule")
    assert d.outcome is Outcome.FAIL and "stale" in message


# -- when refusals make a run one of bad input (pytest's usage error, `aniso run`'s exit 2): nothing measured but
# refusals, or a must_run model refused; a model refused beside models measured is reported and does not fail alone

def _refuse(session, entry):
    ctx = session.claim(REFUSED_CLAIM, entry, f"claims/t.py::t[{entry.id}]")
    with pytest.raises(BaseException):
        ctx.skip(ModelRefused(f"{entry.id}: its files cannot be measured faithfully"))
    session.record(ctx.result, seconds=0.0)


def _measure(session, entry):
    ctx = session.claim(REFUSED_CLAIM, entry, f"claims/t.py::t[{entry.id}]")
    decision, _ = ctx.conclude(True, {"margin": 0.1}, "margin > 0")
    session.record(ctx.result, seconds=0.0)
    assert decision.verdict == HOLDS


@pytest.mark.parametrize("must_run, fails", [(False, False), (True, True)])
def test_a_model_refused_beside_a_measured_one_fails_the_run_only_when_it_must_run(tmp_path, must_run, fails):
    kept, refused = _entry("kept"), _entry("broken", must_run=must_run)
    session = _session(tmp_path, [kept, refused])
    _measure(session, kept)
    _refuse(session, refused)
    assert sum(session.refused.values()) == 1
    assert not session.all_refused and session.refusal_fails is fails


def test_a_run_of_nothing_but_refusals_fails(tmp_path):
    only = _entry("only")
    session = _session(tmp_path, [only])
    _refuse(session, only)
    assert session.all_refused and session.refusal_fails
