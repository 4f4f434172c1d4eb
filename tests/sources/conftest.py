"""Fixtures of the model-source tests."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def quiet_run(clean_env) -> list[str]:
    """The arguments after ``aniso run MODEL`` of a quiet one-claim run on a few short paragraphs (no ANISO_*
    setting of the caller's, a cache and report folder of the test's, the hub not probed)."""
    return ["--registry", str(ROOT / "models.yaml"), "--claims", "G.token-nlp-anisotropic", "--",
            "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"]
