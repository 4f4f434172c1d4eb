"""A corpus file in a structured form (JSON Lines, CSV, JSON) is refused, naming the file, the form found and what a
corpus is, through the reader, the run's settings check and the API; plain prose with commas and braces is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import aniso
from aniso.common.settings import Settings
from aniso.inputs.text import CorpusError, corpus_paragraphs
from aniso.registry.locate import check_corpus

ROOT = Path(__file__).resolve().parents[2]
PARAGRAPHS = ["The tower is 324 metres tall, about the same height as an 81-storey building.",
              "Anisotropy of hidden states, measured layer by layer, grows with depth.",
              "During its construction, the Eiffel Tower surpassed the Washington Monument."]


def _jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(PARAGRAPHS)))
    return path


def _csv(path: Path) -> Path:
    path.write_text("id,label,text\n" + "".join(f'{i},wiki,"{t}"\n' for i, t in enumerate(PARAGRAPHS)))
    return path


@pytest.mark.parametrize("name, make, form", [
    ("texts.jsonl", _jsonl, "JSON Lines (its name ends in .jsonl)"),
    ("texts.csv", _csv, "CSV (its name ends in .csv)"),
    ("texts.txt", _jsonl, "JSON Lines (each of its first 3 non-blank lines is a JSON object)"),
    ("texts.json", lambda p: p.write_text(json.dumps([{"text": t} for t in PARAGRAPHS])) and p, "JSON"),
])
def test_a_structured_corpus_file_is_refused_naming_its_form(tmp_path, name, make, form):
    """A JSON Lines or CSV corpus was measured as plain text, braces, keys, ids and quotes included."""
    path = make(tmp_path / name)
    with pytest.raises(CorpusError) as err:
        corpus_paragraphs(path)
    msg = str(err.value)
    assert str(path) in msg and form in msg and "plain text, one paragraph per line" in msg and "\n" not in msg, msg
    with pytest.raises(ValueError, match=r"^setting corpus \(ANISO_CORPUS, --aniso-corpus\): corpus file .*" + name):
        check_corpus(Settings(corpus=str(path)))


def test_a_structured_corpus_given_as_inputs_is_refused_naming_inputs(tmp_path):
    path = _jsonl(tmp_path / "texts.jsonl")
    with pytest.raises(ValueError) as err:
        aniso.measure("all-MiniLM-L6-v2", inputs=str(path), registry=ROOT / "models.yaml")
    msg = str(err.value)
    assert msg.startswith("inputs: ") and str(path) in msg and "JSON Lines" in msg and "\n" not in msg, msg


def test_prose_with_commas_quotes_and_braces_is_plain_text(tmp_path):
    path = tmp_path / "prose.txt"
    path.write_text('0,wiki,"a line that looks like a record" is still prose, as here.\n'
                    '{A paragraph in braces, with commas} is prose too.\n'
                    '{"a": 1} begins this line, which goes on as words.\n')
    assert len(corpus_paragraphs(path)) == 3
