"""When refusals make a run one of bad input (pytest's usage error, ``aniso run``'s exit 2): nothing measured but
refusals, or a must_run model refused; a model refused beside models measured is reported and does not fail alone."""

from __future__ import annotations

import pytest

from aniso.common.settings import Settings
from aniso.judge.verdicts import HOLDS
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import AnisoSession
from aniso.sources.base import ModelRefused

CLAIM = "G.token-nlp-anisotropic"


def _entry(ident: str, **extra) -> ModelEntry:
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "hub", "repo": f"org/{ident}"}, modality="text",
                                          granularity="subword", architecture="transformer", role="encoder",
                                          family="bert", **extra))


def _session(tmp_path, entries) -> AnisoSession:
    settings = Settings(models=",".join(e.id for e in entries), report_dir=str(tmp_path / "reports"),
                        cache_dir=str(tmp_path / "cache"))
    return AnisoSession.start(settings, Registry(entries), tmp_path)


def _refuse(session, entry):
    ctx = session.claim(CLAIM, entry, f"claims/t.py::t[{entry.id}]")
    with pytest.raises(BaseException):
        ctx.skip(ModelRefused(f"{entry.id}: its files cannot be measured faithfully"))
    session.record(ctx.result, seconds=0.0)


def _measure(session, entry):
    ctx = session.claim(CLAIM, entry, f"claims/t.py::t[{entry.id}]")
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
