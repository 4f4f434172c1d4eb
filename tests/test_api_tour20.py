"""Tour 20 through the Python API: an in-memory model's ``name`` that is a registry id with blanks, a line end or
another case was taken (the results read as the registry row's); ``ClaimResults.report()`` returned another run's
report.html copied beside results.json; a LayerStats read back from a pickle was unequal to itself (NaN statistics);
a SentenceTransformer, a model on the meta device and ``settings={1: 2}`` ended in tracebacks of other libraries;
``claims=""`` ran every claim."""

from __future__ import annotations

import copy
import pickle

import pytest

import aniso
from aniso.api import ClaimResults
from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance, read_results, write_results

TEXTS = [" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.mark.parametrize("name, said", [(" all-MiniLM-L6-v2 ", "begins or ends with blanks"),
                                        ("all-MiniLM-L6-v2\n", "holds the control character '\\n'"),
                                        ("all-minilm-l6-v2", "is the id 'all-MiniLM-L6-v2' of a row, in another case")])
def test_an_in_memory_name_that_hides_a_registry_id_is_refused(tiny, clean_env, name, said):
    model, tok = tiny
    with pytest.raises(ValueError, match=r"^name: .*" + __import__("re").escape(said)):
        aniso.measure(model, TEXTS, tokenizer=tok, name=name, progress=False)


def test_a_layer_stats_equals_its_pickled_copy(tiny, clean_env):
    model, tok = tiny
    got = aniso.measure(model, TEXTS, tokenizer=tok, name="tiny-in-memory", statistics="first-order", progress=False)
    assert any(s.twonn != s.twonn for s in got.layers)  # NaN where not kept
    assert pickle.loads(pickle.dumps(got)) == got and copy.deepcopy(got) == got
    assert got != aniso.measure(model, TEXTS[:6], tokenizer=tok, name="tiny-in-memory", statistics="first-order",
                                progress=False)


def test_models_of_other_kinds_are_named(tiny, clean_env):
    import torch
    from transformers import BertConfig, BertModel

    with torch.device("meta"):
        empty = BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64))
    with pytest.raises(ValueError, match=r"^model: its weights are on the meta device \(not loaded: "):
        aniso.measure(empty, TEXTS, tokenizer=tiny[1], name="x", progress=False)
    fake = type("SentenceTransformer", (torch.nn.Module,), {"__module__": "sentence_transformers.SentenceTransformer"})()
    with pytest.raises(TypeError, match=r"^model: .*\(sentence-transformers\), whose forward pass is not a "
                                        r"transformers model's; give its transformers model \(model\[0\]\.auto_model\)"):
        aniso.measure(fake, TEXTS, tokenizer=tiny[1], name="x", progress=False)


def test_settings_keys_and_the_argument_n_inputs(clean_env):
    with pytest.raises(TypeError, match=r"^settings: the key 1 \(int\); setting names are str"):
        aniso.measure("all-MiniLM-L6-v2", TEXTS, settings={1: 2})
    with pytest.raises(ValueError, match=r"^settings: unknown setting 'n_inputs'; did you mean n_sequences \(text\)"):
        aniso.measure("all-MiniLM-L6-v2", TEXTS, settings={"n_inputs": 8})


def test_an_empty_claims_text_is_refused(clean_env):
    for call in (aniso.check, aniso.run_claims):
        with pytest.raises(ValueError, match=r"^claims: '' names no claim \(it would run every claim\)"):
            call("all-MiniLM-L6-v2", claims="")
        with pytest.raises(ValueError, match=r"^claims: .* is blank"):  # (blanks: named by the claims parser)
            call("all-MiniLM-L6-v2", claims="  ")


def test_the_report_beside_is_written_from_this_run(tmp_path):
    def run(name, value):
        path = tmp_path / name / "results.json"
        result = ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="§3.2", figure="Fig. 4",
                             statement="s", model_id=name, test=f"claims/x.py::t[{name}]", verdict="holds",
                             measured={"max_avg_cos": value},
                             uncertainty=Uncertainty(statistic="highest layer avg cos", value=value, low=value - 0.01,
                                                     high=value + 0.01, threshold=0.2, holds_if="<", holds_share=1.0,
                                                     fragile=False, n_boot=100))
        write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[result]))
        return path

    mine, other = run("run-of-mine", 0.1), run("run-of-another", 0.15)
    ClaimResults(other, read_results(other), 0, "run-of-another").report()
    mine.with_name("report.html").write_bytes(other.with_name("report.html").read_bytes())  # another run's, copied
    page = ClaimResults(mine, read_results(mine), 0, "run-of-mine").report()
    assert page == mine.with_name("report.html") and "run-of-mine" in page.read_text()
    assert "run-of-another" not in page.read_text()
