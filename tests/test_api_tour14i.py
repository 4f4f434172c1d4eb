"""aniso.measure on a corpus file of fewer paragraphs than the run profile's default sample size warns as it does
when ``n_inputs`` asked for more (it was silent); a list of texts, measured whole, and the paper profile's "every
paragraph" give no such warning."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import aniso
from aniso.common.settings import PROFILES

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
PARAGRAPHS = [f"Paragraph {i} says that the river runs through the old town under {i + 2} stone bridges."
              for i in range(20)]


@pytest.fixture
def c20(tmp_path):
    path = tmp_path / "c20.txt"
    path.write_text("\n".join(PARAGRAPHS) + "\n")
    return path


def test_the_profiles_default_sample_size_warns_when_the_file_gives_fewer(c20, monkeypatch):
    monkeypatch.delenv("ANISO_N_SEQUENCES", raising=False)
    asked = PROFILES["quick"]["n_sequences"]
    with pytest.warns(RuntimeWarning, match=rf"^n_sequences \(the default of run profile quick\): {asked} asked, but "
                                            r".*c20\.txt gave only 20 of them; measured on 20"):
        aniso.measure("all-MiniLM-L6-v2", c20, registry=REGISTRY, settings={"profile": "quick"})


def test_no_fewer_than_asked_warning_for_texts_or_every_paragraph(c20):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*asked, but", category=RuntimeWarning)
        aniso.measure("all-MiniLM-L6-v2", PARAGRAPHS[:4], registry=REGISTRY)
        aniso.measure("all-MiniLM-L6-v2", c20, registry=REGISTRY, settings={"profile": "paper", "max_length": 32})
