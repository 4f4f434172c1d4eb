"""Paragraphs that differ only in letter case are one sequence to an uncased tokenizer: 8 paragraphs, each also given
in upper case, were measured and labelled as 16 inputs without a word (`aniso stats`, `aniso.measure`), where exact
copies were labelled "8 of the 16 … repeat another". The label now says how many the tokenizer reads as copies,
and exact copies are counted once, by the corpus label."""

from __future__ import annotations

import aniso
from aniso.cli import main

PARAGRAPHS = [f"paragraph number {i} tells of the river, the town of {w} and the people who lived there long ago"
              for i, w in enumerate(["york", "lyon", "porto", "basel", "turin", "gent", "split", "bergen"])]
NOTE = ("8 of the 16 paragraphs read by this model's tokenizer as a copy of another (a case or spelling its vocabulary "
        "does not tell apart, or the same first tokens)")


def test_texts_in_two_cases_are_said_to_be_read_as_copies(clean_env):
    texts = [t for p in PARAGRAPHS for t in (p, p.upper())]
    label = aniso.measure("all-MiniLM-L6-v2", texts, progress=False).inputs["label"]
    assert NOTE in label, label
    exact = aniso.measure("all-MiniLM-L6-v2", [p for p in PARAGRAPHS for _ in range(2)], progress=False)
    assert "8 of the 16 repeat another" in exact.inputs["label"] and NOTE not in exact.inputs["label"], \
        exact.inputs["label"]


def test_aniso_stats_says_it_too(clean_env, monkeypatch, capsys):
    corpus = clean_env / "c5.txt"
    corpus.write_text("".join(f"{t}\n" for p in PARAGRAPHS for t in (p, p.upper())))
    assert main(["stats", "all-MiniLM-L6-v2", "--corpus", str(corpus), "--n-sequences", "16"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert NOTE in first and first.endswith("(16 sequences)"), first
