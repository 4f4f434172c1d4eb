"""Bad input through `aniso run` (and `aniso report`), not only through the library: one line on standard error
naming the setting, file or field, exit code 2, and never a pytest failure dump. Also the inputs a run measures on
in spite of a bad file beside them (a recording with NaN samples) or of a short corpus (fewer paragraphs than
asked for), which it names. Each case is a row of docs/bad-input.md."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = str(ROOT / "models.yaml")


def _one_line(capsys) -> str:
    """Standard error of a command that must have stopped with one line and printed no test output."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso "), err[-3000:]
    assert "Traceback" not in out + err and "FAILED" not in out and "ERROR" not in out, out[-3000:]
    return lines[0]


def _corpus(tmp_path: Path, case: str) -> Path:
    path = tmp_path / f"{case}.txt"
    text = "The first paragraph of the corpus.\nA second paragraph, in another line.\n"
    if case == "missing":
        return path
    if case == "blank":
        path.write_text("\n   \n\n")
    elif case == "latin-1":
        path.write_bytes(text.replace("first", "café").encode("latin-1"))
    elif case == "utf-16":
        path.write_text(text, encoding="utf-16")
    elif case == "utf-16-le":  # no byte-order mark: the letters alternate with NUL bytes
        path.write_bytes(text.encode("utf-16-le"))
    return path


@pytest.mark.parametrize("case, message", [("missing", "does not exist"), ("blank", "has 0 paragraph(s)"),
                                           ("latin-1", "is not UTF-8 text"), ("utf-16", "it is UTF-16"),
                                           ("utf-16-le", "it is UTF-16")])
def test_a_corpus_that_is_missing_blank_or_not_utf8_stops_aniso_run_in_one_line(clean_env, monkeypatch, capsys, case,
                                                                                  message):
    path = _corpus(clean_env, case)
    monkeypatch.setenv("ANISO_CORPUS", str(path))
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    line = _one_line(capsys)
    assert "ANISO_CORPUS" in line and str(path) in line and message in line, line


@pytest.mark.parametrize("variable, value, message", [
    ("ANISO_SEED", "-1", "setting seed (ANISO_SEED, --aniso-seed) must be an integer from 0 to 4294967295, got -1"),
    ("ANISO_SEED", "1180591620717411303424", "setting seed (ANISO_SEED, --aniso-seed) must be an integer from 0 to "
     "4294967295, got 1180591620717411303424"),
    ("ANISO_NO_CACHE", "ture", "ANISO_NO_CACHE='ture' is neither true"),
    ("ANISO_N_SEQUENCES", "16.5", "ANISO_N_SEQUENCES='16.5' is not an integer"),
    ("ANISO_RESERVOIR_SIZE", "100000000000", "setting reservoir_size (ANISO_RESERVOIR_SIZE, --aniso-reservoir-size) "
     "must be an integer from 128 to 2147483647, got 100000000000"),
    ("ANISO_RESERVOIR_SIZE", "2000000000", "setting reservoir_size (ANISO_RESERVOIR_SIZE, --aniso-reservoir-size) "
     "must be at most"),  # within the bound, but not within this machine's memory at width 8192
    ("ANISO_SECOND_ORDER_MAX_DIM", "1", "setting second_order_max_dim (ANISO_SECOND_ORDER_MAX_DIM, "
     "--aniso-second-order-max-dim) must be an integer from 2 to 131072, got 1"),
    ("ANISO_MODELS", " , ", "setting models (ANISO_MODELS, --aniso-models) must name a model set"),
    ("ANISO_DEVICE", "gpu", "setting device (ANISO_DEVICE, --aniso-device): device 'gpu' is not a torch device; use auto, cpu"),
    ("ANISO_MAX_LENGTH", "0", "setting max_length (ANISO_MAX_LENGTH, --aniso-max-length) must be an integer from 1"),
    ("ANISO_PROFILE", "fast", "setting profile (ANISO_PROFILE, --aniso-profile): profile 'fast' is not one of"),
])
def test_a_bad_setting_stops_aniso_run_in_one_line(clean_env, monkeypatch, capsys, variable, value, message):
    monkeypatch.setenv(variable, value)
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    assert message in _one_line(capsys)


@pytest.mark.parametrize("option, value, message", [
    ("--aniso-n-sequences", "16.5", "option --aniso-n-sequences='16.5' is not an integer"),
    ("--aniso-seed", "-1", "setting seed (ANISO_SEED, --aniso-seed) must be an integer from 0 to 4294967295, got -1"),
    ("--aniso-batch-size", "99999999", "setting batch_size (ANISO_BATCH_SIZE, --aniso-batch-size) must be an "
     "integer from 1 to 65536, got 99999999"),
])
def test_a_bad_pytest_option_after_the_double_dash_stops_aniso_run_in_one_line(clean_env, capsys, option, value,
                                                                              message):
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY, "--", option, value]) == 2
    assert message in _one_line(capsys)


@pytest.mark.parametrize("extra, message", [
    (["--no-such-option"], "the pytest arguments after `--`: unrecognized arguments: --no-such-option"),
    (["--aniso-seed"], "argument --aniso-seed: expected one argument"),
])
def test_a_pytest_argument_pytest_does_not_take_is_one_line_naming_it(clean_env, capsys, extra, message):
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY, "--", *extra]) == 2
    line = _one_line(capsys)
    assert message in line and "--aniso-models" not in line, line


def test_a_claims_folder_without_claim_tests_is_one_line_naming_it(clean_env, capsys):
    empty = clean_env / "empty"
    empty.mkdir()
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY, "--claims-dir", str(empty)]) == 2
    line = _one_line(capsys)
    assert f"claims folder {empty}: no claim tests in it" in line and "--aniso-models" not in line, line


@pytest.mark.parametrize("claims, message", [
    (",", "claims: ',' names no claim id or prefix"),
    ("Z.", "claims: no claim id starts with 'Z.'"),
    ("Q.", "claims: no claim id starts with 'Q.'"),
    ("G", "claims: 'G' is no claim id; did you mean 'G.'?"),
    ("G.token-nlp-anisotropc", "did you mean 'G.token-nlp-anisotropic'?"),
])
def test_a_claims_filter_that_names_nothing_stops_aniso_run_in_one_line(clean_env, capsys, claims, message):
    """The prefix is blamed, not the model; no run that deselects every claim and exits 3."""
    assert main(["run", "all-MiniLM-L6-v2", "--claims", claims, "--registry", REGISTRY]) == 2
    line = _one_line(capsys)
    assert message in line and "all-MiniLM" not in line, line


def test_the_same_claims_filter_is_refused_by_every_door(clean_env):
    """aniso.check and pytest --aniso-claims parse the filter as aniso run does (aniso.registry.selection)."""
    import aniso
    from aniso.registry.selection import parse_claims

    for claims in ("Q.", ","):
        with pytest.raises(ValueError, match="^claims: "):
            aniso.check("all-MiniLM-L6-v2", claims=claims, registry=REGISTRY)
        with pytest.raises(ValueError, match="^claims: "):
            parse_claims(claims)
    assert parse_claims("G.").selects("G.token-nlp-anisotropic") and not parse_claims("G.").selects("R.x")
    assert parse_claims("R.decoder*").selected() == ["R.decoder-bell-profile", "R.decoder-anisotropy-grows"]
    assert parse_claims("").everything and parse_claims(None).selects("X.attention-sink")


def test_a_string_where_a_count_is_expected_is_one_line_naming_the_argument():
    import aniso

    with pytest.raises(ValueError, match=r"^n_inputs: '16' \(str\); give an integer >= 1$"):
        aniso.measure("all-MiniLM-L6-v2", ["a text", "another text"], n_inputs="16", registry=REGISTRY)
    with pytest.raises(ValueError, match=r"^setting n_sequences .*must be an integer from 1 to 1000000000, got '16'$"):
        aniso.measure("all-MiniLM-L6-v2", ["a text"], settings={"n_sequences": "16"}, registry=REGISTRY)


@pytest.mark.parametrize("kwargs, message", [
    ({"device": 0}, r"^setting device \(ANISO_DEVICE, --aniso-device\) must be a torch device name: auto, cpu, cuda, "
                    r"cuda:N or mps, got 0$"),
    ({"settings": {"corpus": 5}}, r"^setting corpus \(ANISO_CORPUS, --aniso-corpus\) must be a path \(str or "
                                  r"os.PathLike\) or None, got 5$"),
    ({"settings": {"seed": 2**70}}, r"^setting seed .* must be an integer from 0 to 4294967295, got 1180591620717411303424$"),
    ({"settings": {"seed": True}}, r"^setting seed .* must be an integer from 0 to 4294967295, got True \(bool\)$"),
    ({"settings": {"no_cache": "yes"}}, r"^setting no_cache .* must be True or False \(a bool\), got 'yes' \(str\): "
                                        r"words \(true/false, 1/0, yes/no, on/off\) are read from the variable "
                                        r"ANISO_NO_CACHE only$"),
    ({"settings": {"models": " , "}}, r"^setting models .* must name a model set"),
    ({"settings": {"second_order_max_dim": 1}}, r"^setting second_order_max_dim .* from 2 to 131072, got 1$"),
    ({"settings": {"reservoir_size": 10**11}}, r"^setting reservoir_size .* got 100000000000$"),
])
def test_a_setting_of_the_wrong_type_or_out_of_bounds_is_one_line_through_the_api(kwargs, message, tmp_path):
    import aniso

    for error in (ValueError, TypeError):  # a SettingError is both
        with pytest.raises(error, match=message):
            aniso.measure("all-MiniLM-L6-v2", ["a text"], registry=REGISTRY, **kwargs)
    with pytest.raises(ValueError, match=message):
        aniso.check("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=REGISTRY,
                    settings=kwargs.get("settings", {"device": kwargs.get("device")}))


def test_a_switch_setting_given_as_a_word_in_python_asks_for_a_bool():
    """settings={'no_cache': 'false'} was refused with "must be true or false, got 'false'": the value refused was
    the one the message asked for. In Python a switch setting is a bool; the words are the variable's."""
    import aniso

    for value, shown in (("false", r"'false' \(str\): words \(true/false, 1/0, yes/no, on/off\) are read from the "
                                   r"variable ANISO_NO_CACHE only$"),
                         (0, r"0 \(int\)$")):
        with pytest.raises(ValueError, match=r"^setting no_cache \(ANISO_NO_CACHE, --aniso-no-cache\) must be True or "
                                             rf"False \(a bool\), got {shown}") as info:
            aniso.measure("all-MiniLM-L6-v2", ["a text"], registry=REGISTRY, settings={"no_cache": value})
        assert "true or false" not in str(info.value) and "\n" not in str(info.value)


def test_settings_that_are_no_mapping_and_claims_that_are_no_text_are_one_line_through_the_api():
    import aniso

    with pytest.raises(TypeError, match=r"^settings: \[1\] \(list\); give a dict of setting names and values"):
        aniso.measure("all-MiniLM-L6-v2", ["a text"], registry=REGISTRY, settings=[1])
    with pytest.raises(TypeError, match=r"^claims: 5 \(int\); give claim ids or prefixes as a comma-separated string"):
        aniso.check("all-MiniLM-L6-v2", 5, registry=REGISTRY)
    with pytest.raises(ValueError, match=r"^claims: 'G.nope' is no claim id"):  # a list is read as its items
        aniso.check("all-MiniLM-L6-v2", ["G.token-nlp-anisotropic", "G.nope"], registry=REGISTRY)


def test_settings_that_are_no_mapping_are_one_line_for_an_in_memory_model_too():
    """The registry named in settings= was read before settings= was checked: an AttributeError ('no attribute
    get') for a Settings object, a namespace, a list of pairs or a str."""
    import types

    from transformers import BertConfig, BertModel

    import aniso
    from aniso.common.settings import Settings

    model = BertModel(BertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=16)).eval()
    for settings, kind in ((types.SimpleNamespace(seed=3), r"types\.SimpleNamespace"), ([("seed", 3)], "list"),
                           ("seed=3", "str")):
        with pytest.raises(TypeError, match=rf"^settings: .* \({kind}\); give a dict of setting names and values"):
            aniso.measure(model, ["a text", "another text"], settings=settings, progress=False)
    with pytest.raises(TypeError, match=r"^settings: a Settings object \(aniso\.common\.settings\.Settings\)"):
        aniso.measure(model, ["a text", "another text"], settings=Settings(seed=5), progress=False)


def test_a_settings_object_is_named_by_its_import_path_and_the_dict_to_give():
    """``Settings`` (documented under docs/api.md's Settings) is the plan a run builds, not the API's argument: one
    given is refused in one line naming its real import path and the dict to give, for a registry id and in check."""
    import aniso
    from aniso.common.settings import Settings

    said = (r"^settings: a Settings object \(aniso\.common\.settings\.Settings\), the plan a run builds from "
            r"settings by name; give a dict of the settings to change, e\.g\. \{'seed': 1\} \(see "
            r"aniso\.common\.settings\.SETTING_HELP\)$")
    with pytest.raises(TypeError, match=said):
        aniso.measure("all-MiniLM-L6-v2", ["a text"], registry=REGISTRY, settings=Settings(seed=1))
    with pytest.raises(TypeError, match=said):
        aniso.check("all-MiniLM-L6-v2", registry=REGISTRY, settings=Settings(seed=1))
    assert not hasattr(aniso, "Settings")  # the name the message gave before, which no import finds


def test_a_path_setting_takes_a_pathlib_path(tmp_path):
    from aniso.common.settings import Settings

    assert Settings(corpus=tmp_path / "c.txt", device="cpu").corpus == str(tmp_path / "c.txt")


def _results_file(tmp_path: Path) -> Path:
    from aniso.judge.results import ResultsDocument, provenance, write_results

    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[]))
    return path


def test_report_out_naming_a_folder_is_one_line(tmp_path, capsys):
    results = _results_file(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(["report", str(results), "--out", str(folder)]) == 2
    line = _one_line(capsys)
    assert f"--out {folder} is a folder" in line and "report.html" in line
    assert main(["report", str(results), "--out", str(tmp_path / "nowhere" / "deeper" / "r.html")]) == 0
    capsys.readouterr()


def _tiny_registry(tmp_path: Path, tiny_bert_dir: Path) -> Path:
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: tiny\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n")
    return reg


TINY_RUN = ["--claims", "G.token-nlp-anisotropic", "--claims-dir", str(ROOT / "claims")]
TINY_SIZES = ["--", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"]


def test_ctrl_c_while_the_report_is_written_is_one_line_and_leaves_no_half_report(clean_env, tiny_bert_dir,
                                                                                 monkeypatch, capsys):
    """A real `aniso run` whose report writing is interrupted (Ctrl-C): exit 130, one line on standard error saying
    what happened and that the statistics are cached, and no report folder holding results without their report."""
    import aniso.report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    monkeypatch.setattr(aniso.report, "write_html_report", interrupted)
    code = main(["run", "tiny", "--registry", str(_tiny_registry(clean_env, tiny_bert_dir)), *TINY_RUN, *TINY_SIZES,
                 "--aniso-n-sequences", "8"])
    out, err = capsys.readouterr()
    assert code == 130, out[-3000:] + err[-3000:]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted while writing the report" in lines[0], err
    assert str(clean_env / "cache") in lines[0] and "Traceback" not in out + err
    assert not list((clean_env / "reports").glob("run-*"))


def test_a_corpus_of_too_few_tokens_for_the_claim_is_refused_with_the_count(clean_env, tiny_bert_dir, monkeypatch,
                                                                           capsys):
    """2 short paragraphs where 16 are asked for: fewer tokens than the claim is decided on (``Claim.min_vectors``),
    so the model is refused for it in one line with the count and the paragraphs given of those asked, never
    "holds" on a handful of vectors; a corpus of as few paragraphs that are long enough is measured and says 2 of
    16."""
    from aniso.registry.catalog import CLAIMS

    corpus = clean_env / "two.txt"
    corpus.write_text("w1 w2 w3 w4 w5 w6 w7\nw8 w9 w10 w11 w12 w13\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    registry = str(_tiny_registry(clean_env, tiny_bert_dir))
    code = main(["run", "tiny", "--registry", registry, *TINY_RUN, *TINY_SIZES, "--aniso-n-sequences", "16"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    (refused,) = [line for line in err.splitlines() if "refused:" in line]
    needed = CLAIMS["G.token-nlp-anisotropic"].min_vectors
    assert re.search(rf"tiny: G.token-nlp-anisotropic is decided on at least {needed} tokens per layer; its inputs "
                     r"gave \d+ from 2 input\(s\) \(.*only 2 paragraphs, 16 requested", refused), refused
    results = json.loads(next((clean_env / "reports").glob("run-*/results.json")).read_text())["results"]
    assert [r["verdict"] for r in results] == ["skipped"], results

    corpus.write_text(" ".join(f"w{i % 40}" for i in range(60)) + "\n" + " ".join(f"w{(i * 7) % 40}" for i in range(60))
                      + "\n")
    code = main(["run", "tiny", "--registry", registry, *TINY_RUN, "--", "--aniso-max-length", "64",
                 "--aniso-n-bootstrap", "0", "--aniso-n-sequences", "16"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out[-3000:] + err[-3000:]
    assert "only 2 paragraphs, 16 requested" in out
    written = sorted((clean_env / "reports").glob("run-*/results.json"))[-1]
    result = json.loads(written.read_text())["results"][0]
    assert "only 2 paragraphs, 16 requested" in result["inputs_label"] and result["n_vectors"] >= needed, result


def test_a_recording_with_nan_samples_is_skipped_and_named_and_the_model_measured(clean_env, monkeypatch, capsys):
    """`aniso run whisper-tiny.en` on a folder where one WAV holds NaN samples: that file is skipped with its name
    and the reason, as broken files are, and the model is measured on the others."""
    import soundfile

    folder = clean_env / "speech"
    folder.mkdir()
    t = np.arange(16_000) / 16_000
    for i, f in enumerate((180.0, 260.0)):
        soundfile.write(folder / f"tone{i}.wav", (0.3 * np.sin(2 * np.pi * f * t)).astype(np.float32), 16_000,
                        subtype="FLOAT")
    bad = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    bad[5_000:5_010] = np.nan
    soundfile.write(folder / "nan.wav", bad, 16_000, subtype="FLOAT")
    monkeypatch.setenv("ANISO_SPEECH_DIR", str(folder))
    code = main(["run", "whisper-tiny.en", "--claims", "G.speech-all-layers-0.2", "--registry", REGISTRY, "--",
                 "--aniso-n-clips", "3", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out[-3000:] + err[-3000:]
    results = json.loads(next((clean_env / "reports").glob("run-*/results.json")).read_text())
    (speech,) = [d for d in results["provenance"]["inputs"] if d.get("modality") == "speech"]
    assert speech["n_items"] == 2 and set(speech["skipped"]) == {"nan.wav"}
    assert "10 NaN or infinite sample(s)" in speech["skipped"]["nan.wav"]
    assert results["results"][0]["verdict"] not in ("skipped", "error"), results["results"][0]


def _edited_results(tmp_path: Path, change) -> Path:
    """A results file with one result, edited by ``change`` and its digest made to match again (the consistency
    checks, not the digest, must find what is wrong)."""
    from aniso.judge.results import ClaimResult, ResultsDocument, content_digest, provenance, write_results

    path = tmp_path / "edited" / "results.json"
    result = ClaimResult(claim_id="G.token-nlp-anisotropic", paper="G", section="§3", figure="", statement="s",
                         model_id="m", test="claims/t.py::t[m]", verdict="holds")
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=[result]))
    data = json.loads(path.read_text())
    change(data)
    data["digest"] = content_digest(data)
    path.write_text(json.dumps(data))
    return path


def test_report_refuses_an_unknown_verdict_and_diff_a_result_listed_twice(tmp_path, capsys):
    maybe = _edited_results(tmp_path, lambda d: d["results"][0].update(verdict="maybe"))
    assert main(["report", str(maybe)]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso report: ") and "verdict 'maybe' is none of" in line, line
    assert not maybe.with_name("report.html").exists()
    twice = _edited_results(tmp_path, lambda d: d["results"].append(dict(d["results"][0], verdict="does not hold")))
    good = _results_file(tmp_path)
    assert main(["diff", str(good), str(twice)]) == 2
    line = _one_line(capsys)
    assert line.startswith("aniso diff: ") and "listed twice" in line and str(twice) in line, line
    assert main(["record", str(twice), "--registry", REGISTRY, "--dry-run"]) == 2
    assert "listed twice" in _one_line(capsys)


def test_a_hand_edited_results_file_is_refused_by_report_diff_and_record(tmp_path, capsys):
    path = _edited_results(tmp_path, lambda d: None)
    path.write_text(path.read_text().replace('"holds"', '"does not hold"'))
    for argv in (["report", str(path)], ["diff", str(path), str(path)], ["record", str(path), "--registry", REGISTRY]):
        assert main(argv) == 2
        assert "does not match the digest" in _one_line(capsys)


def _broken_bert(source: Path, target: Path, fault: str) -> Path:
    """A copy of the tiny BERT of ``source`` whose weights are NaN, or whose embedding (and config vocab_size) has
    fewer rows than its tokenizer has ids."""
    import shutil

    import torch
    from transformers import BertModel

    shutil.copytree(source, target)
    model = BertModel.from_pretrained(source)
    if fault == "nan":
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float("nan"))
    else:
        model.resize_token_embeddings(8)  # the tokenizer's ids go up to 43
    model.save_pretrained(target, safe_serialization=True)
    return target


@pytest.mark.parametrize("fault, message", [
    ("nan", r"refused: nan-bert: layer 0: hidden states contain NaN or infinite values: \d+ of \d+ vectors"),
    ("vocab", r"refused: vocab-bert: a token id is past the input embedding's 8 rows \(config field vocab_size 8\), "
              r"but the tokenizer has \d+ ids"),
])
def test_a_model_that_gives_nan_or_whose_vocabulary_is_too_small_is_one_line(clean_env, tiny_bert_dir, capsys, fault,
                                                                             message):
    """`aniso run FOLDER` on a model whose weights are NaN, or whose vocabulary is smaller than its tokenizer's ids:
    exit 2 and one line naming the model, the layer (or the config field) and the fault; no pytest dump."""
    import re

    folder = _broken_bert(tiny_bert_dir, clean_env / f"{fault}-bert", fault)
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    code = main(["run", str(folder), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    refused = [line for line in err.splitlines() if "refused:" in line]
    assert len(refused) == 1 and re.search(message, refused[0]), err[-3000:]
    assert "Traceback" not in out + err and "IndexError" not in out + err, out[-3000:]


@pytest.mark.parametrize("variable", ["ANISO_CORPUS", "ANISO_TRAIN_TEXT"])
@pytest.mark.parametrize("case, message", [
    ("fifo", "is a FIFO or pipe, not a regular file"),
    ("pipe", "is a FIFO or pipe, not a regular file"),
    ("gzip", "is not text: it is gzip-compressed; decompress it first"),
    ("zip", "is not text: it is a zip archive"),
    ("device", "is a device, not a regular file"),
])
def test_an_input_that_is_no_regular_text_file_stops_aniso_run_in_one_line(clean_env, monkeypatch, capsys, variable,
                                                                           case, message):
    """A FIFO (which would block the run), a pipe (read once, then empty), a device, or compressed bytes given as the
    corpus or the training text: one line naming the setting and the file, before anything is read or trained."""
    import gzip
    import zipfile

    text = "The first paragraph of the corpus.\nA second paragraph, in another line.\n"
    read_end = None
    if case == "fifo":
        path = clean_env / "corpus.fifo"
        os.mkfifo(path)
    elif case == "pipe":
        read_end, write_end = os.pipe()
        os.close(write_end)
        path = Path(f"/proc/self/fd/{read_end}")
    elif case == "gzip":
        path = clean_env / "corpus.txt"  # the name says text; the bytes say otherwise
        path.write_bytes(gzip.compress(text.encode()))
    elif case == "zip":
        path = clean_env / "corpus.txt"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("a.txt", text)
    else:
        path = Path("/dev/null")
    monkeypatch.setenv(variable, str(path))
    try:
        assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    finally:
        if read_end is not None:
            os.close(read_end)
    line = _one_line(capsys)
    assert variable in line and str(path) in line and message in line, line


def test_a_corpus_of_formatting_characters_only_stops_aniso_run_in_one_line(clean_env, monkeypatch, capsys):
    """300 lines of zero-width spaces and joiners are no paragraphs: a tokenizer would give only special tokens."""
    path = clean_env / "invisible.txt"
    path.write_text("\u200b\u200c\u200d\ufeff \u2060\n" * 300, encoding="utf-8")
    monkeypatch.setenv("ANISO_CORPUS", str(path))
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    line = _one_line(capsys)
    assert "ANISO_CORPUS" in line and "has 0 paragraph(s)" in line, line


def test_a_corpus_that_gives_only_special_tokens_is_refused_with_the_count(clean_env, tiny_bert_dir, capsys):
    """Paragraphs that the tokenizer reads as its own special tokens only (markup such as "[SEP] [CLS]"): the model
    is refused with the count of real tokens, not measured on special tokens' vectors."""
    corpus = clean_env / "markup.txt"
    import itertools

    lines = [" ".join(p) for p in itertools.permutations(["[SEP]", "[CLS]", "[PAD]"])]  # 6 distinct
    corpus.write_text("\n".join(lines + ["[SEP] [SEP]", "[CLS] [CLS]"]) + "\n")
    code = main(["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    assert "gives 0 known token(s) (neither special nor unknown-word [UNK]; 0 [UNK]) in 8 paragraph(s)" in err, \
        err[-3000:]


@pytest.mark.parametrize("case, lines, message", [
    ("emoji", [" ".join(p) for p in itertools.islice(itertools.permutations(
        ["\U0001F600", "\U0001F680", "\U0001F9E0", "\u2728", "\U0001F525"]), 8)],
     r"gives 0 known token\(s\) \(neither special nor unknown-word \[UNK\]; \d+ \[UNK\]\) in 8 paragraph\(s\)"),
    ("mostly-unknown", [f"w{i} zzq{i} yyq{i} xxq{i}" for i in range(8)],
     r"gives more unknown-word tokens than known ones .*\(24 \[UNK\] against 8 known in its first 8 paragraph\(s\)\)"),
])
def test_a_corpus_read_as_unknown_words_is_refused_with_the_count(clean_env, tiny_bert_dir, capsys, case, lines,
                                                                   message):
    """A corpus the model's vocabulary reads as [UNK] (emoji for a WordPiece vocabulary), wholly or for most of its
    tokens: every unknown word shares one input vector, so its "avg cosine similarity" is that of [UNK] with itself
    and a verdict on it would be wrong about the text. The model is refused in one line with the counts, exit 2."""
    corpus = clean_env / f"{case}.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    refused = [line for line in err.splitlines() if "refused:" in line]
    assert len(refused) == 1 and re.search(message, refused[0]), err[-3000:]


def test_a_dataset_is_named_by_its_content_not_its_file_name(tmp_path):
    """A copy of WikiText-2's validation file named like WikiText-103 is WikiText-2 by its content; a local text named
    like a dataset is a local corpus."""
    import shutil

    from aniso.inputs.text import load_corpus

    shared = Path("/work/shared/data/text/wikitext-2_wiki.valid.tokens")
    if not shared.is_file():
        shared = None
    lookalike = tmp_path / "wikitext-103-validation.txt"
    lookalike.write_text("A paragraph of my notes.\nAnother paragraph of them.\n")
    corpus = load_corpus(lookalike, 2, 0)
    assert corpus.name == "local-corpus" and "103" not in corpus.dataset and "WikiText" not in corpus.label.split("(")[0]
    if shared is not None:  # the data folder the CI reads
        copy = tmp_path / "notes-103.txt"
        shutil.copy(shared, copy)
        corpus = load_corpus(copy, 2, 0)
        assert corpus.name == "wikitext-2-validation" and corpus.label.startswith("WikiText-2 validation")


@pytest.mark.parametrize("case", ["file", "under-a-file"])
def test_a_report_folder_that_cannot_be_written_stops_aniso_run_before_it_starts(clean_env, monkeypatch, capsys, case):
    """Checked before the run computes anything (with ANISO_NO_CACHE=1 nothing computed would be kept)."""
    blocker = clean_env / "a-file"
    blocker.write_text("x")
    folder = blocker if case == "file" else blocker / "reports"
    monkeypatch.setenv("ANISO_REPORT_DIR", str(folder))
    monkeypatch.setenv("ANISO_NO_CACHE", "1")
    assert main(["run", "all-MiniLM-L6-v2", "--registry", REGISTRY]) == 2
    line = _one_line(capsys)
    assert "ANISO_REPORT_DIR" in line and str(folder) in line, line


def test_a_failed_report_under_no_cache_does_not_say_the_statistics_are_cached(tmp_path, monkeypatch):
    from aniso.common.settings import Settings
    from aniso.registry.entries import Registry
    from aniso.session import AnisoSession

    session = AnisoSession.start(Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c"),
                                          no_cache=True, device="cpu"), Registry([]), tmp_path)

    def full_disk():
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session, "write_report", full_disk)
    session.architectures.results = {"x": {}}  # something to report
    assert session.finish()
    (line,) = session.must_run_failures
    assert "were not cached (setting no_cache)" in line and "are in the cache" not in line, line


def test_sigterm_removes_the_temporary_registry_of_a_detected_model(clean_env, tiny_bert_dir):
    """`aniso run FOLDER` stopped by SIGTERM while it runs: its temporary registry folder is gone."""
    import signal
    import subprocess
    import sys
    import time

    tmp = clean_env / "tmp"
    tmp.mkdir()
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(64)) + "\n")
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "aniso.cli", "run", str(tiny_bert_dir), "--registry", REGISTRY,
                             "--", "--aniso-corpus", str(corpus)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp.glob("aniso-run-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp.glob("aniso-run-*")), "the run made no temporary registry"
        time.sleep(2)  # into the claims run (pytest collecting or running the tests)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM  # ended by the signal, as without the handler
    assert not list(tmp.glob("aniso-run-*"))


def test_a_second_order_limit_below_the_models_width_skips_the_claims_that_read_it(clean_env, tiny_bert_dir, capsys):
    """`--aniso-second-order-max-dim 16` on a model of width 32: X.rogue-dimensions, which reads the second-order
    statistics, is skipped naming the setting, never decided on NaN."""
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(16)) + "\n")
    code = main(["run", str(tiny_bert_dir), "--claims", "X.rogue-dimensions", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "16", "--aniso-n-bootstrap", "0",
                 "--aniso-second-order-max-dim", "16"])
    out, err = capsys.readouterr()
    assert code == 3, out[-3000:] + err[-3000:]
    results = json.loads(next((clean_env / "reports").glob("run-*/results.json")).read_text())["results"]
    assert [r["verdict"] for r in results] == ["skipped"], results
    assert "wider than setting second_order_max_dim 16" in results[0]["reason"], results[0]["reason"]


def test_a_local_folder_with_only_pickled_weights_names_them(clean_env, tiny_bert_dir, capsys):
    """`aniso run FOLDER` on a model folder whose weights are only ``pytorch_model.bin`` (a pickle): one line naming the
    file, that the suite loads safetensors only and how to convert; exit 2; nothing said of a hub cache."""
    import shutil

    import torch
    from safetensors.torch import load_file

    folder = clean_env / "bin-bert"
    shutil.copytree(tiny_bert_dir, folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    code = main(["run", str(folder), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    refused = [line for line in err.splitlines() if "refused:" in line]
    assert len(refused) == 1, err[-3000:]
    assert re.search(r"no \.safetensors weights, only pytorch_model\.bin, which the suite does not load .*"
                     r"save_pretrained\(FOLDER, safe_serialization=True\)", refused[0]), refused[0]
    assert "cached" not in refused[0] and "Traceback" not in out + err


@pytest.mark.parametrize("models, says", [
    ("models: []\n", "(it holds no models)"),
    (None, "(did you mean 'all-MiniLM-L6-v2'?)"),
], ids=["empty-registry", "close-id"])
def test_an_id_the_registry_lacks_is_blamed_on_the_registry_before_the_hub(clean_env, capsys, models, says):
    """`aniso run all-MiniLM-L6-v2 --registry R` with R holding `models: []` said only "not cached here and the hub
    cannot be reached"; the line now says first that R names no model with that id (it holds none, or the closest
    id), then what the hub could not do."""
    registry = REGISTRY
    model = "all-MiniLM-L6-v2"
    if models is not None:
        registry = str(clean_env / "empty.yaml")
        Path(registry).write_text("recorded_profile: quick\n" + models)
    else:
        model = "all-MiniLM-L6"
    code = main(["run", model, "--registry", registry, "--claims-dir", str(ROOT / "claims"),
                 "--claims", "G.token-nlp-anisotropic"])
    line = _one_line(capsys)
    here = re.escape(" (the models.yaml in this folder holds it, and is not this run's registry: give ") + r"[^)]*\)"
    assert code == 2 and re.match(re.escape(f"aniso run: {model}: registry {registry} names no model with this id "
                                            f"{says}") + f"({here})?" + re.escape("; as a hub id, not cached here"),
                                  line), line


@pytest.mark.parametrize("text, says", [
    ("models:\n\t- id: m\n", "not valid YAML at line 2"),
    ("- one\n- two\n", "a registry is a mapping whose field models lists the entries"),
], ids=["not-yaml", "a-list"])
def test_record_names_the_registrys_own_problem_before_the_results(tmp_path, capsys, text, says):
    """`aniso record RESULTS --registry BAD.yaml` (not YAML, or no registry) blamed the results file ("was not
    written by a run of BAD.yaml as it is now"); the registry is read first and its own problem named."""
    results = _edited_results(tmp_path, lambda d: None)
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert main(["record", str(results), "--registry", str(bad), "--dry-run"]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"aniso record: {bad}") and says in line and "was not written" not in line, line


def test_a_verdict_on_one_input_is_refused(clean_env, tiny_bert_dir, monkeypatch, capsys):
    """Setting n_sequences 1: one paragraph, however long, gives no verdict over inputs (nothing to resample, nothing
    beyond it): the model is refused for the claim in one line naming the setting, exit 2; 2 paragraphs are measured."""
    corpus = clean_env / "long.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(60)) for i in range(8)) + "\n")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    registry = str(_tiny_registry(clean_env, tiny_bert_dir))
    code = main(["run", "tiny", "--registry", registry, *TINY_RUN, "--", "--aniso-max-length", "64",
                 "--aniso-n-bootstrap", "0", "--aniso-n-sequences", "1"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    (refused,) = [line for line in err.splitlines() if "refused:" in line]
    assert ("tiny: G.token-nlp-anisotropic is decided over inputs, at least 2" in refused
            and "its inputs gave 1 (" in refused and "setting n_sequences" in refused), refused
    code = main(["run", "tiny", "--registry", registry, *TINY_RUN, "--", "--aniso-max-length", "64",
                 "--aniso-n-bootstrap", "0", "--aniso-n-sequences", "2"])
    out, err = capsys.readouterr()
    assert code in (0, 1) and "refused" not in err, out[-3000:] + err[-3000:]


def test_a_max_length_that_leaves_mostly_special_tokens_is_refused(clean_env, tiny_bert_dir, capsys):
    """Setting max_length 3 leaves a BERT one word between [CLS] and [SEP]: two thirds of the vectors measured would
    be the tokenizer's own. Refused in one line naming the setting, the counts and the smallest length that is not;
    exit 2. At that length (4) the model is measured."""
    corpus = clean_env / "corpus.txt"
    corpus.write_text("\n".join(" ".join(f"w{(i * 7 + j) % 40}" for j in range(12)) for i in range(8)) + "\n")
    run = ["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
           "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"]
    assert main(run + ["--aniso-max-length", "3"]) == 2
    out, err = capsys.readouterr()
    (refused,) = [line for line in err.splitlines() if "refused:" in line]
    assert re.search(r"setting max_length \(ANISO_MAX_LENGTH, --aniso-max-length\) 3 tokens per sequence, the "
                     r"tokenizer's 2 special tokens of each included, leave 8 known token\(s\) against 16 "
                     r"special-token vectors in the first 8 paragraph\(s\) of the corpus.*; give at least 4 ",
                     refused), refused
    main(run + ["--aniso-max-length", "4"])
    assert "setting max_length" not in capsys.readouterr().err


def test_a_corpus_of_one_word_paragraphs_is_refused_as_the_corpus(clean_env, tiny_bert_dir, capsys):
    """Paragraphs of one word each: [CLS] and [SEP] outnumber the text's tokens at any max_length, so the refusal
    names the corpus (its paragraphs are too short), not setting max_length; exit 2."""
    corpus = clean_env / "words.txt"
    corpus.write_text("\n".join(f"w{i}" for i in range(8)) + "\n")
    assert main(["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY, "--",
                 "--aniso-corpus", str(corpus), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"]) == 2
    (refused,) = [line for line in capsys.readouterr().err.splitlines() if "refused:" in line]
    assert re.search(r"gives 8 known token\(s\) against 16 special-token vectors \(2 per sequence\) in its first 8 "
                     r"paragraph\(s\): its paragraphs are so short", refused) and "max_length" not in refused, refused
