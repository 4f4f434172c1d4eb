"""A text miniature's recorded verdict binds only the training it was measured with: a run whose miniature trained on
another training text (by content) or for other steps reports a verdict as measured on other inputs, naming the
training text, not as the registry's recorded finding (it was reported as "expected not to hold")."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.common.settings import Settings
from aniso.judge.verdicts import EXPECTED_NOT_TO_HOLD, HOLDS, Outcome
from aniso.registry.entries import Registry, load_registry
from aniso.session import AnisoSession
from aniso.sources import miniature_text

ROOT = Path(__file__).resolve().parents[1]
CLAIM = "X.rogue-dimensions"
WIKITEXT = "wikitext-103-validation@fc03b3e11199aebb"


@pytest.fixture
def standard(tmp_path, monkeypatch):
    """A training text taken as the one the records were measured with (by its content's digest)."""
    from aniso.common.files import sha256_file

    text = tmp_path / "standard.txt"
    text.write_bytes(b"<page><title>Anarchism</title> the text of a wiki page, long enough " * 20)
    monkeypatch.setattr(miniature_text, "RECORDED_TRAINING_TEXT", (sha256_file(text)[:16], "the-standard-text"))
    return text


def _decide(tmp_path, train_text: Path, steps: int, holds: bool = False):
    full = load_registry(ROOT / "models.yaml")
    entry = full.get("mini-bert-bytes-s0")
    registry = Registry([entry], full.path, full.recorded_inputs, full.recorded_profile)
    settings = Settings(models=entry.id, report_dir=str(tmp_path / "reports"), cache_dir=str(tmp_path / "cache"),
                        train_text=str(train_text), miniature_steps=steps)
    session = AnisoSession.start(settings, registry, tmp_path)
    return session.decision(entry, CLAIM, holds, WIKITEXT, None), session.training_of(entry)


def test_a_miniature_trained_on_another_text_is_not_judged_by_its_record(tmp_path, standard):
    short = tmp_path / "t150.txt"
    short.write_bytes(standard.read_bytes()[:150])
    decision, training = _decide(tmp_path, short, 10, holds=True)  # was "holds, expected not to", a failure
    assert decision.verdict == HOLDS and decision.outcome == Outcome.PASS, decision
    assert "t150.txt" in decision.reason and "10 steps" in decision.reason and "the-standard-text" in decision.reason
    decision, _ = _decide(tmp_path, short, 10)  # the recorded finding, said to be recorded on other training
    assert decision.verdict == EXPECTED_NOT_TO_HOLD and "these inputs: " in decision.reason, decision
    assert "t150.txt" in decision.reason and "the-standard-text" in decision.reason, decision
    assert training[0].startswith("training text t150.txt@") and "(150 bytes), 10 steps" in training[0]


def test_the_recorded_training_at_the_profiles_steps_keeps_the_record(tmp_path, standard):
    from aniso.common.settings import PROFILES

    decision, training = _decide(tmp_path, standard, PROFILES["quick"]["miniature_steps"])
    assert decision.verdict == EXPECTED_NOT_TO_HOLD and training is None, decision
    assert "these inputs" not in decision.reason
    decision, _ = _decide(tmp_path, standard, 10, holds=True)  # the recorded text, other steps: other inputs
    assert decision.verdict == HOLDS and decision.outcome == Outcome.PASS and "10 steps" in decision.reason, decision
