"""`aniso run ORG/NAME@REV` (pip's form of a revision): the refusal says @REV is not read in a model argument and
how a revision runs (a registry row with source.revision), not only "no hub id". A row of docs/bad-input.md."""

from __future__ import annotations

from pathlib import Path

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_a_hub_id_with_a_revision_says_how_a_revision_runs(clean_env, capsys):
    assert main(["run", "me/minilm@v1", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "@v1 is not read as a revision in a model argument" in err[0], err[0]
    assert "{kind: hub, repo: me/minilm, revision: v1}" in err[0], err[0]


def test_aniso_stats_says_the_same(clean_env, capsys):
    assert main(["stats", "me/minilm@v1", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    assert "@v1 is not read as a revision in a model argument" in err, err
