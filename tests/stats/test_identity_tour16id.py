"""A model's results name the folder this run measured: a cache entry read back for a copy of a folder (same weights,
same id) names the copy, not the folder it was computed from; a folder named with letters outside ASCII gets an id
of its own; a folder named like a registry id is refused by every door rather than labelled as the registry's model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import aniso
from word_bert import TEXTS, word_bert

ROOT = Path(__file__).resolve().parents[2]


def test_a_cache_hit_for_a_copy_names_the_copy_as_origin(clean_env):
    (clean_env / "a").mkdir()
    first = word_bert(clean_env / "a" / "model")
    copy = clean_env / "c" / "model"
    shutil.copytree(first, copy)
    a = aniso.measure(str(first), TEXTS, progress=False)
    c = aniso.measure(str(copy), TEXTS, progress=False)
    assert a.meta["cache"]["hit"] is False and c.meta["cache"]["hit"] is True  # same weights: numbers reused
    assert a.meta["origin"] == f"local: {first.resolve()}"
    assert c.meta["origin"] == f"local: {copy.resolve()}", c.meta["origin"]
    assert [s.mean_cosine for s in c.layers] == [s.mean_cosine for s in a.layers]
    again = aniso.measure(str(first), TEXTS, progress=False)  # and back: the entry now names the copy
    assert again.meta["cache"]["hit"] is True and again.meta["origin"] == f"local: {first.resolve()}"


def test_a_folder_named_with_an_accent_is_not_taken_for_the_folder_without_it(clean_env):
    (clean_env / "models").mkdir()
    plain = word_bert(clean_env / "models" / "plain")
    accented = clean_env / "my models" / "é plain"
    shutil.copytree(plain, accented)
    p = aniso.measure(str(plain), TEXTS, progress=False)
    e = aniso.measure(str(accented), TEXTS, progress=False)
    assert p.model_id == "plain"
    assert e.model_id != "plain" and "plain" in e.model_id, e.model_id
    assert e.meta["origin"] == f"local: {accented.resolve()}", e.meta["origin"]


@pytest.fixture
def named_like_a_row(clean_env):
    """A folder named like the registry's row all-MiniLM-L6-v2, holding other weights."""
    (clean_env / "x").mkdir()
    return word_bert(clean_env / "x" / "all-MiniLM-L6-v2")


def test_measure_refuses_a_folder_named_like_a_registry_id(named_like_a_row):
    with pytest.raises(ValueError, match=r"^model .*all-MiniLM-L6-v2' would get the id 'all-MiniLM-L6-v2', which the "
                                         r"registry .* already uses"):
        aniso.measure(str(named_like_a_row), TEXTS, registry=ROOT / "models.yaml", progress=False)


def test_stats_and_run_refuse_a_folder_named_like_a_registry_id_alike(named_like_a_row, refused_line):
    registry = str(ROOT / "models.yaml")
    stats = refused_line(["stats", str(named_like_a_row), "--registry", registry])
    run = refused_line(["run", str(named_like_a_row), "--registry", registry, "--claims", "G.token-nlp-anisotropic"])
    for line in (stats, run):
        assert "would get the id 'all-MiniLM-L6-v2', which the registry" in line and "already uses" in line, line


def test_twin_of_a_folder_says_twins_are_of_hub_rows(named_like_a_row, refused_line, capsys):
    (named_like_a_row.parent.parent / "models").mkdir()
    folder = word_bert(named_like_a_row.parent.parent / "models" / "plain")
    capsys.readouterr()  # what writing the folder printed
    line = refused_line(["run", str(folder), "--twin", "--registry", str(ROOT / "models.yaml"),
                         "--claims", "G.token-nlp-anisotropic"])
    assert line.startswith("aniso run: --twin: ") and "is a folder or file here" in line, line
    assert "hub rows" in line and f"run it without --twin: aniso run {folder}" in line, line
