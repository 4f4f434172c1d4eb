"""`aniso run FOLDER --registry R` where FOLDER is the source of registry rows under other ids: the folder is still
measured as asked, and the line of what was detected names the rows that read it, to run by id to check their
records."""

from __future__ import annotations

from pathlib import Path

from aniso import api

ROOT = Path(__file__).resolve().parents[1]
ROW = """
- id: {id}
  source: {{kind: local, path: {path}}}
  modality: text
  granularity: subword
  architecture: transformer
  role: encoder
  family: bert
"""


def test_a_folder_that_rows_read_names_them_in_the_detected_line(clean_env, monkeypatch, tiny_bert_dir):
    monkeypatch.setattr("pytest.main", lambda *a, **k: 5)  # what runs after the detection is not this test's
    registry = clean_env / "cc.yaml"
    registry.write_text((ROOT / "models.yaml").read_text(encoding="utf-8")
                        + ROW.format(id="my-bert-a", path=tiny_bert_dir) + ROW.format(id="my-bert-b", path=tiny_bert_dir))
    said = []
    done = api.run_claims(Path(tiny_bert_dir), "G.token-nlp-anisotropic", registry=registry,
                          claims_dir=ROOT / "claims", say=said.append)
    assert done.model_id == Path(tiny_bert_dir).name and done.detected is not None  # measured as asked
    assert said[-1].startswith(f"{tiny_bert_dir} is not in the registry; detected modality: text"), said
    assert said[-1].endswith("; the rows my-bert-a, my-bert-b read this source: run them by id to check their records "
                             "(aniso run my-bert-a)"), said
