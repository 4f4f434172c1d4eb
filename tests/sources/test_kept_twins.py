"""A twin kept by ``aniso run ID --twin --keep-twins FOLDER`` (random weights in FOLDER/hub, its manifest beside it)
is never measured as the row's real model: with FOLDER/hub as the hub cache, ``aniso stats ID`` refuses it in one
line naming the row and the snapshot folder, the listing does not call it here, and the twin run itself loads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aniso.cli import main
from aniso.registry.entries import load_registry
from aniso.sources import SourceContext, weights_here

ROOT = Path(__file__).resolve().parents[2]
ROW = "bert-base-uncased"
CLAIM = "G.token-nlp-anisotropic"


def test_a_kept_twin_is_refused_as_the_real_model(hub_env, monkeypatch, capsys):
    from huggingface_hub import constants

    tmp_path = hub_env
    for name in ("ANISO_CORPUS",):  # (set relative to the checkout, as CI sets it)
        if os.environ.get(name):
            monkeypatch.setenv(name, os.path.abspath(os.environ[name]))
    keep = tmp_path / "kt"
    code = main(["run", ROW, "--twin", "--keep-twins", str(keep), "--registry", str(ROOT / "models.yaml"),
                 "--claims", CLAIM, "--", "--aniso-n-sequences", "16"])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]  # the twin run loads its own twin
    assert (keep / "twin-manifest.json").is_file() and (keep / "hub").is_dir()

    monkeypatch.setenv("HF_HUB_CACHE", str(keep / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(keep / "hub"))
    code = main(["stats", ROW, "--registry", str(ROOT / "models.yaml"), "--n-sequences", "16"])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and "layer" not in out, out[-2000:]
    assert len(lines) == 1 and "Traceback" not in err, err[-2000:]
    commit = json.loads((keep / "twin-manifest.json").read_text())["rows"][ROW]["imported"][0]["commit"]
    for needle in (ROW, f"snapshots/{commit}", "a twin's random weights, kept by aniso run --twin --keep-twins",
                   "run it with --twin, or import the real model"):
        assert needle in lines[0], lines[0]

    from aniso.sources.hub import kept_twin_problem

    entry = load_registry(ROOT / "models.yaml").get(ROW)
    assert weights_here(entry, SourceContext()).startswith(f"refused: {ROW}: ")
    assert kept_twin_problem(entry, commit, SourceContext(twin_manifest=keep / "twin-manifest.json")) is None
