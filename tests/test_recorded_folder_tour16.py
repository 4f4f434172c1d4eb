"""After `aniso record` adds the row of a folder's first run, running the folder again by its path ran into "would get
the id 'iso', which the registry already uses": the row names this very folder, so the row is run (as
`aniso run iso`), and `aniso.measure` of the folder gives the row's model; a folder named like a row of other
weights is still refused."""

from __future__ import annotations

import pytest

import aniso
from aniso.cli import main
from word_bert import TEXTS, word_bert

ROW = ("models:\n- id: iso\n  source: {{kind: local, path: {path}}}\n  modality: text\n  granularity: subword\n"
       "  architecture: transformer\n  role: encoder\n  family: bert\n")


@pytest.mark.parametrize("relative", [True, False])
def test_measure_of_the_folder_a_row_names_is_that_row(clean_env, relative):
    (clean_env / "models").mkdir()
    folder = word_bert(clean_env / "models" / "iso")
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="models/iso" if relative else folder))
    stats = aniso.measure(str(folder), TEXTS, registry=registry, progress=False)
    assert stats.model_id == "iso"


def test_measure_of_another_folder_of_that_name_is_still_refused(clean_env):
    (clean_env / "models").mkdir()
    (clean_env / "other").mkdir()
    word_bert(clean_env / "models" / "iso")
    other = word_bert(clean_env / "other" / "iso")
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="models/iso"))
    with pytest.raises(ValueError, match=r"would get the id 'iso', which the registry .* already uses"):
        aniso.measure(str(other), TEXTS, registry=registry, progress=False)


def test_run_of_the_folder_a_row_names_runs_the_row(clean_env, capsys):
    (clean_env / "models").mkdir()
    folder = word_bert(clean_env / "models" / "iso")
    registry = clean_env / "reg.yaml"
    registry.write_text(ROW.format(path="models/iso"))
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(f"{t} {TEXTS[(i + 1) % 3]}" for i, t in enumerate(TEXTS * 4)) + "\n")
    code = main(["run", str(folder), "--registry", str(registry), "--claims", "G.token-nlp-anisotropic", "--",
                 "--aniso-n-sequences", "12", "--aniso-corpus", str(corpus)])
    out, err = capsys.readouterr()
    assert code == 0, out[-2000:] + err[-2000:]
    assert f"{folder} is the source of the registry's row 'iso'; running the row (aniso run iso)" in out + err
    assert "not in the registry; detected" not in out + err
