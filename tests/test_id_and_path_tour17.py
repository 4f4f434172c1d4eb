"""A registry id that is also a folder here (a row `plain` of other weights, and a folder ./plain): `aniso run` said
which it ran, but `aniso.measure` and `aniso stats` measured the row without a word, and run's advice ("for the
folder: aniso run ./plain") was refused. Every door says the row is measured, not the folder, and how to measure the
folder; a folder that is the row's own source says nothing."""

from __future__ import annotations

import pytest

import aniso
from aniso.cli import main
from word_bert import TEXTS, word_bert

ROW = ("models:\n- id: plain\n  source: {{kind: local, path: {path}}}\n  modality: text\n  granularity: subword\n"
       "  architecture: transformer\n  role: encoder\n  family: bert\n")
NOTE = ("plain is a registry id and also a path here; measuring the registry's row, not the path (whose id would be "
        "the row's: rename it to measure it)")


@pytest.fixture
def row_and_folder(clean_env, monkeypatch):
    (clean_env / "b").mkdir()
    word_bert(clean_env / "b" / "model")
    word_bert(clean_env / "plain", lower=False)  # another folder, named like the row
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="b/model"))
    monkeypatch.chdir(clean_env)
    return registry


def test_measure_of_an_id_that_is_also_a_folder_here_says_which_it_measured(row_and_folder):
    with pytest.warns(RuntimeWarning, match=NOTE.replace("(", r"\(").replace(")", r"\)")):
        stats = aniso.measure("plain", TEXTS, registry=row_and_folder, progress=False)
    assert stats.meta["origin"].endswith("/b/model")


def test_stats_of_an_id_that_is_also_a_folder_here_says_which_it_measured(row_and_folder, capsys):
    corpus = row_and_folder.parent / "corpus.txt"
    corpus.write_text("\n".join(f"{t} {TEXTS[(i + 1) % 3]}" for i, t in enumerate(TEXTS * 4)) + "\n")
    assert main(["stats", "plain", "--registry", str(row_and_folder), "--corpus", str(corpus),
                 "--n-sequences", "8"]) == 0
    assert NOTE in capsys.readouterr().err


def test_the_rows_own_folder_says_nothing(clean_env, monkeypatch, recwarn):
    word_bert(clean_env / "plain")
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="plain"))
    monkeypatch.chdir(clean_env)
    aniso.measure("plain", TEXTS, registry=registry, progress=False)
    assert not [w for w in recwarn if "also a path here" in str(w.message)]


def test_a_link_to_nothing_named_like_the_row_says_nothing(clean_env, monkeypatch, recwarn):
    """A dangling link named like the row is no model to measure under another name: no advice to rename it."""
    word_bert(clean_env / "model")
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="model"))
    (clean_env / "plain").symlink_to(clean_env / "nowhere")
    monkeypatch.chdir(clean_env)
    aniso.measure("plain", TEXTS, registry=registry, progress=False)
    assert not [w for w in recwarn if "also a path here" in str(w.message)]
