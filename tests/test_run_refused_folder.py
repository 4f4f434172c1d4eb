"""`aniso run FOLDER` on a model folder whose files cannot be loaded faithfully (here: no tokenizer files): the
refusal is the run's answer, exit 2, with no verdict table and no list of registry models left out (the results file
records the refusal)."""

from __future__ import annotations

import shutil
from pathlib import Path

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_refused_folder_says_only_why(clean_env, tiny_bert_dir, capsys):
    folder = clean_env / "notok"
    shutil.copytree(tiny_bert_dir, folder)
    for f in folder.glob("tokenizer*"):
        f.unlink()
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    code = main(["run", str(folder), "--claims", "G.token-nlp-anisotropic", "--registry", str(ROOT / "models.yaml")])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "no tokenizer files" in err.strip().splitlines()[-1], err
    assert "registry model(s) outside" not in out, out
    summary = out.split("aniso: claim verdicts", 1)[1].splitlines()[1:]
    assert summary[0].startswith("1 claim test(s) not run: refused: "), summary  # no verdict table before it
    assert not any(" hold" in line for line in summary), summary  # nor the verdict counts
