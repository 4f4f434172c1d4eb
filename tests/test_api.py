"""The Python API (aniso.measure / check / claims / models): tiny random models measured in memory and from a folder
against hidden states computed directly, the real all-MiniLM-L6-v2 (pip package) measured and checked, the
listings and the one-line errors (tests/test_examples.py runs the example notebook)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import aniso
from aniso import metrics
from tiny_gpt2 import tiny_gpt2

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
TEXTS = ["The tower is 324 metres tall, about the same height as an 81-storey building.",
         "Anisotropy of hidden states.",
         "During its construction, the Eiffel Tower surpassed the Washington Monument.",
         "The cat sat on the mat and looked at the rain."]
#: Enough text for a claim's minimum of vectors (64 tokens per layer for G.token-nlp-anisotropic).
CLAIM_TEXTS = TEXTS + ["A river runs through the old town, under seven stone bridges built in the twelfth century.",
                       "Researchers measured the average cosine similarity of hidden states in every layer."]


@pytest.fixture(autouse=True)
def _quiet_run(tmp_path_factory, monkeypatch):
    """One statistics cache for the module (check reads what measure wrote), reports in a temporary folder, the hub
    not probed (an unknown id fails at once)."""
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "api-cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path_factory.getbasetemp() / "api-reports"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANISO_PROGRESS", "0")


_tiny_gpt2 = tiny_gpt2


def test_import_aniso_stays_cheap():
    code = ("import sys, aniso; assert 'torch' not in sys.modules and 'pandas' not in sys.modules; "
            "assert callable(aniso.measure) and 'torch' not in sys.modules; print(sorted(aniso.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "measure" in out.stdout and "check" in out.stdout


def test_measure_an_in_memory_model_equals_the_direct_computation():
    """avg cos of every layer of a tiny random GPT-2 given in memory, against aniso.metrics.mean_cosine on its hidden
    states computed here, one text at a time (no padding at all)."""
    model, tok = _tiny_gpt2()
    model.train()  # measured in eval mode, left as it was
    stats = aniso.measure(model, TEXTS, tokenizer=tok, name="tiny-gpt2", progress=False)
    assert model.training
    frame = stats.to_frame()
    assert list(frame["layer"]) == ["0", "1", "2"] and len(frame) == 3
    # the layer's name is text; its position an int, to select and sort by (frame.layer == 2 is never true)
    assert list(frame["layer_index"]) == [0, 1, 2] and frame["layer_index"].dtype.kind == "i"
    for column in ("layer", "avg_cos", "drift_norm", "svd_anisotropy", "twonn", "q95", "isoscore", "count"):
        assert column in frame.columns
    model.eval()
    with torch.no_grad():
        per_text = [model(**tok(t, return_tensors="pt"), output_hidden_states=True).hidden_states for t in TEXTS]
    for i in range(3):
        h = torch.cat([hs[i][0] for hs in per_text]).double().numpy()
        assert frame["count"][i] == h.shape[0]
        assert frame["avg_cos"][i] == pytest.approx(metrics.mean_cosine(h), rel=1e-5, abs=1e-7)
        assert frame["drift_norm"][i] == pytest.approx(np.linalg.norm(h.mean(axis=0)), rel=1e-5)
    assert stats.model_id == "tiny-gpt2" and stats.inputs["n_sequences"] == len(TEXTS)
    assert stats.meta["cache"] == {"key": None, "hit": False}
    assert np.allclose(stats.series("avg_cos"), frame["avg_cos"])
    doc = stats.to_dict()
    json.dumps(doc)  # JSON-friendly
    assert doc["layer_names"] == ["0", "1", "2"] and doc["layers"][1]["mean_cosine"] == frame["avg_cos"][1]


def test_a_folder_and_the_same_model_in_memory_measure_the_same(tiny_bert_dir):
    """A local folder goes through detection (as `aniso run`) and the pipeline's cache; loaded in memory it gives
    the same numbers."""
    from transformers import AutoModel, AutoTokenizer

    from_folder = aniso.measure(tiny_bert_dir, ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9"], registry=REGISTRY,
                                progress=False).to_frame()
    in_memory = aniso.measure(AutoModel.from_pretrained(tiny_bert_dir), ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9"],
                              tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir), progress=False).to_frame()
    assert len(from_folder) == 3 and from_folder["count"].tolist() == [15, 15, 15]  # 9 words, [CLS] and [SEP] x 3
    assert np.allclose(from_folder["avg_cos"], in_memory["avg_cos"], rtol=1e-6)
    assert np.allclose(from_folder["svd_anisotropy"], in_memory["svd_anisotropy"], rtol=1e-6)


def test_measure_and_check_all_minilm_agree(capsys):
    """The real all-MiniLM-L6-v2 (a pip package): measure on a few texts, then check G.token-nlp-anisotropic on the
    same texts; the claim's deciding value is max over layers of (avg cos - q95(d)) of what measure gave."""
    stats = aniso.measure("all-MiniLM-L6-v2", CLAIM_TEXTS, max_length=32, registry=REGISTRY, progress=False)
    frame = stats.to_frame()
    assert len(frame) == 7 and frame["dim"].eq(384).all()
    assert stats.meta["cache"]["hit"] is False and stats.inputs["label"] == "6 texts given to aniso.measure"
    assert frame["avg_cos"].max() > frame["q95"].max()  # anisotropic (G §2)
    verdicts = aniso.check("all-MiniLM-L6-v2", claims="G.token-nlp-anisotropic", inputs=CLAIM_TEXTS,
                           settings={"max_length": 32, "n_bootstrap": 50}, registry=REGISTRY)
    assert "aniso: claim verdicts" not in capsys.readouterr().out  # quiet unless verbose: the object holds them
    table = verdicts.to_frame()
    assert verdicts.exit_code == 0 and list(table["claim"]) == ["G.token-nlp-anisotropic"]
    row = table.iloc[0]
    assert row["model"] == "all-MiniLM-L6-v2" and row["verdict"] == "holds" and row["threshold"] == 0.0
    assert row["value"] == pytest.approx((frame["avg_cos"] - frame["q95"]).max(), rel=1e-5)
    assert row["ci_low"] <= row["value"] <= row["ci_high"] and not math.isnan(row["ci_low"])
    assert verdicts.path.name == "results.json" and verdicts.path.is_file()
    assert verdicts.report() == verdicts.path.with_name("report.html")  # the run wrote it
    out = verdicts.report(verdicts.path.parent / "again.html")
    assert out.stat().st_size > 1000 and "G.token-nlp-anisotropic" in out.read_text()


def test_claims_and_models_list_the_catalogue_and_the_registry():
    from aniso.registry.catalog import CLAIMS
    from aniso.registry.entries import load_registry

    table = aniso.claims()
    assert table["claim"].tolist() == list(CLAIMS) and table["executable"].dtype == bool
    assert aniso.claims(as_frame=False)[0]["claim"] == next(iter(CLAIMS))
    rows = aniso.models(REGISTRY)
    assert rows["model"].tolist() == [e.id for e in load_registry(REGISTRY)]
    minilm = rows.set_index("model").loc["all-MiniLM-L6-v2"]
    assert minilm["source"] == "package" and minilm["modality"] == "text" and minilm["weights_here"] == "here (package)"
    assert (minilm["stands_for"], minilm["relation"]) == ("bert-base-uncased", "relative")
    assert rows.set_index("model").loc["gpt2", ["stands_for", "relation"]].isna().all()


@pytest.mark.parametrize("call, names", [
    (lambda: aniso.measure("no-such-model-xyz", TEXTS, registry=REGISTRY), "model 'no-such-model-xyz'"),
    (lambda: aniso.measure("all-MiniLM-L6", TEXTS, registry=REGISTRY), "did you mean 'all-MiniLM-L6-v2'"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", [], registry=REGISTRY), "inputs: an empty list"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", ["fine", 3], registry=REGISTRY), "inputs[1]"),
    (lambda: aniso.measure("vit-base-patch16-224", TEXTS, registry=REGISTRY), "inputs: a list of texts, but"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", str(ROOT / "tests"), registry=REGISTRY), "is a folder, but"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", "just one sentence", registry=REGISTRY), "is no file or folder"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", TEXTS, statistics=["avg-cos"], registry=REGISTRY), "statistics:"),
    (lambda: aniso.measure("all-MiniLM-L6-v2", TEXTS, settings={"n_sequence": 3}, registry=REGISTRY),
     "did you mean 'n_sequences'"),
    (lambda: aniso.measure(_tiny_gpt2()[0], TEXTS), "tokenizer:"),
    (lambda: aniso.measure(object(), TEXTS), "model: a object"),
    (lambda: aniso.check("all-MiniLM-L6-v2", claims="G.token-nlp", registry=REGISTRY), "claims: 'G.token-nlp'"),
    (lambda: aniso.check("all-MiniLM-L6-v2", settings={"models": "small"}, registry=REGISTRY), "settings: 'models'"),
], ids=["unknown-id", "close-id", "empty-list", "not-a-text", "texts-to-vision", "folder-to-text", "a-bare-string",
        "statistic", "setting", "no-tokenizer", "not-a-model", "claim", "check-setting"])
def test_bad_input_gives_one_line_naming_the_argument(call, names):
    """A ValueError naming the argument; a TypeError where it is of the wrong type (a number among the texts, an
    object that is no model)."""
    wrong_type = names in ("inputs[1]", "model: a object")
    with pytest.raises(TypeError if wrong_type else ValueError) as err:
        call()
    assert names in str(err.value) and "\n" not in str(err.value)


def test_an_in_memory_model_given_to_check_is_a_type_error_in_one_line_saying_to_save_it():
    with pytest.raises(TypeError) as err:
        aniso.check(_tiny_gpt2()[0], registry=REGISTRY)
    assert str(err.value).startswith("model: GPT2Model(") and "save_pretrained" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("statistics", [5, [5], None, b"second-order", {"second-order": True}],
                         ids=["int", "list-of-int", "none", "bytes", "dict"])
def test_statistics_of_the_wrong_type_is_a_type_error_naming_the_argument(statistics):
    """`aniso.measure(M, texts, statistics=5)` raised a bare "'int' object is not iterable"; the error names the
    argument, what it got and what it takes."""
    with pytest.raises(TypeError) as err:
        aniso.measure("all-MiniLM-L6-v2", TEXTS, statistics=statistics, registry=REGISTRY)
    message = str(err.value)
    assert message.startswith(f"statistics: {statistics!r:.40} ({type(statistics).__name__}); give a statistic's "
                              "name, a list of names or 'all' (names: ") and "second-order" in message, message
    assert "\n" not in message


@pytest.mark.parametrize("fault", ["photograph", "latin-1"])
@pytest.mark.parametrize("call", ["measure", "check"])
def test_a_file_given_as_inputs_that_is_no_text_names_inputs(tmp_path, fault, call):
    """`aniso.measure("all-MiniLM-L6-v2", inputs="photo.jpg")` named "setting corpus (ANISO_CORPUS,
    --aniso-corpus)", a setting the caller never gave; the line names the argument ``inputs``."""
    path = tmp_path / ("photo.jpg" if fault == "photograph" else "latin1.txt")
    path.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(range(256)) * 4 if fault == "photograph" else
                     "Un café au bord de la rivière.\nUne autre phrase, à côté.\n".encode("latin-1"))
    with pytest.raises(ValueError) as err:
        if call == "measure":
            aniso.measure("all-MiniLM-L6-v2", inputs=str(path), registry=REGISTRY)
        else:
            aniso.check("all-MiniLM-L6-v2", claims="G.token-nlp-anisotropic", inputs=str(path), registry=REGISTRY)
    message = str(err.value)
    assert message.startswith("inputs: ") and str(path) in message and "\n" not in message, message
    assert "setting corpus" not in message and "ANISO_CORPUS" not in message, message


def _tiny_bert(**config):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(**{"vocab_size": 300, "hidden_size": 32, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "intermediate_size": 64,
                                   "max_position_embeddings": 64} | config)).eval()


IN_MEMORY_TEXTS = ["The tower is 324 metres tall, about the same height as an 81-storey building.",
                   "Anisotropy of hidden states.", "The cat sat on the mat and looked at the rain."]


def test_an_in_memory_model_with_a_tokenizer_far_smaller_than_its_vocabulary_is_refused():
    """As a model folder whose tokenizer covers under 90% of the embedding's rows is: one line naming tokenizer."""
    from aniso.extract.modalities import _subword_tokenizer

    with pytest.raises(ValueError) as info:
        aniso.measure(_tiny_bert(vocab_size=30522), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                      name="b")
    line = str(info.value)
    assert "\n" not in line and line.startswith("tokenizer: ") and "holds 300 tokens" in line and "30522" in line
    assert aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                         name="b").to_frame().shape[0] == 3


def test_a_function_given_as_tokenizer_is_a_type_error_naming_tokenizer():
    from aniso.extract.modalities import _subword_tokenizer

    tok = _subword_tokenizer(300)
    with pytest.raises(TypeError, match=r"^tokenizer: a function; give the model's transformers tokenizer"):
        aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=lambda t, **k: tok(t, **k), progress=False, name="b")


def test_an_in_memory_config_with_more_positions_than_the_weights_names_the_field():
    from aniso.extract.modalities import _subword_tokenizer

    model = _tiny_bert(max_position_embeddings=8)
    model.config.max_position_embeddings = 512
    with pytest.raises(ValueError) as info:
        aniso.measure(model, IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False, name="b")
    line = str(info.value)
    assert "\n" not in line and line.startswith("model: the config max_position_embeddings 512, but "
                                                "embeddings.position_embeddings.weight is 8 × 32 in the weights"), line
    smaller = _tiny_bert()
    smaller.config.vocab_size = 200  # a config that builds less than the weights: the weights decide
    assert aniso.measure(smaller, IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                         name="b").to_frame().shape[0] == 3


def _one_run(folder: Path) -> Path:
    from aniso.judge.results import ClaimResult, ResultsDocument, Uncertainty, provenance, write_results

    path = folder / "run" / "results.json"
    result = ClaimResult(claim_id="G.cnn-mostly-isotropic", paper="G", section="§3.2", figure="Fig. 4", statement="s",
                         model_id="m", test="claims/x.py::t[m]", verdict="holds", measured={"max_avg_cos": 0.1},
                         uncertainty=Uncertainty(statistic="highest layer avg cos", value=0.1, low=0.09, high=0.11,
                                                 threshold=0.2, holds_if="<", holds_share=1.0, fragile=False,
                                                 n_boot=100))
    write_results(path, ResultsDocument(provenance=provenance(folder, {}, None), results=[result]))
    return path


def test_claim_results_take_a_str_path_and_refuse_what_is_no_path(tmp_path):
    from aniso.judge.results import read_results

    path = _one_run(tmp_path)
    made = aniso.ClaimResults(str(path), read_results(path), 0, "m")
    assert made.path == path and made.report() == path.with_name("report.html")
    with pytest.raises(TypeError, match=r"^path: 5 \(int\); give the run's results.json"):
        aniso.ClaimResults(5, read_results(path), 0, "m")


def test_claim_results_hand_out_copies_of_the_results(tmp_path):
    """Changing a result handed out changes neither the frame nor the report: one answer."""
    from aniso.judge.results import read_results

    path = _one_run(tmp_path)
    made = aniso.ClaimResults(path, read_results(path), 0, "m")
    made.results[0].verdict = "does not hold"
    assert made.results[0].verdict == "holds" and made.to_frame()["verdict"].tolist() == ["holds"]


def test_a_report_path_of_path_empty_says_it_is_the_working_folder(tmp_path, monkeypatch):
    from aniso.judge.results import read_results

    path = _one_run(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^path: \. \(the working folder; pathlib.Path\(''\) is Path\('\.'\)\) is a "
                                         r"folder; name the HTML file to write"):
        aniso.ClaimResults(path, read_results(path), 0, "m").report(Path(""))


def test_a_report_path_ending_in_a_slash_names_a_folder(tmp_path):
    """``ClaimResults.report('out/new.html/')`` wrote the file out/new.html, where ``aniso report --out
    out/new.html/`` refuses it as a folder."""
    from aniso.judge.results import read_results

    path = _one_run(tmp_path)
    named = str(tmp_path / "out" / "new.html") + "/"
    with pytest.raises(ValueError, match=r"^path: .*new\.html names a folder; name the HTML file to write") as info:
        aniso.ClaimResults(path, read_results(path), 0, "m").report(named)
    assert "\n" not in str(info.value) and not (tmp_path / "out" / "new.html").exists()


def test_a_twonn_left_nan_for_too_few_vectors_is_said():
    """As `aniso stats` prints it below its table: a warning per reason, kept in meta["nan_columns"]."""
    from aniso.extract.modalities import _subword_tokenizer

    with pytest.warns(RuntimeWarning, match=r"^b: nan: TwoNN of layer\(s\) 0-2: \d+ vector\(s\) in the reservoir, "
                                            r"fewer than the 128 TwoNN needs"):
        stats = aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                              name="b")
    assert np.isnan(stats.series("twonn")).all() and "TwoNN of layer(s) 0-2" in stats.meta["nan_columns"][0]


def test_a_twonn_left_out_of_the_statistics_asked_is_said_not_computed():
    """statistics='first-order' leaves TwoNN out: it was said to have "0 vector(s) in the reservoir ... give more
    inputs", which would not help; the line says it was not computed and which statistics leave it out. It is kept
    in meta, not warned: the caller asked for it, and under warnings-as-errors the warning lost the measurement."""
    import warnings

    from aniso.extract.modalities import _subword_tokenizer

    for asked, named in (("first-order", "statistics='first-order' leaves"),
                         (["first-order", "attention-sink"], "statistics=['attention-sink', 'first-order'] leave"),
                         (["final-norm"], "statistics=['final-norm', 'first-order'] leave")):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            stats = aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                                  name="b", statistics=asked)
        lines = [str(w.message) for w in said if issubclass(w.category, RuntimeWarning) and "nan:" in str(w.message)]
        expected = (f"nan: layer(s) 0-2: SVD anisotropy, TwoNN and IsoScore not computed: {named} out "
                    "'second-order' (add 'second-order' to statistics to compute them)")
        assert lines == [], lines
        assert stats.meta["nan_columns"] == [expected]
        assert np.isnan(stats.series("twonn")).all()


def test_a_series_is_found_by_its_to_dict_key_too():
    from aniso.extract.modalities import _subword_tokenizer

    stats = aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False, name="b")
    assert stats.to_dict()["layers"][0]["mean_cosine"] == pytest.approx(stats.series("avg_cos")[0])
    assert np.array_equal(stats.series("mean_cosine"), stats.series("avg_cos"))
    with pytest.raises(ValueError, match=r"^column 'avg_cosine' is not one of .*; did you mean 'avg_cos'\?"):
        stats.series("avg_cosine")


def test_series_of_a_list_names_column():
    """LayerStats.series(['avg_cos']) was a bare "unhashable type: 'list'"."""
    from aniso.api import LayerStats

    stats = LayerStats("m", ("0",), (), {}, {}, {}, None)
    for column, kind in ((["avg_cos"], "list"), (("avg_cos",), "tuple"), (None, "NoneType")):
        with pytest.raises(TypeError, match=rf"^column: .* \({kind}\); give one column name, a str, e\.g\. 'avg_cos' "
                                            r"\(to_frame\(\) has every column\)$"):
            stats.series(column)


def test_statistics_left_out_on_request_survive_warnings_as_errors():
    """Under `warnings.simplefilter("error")` the note on the statistics the caller left out raised after the
    measurement, and the LayerStats was lost."""
    import warnings

    from aniso.extract.modalities import _subword_tokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        stats = aniso.measure(_tiny_bert(), IN_MEMORY_TEXTS, tokenizer=_subword_tokenizer(300), progress=False,
                              name="b", statistics="first-order")
    assert stats.meta["nan_columns"] and not np.isnan(stats.series("avg_cos")).any()
