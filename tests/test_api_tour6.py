"""Inputs and arguments of the Python API (and the text inputs behind it) that were misread: corpus lines split on
separators inside a line, empty and bytes paths, blank claim filters, texts without a known token, and pytest
options whose files cannot be written."""

from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from aniso.inputs.text import corpus_lines, corpus_paragraphs, load_corpus

#: The characters str.splitlines ends a line at besides \n and \r.
INNER_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", INNER_BREAKS + ["\r"])
def test_a_corpus_line_holding_a_separator_is_one_paragraph(tmp_path, sep):
    """A corpus of 20 lines, each holding U+2028 (or a form feed, NEL, ...), is 20 paragraphs, as wc -l counts it,
    and its fingerprint is that of no other split."""
    lines = [f"paragraph {i} first half{sep}second half of it" for i in range(20)]
    path = tmp_path / "c.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    paragraphs = corpus_paragraphs(path)
    assert len(paragraphs) == 20 and all(sep in p for p in paragraphs)
    corpus = load_corpus(path, 64, seed=0)
    assert corpus.n_available == 20 and "only 20 paragraphs, 64 requested" in corpus.label


def test_crlf_ends_a_line_like_lf(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"one paragraph\r\nanother one\r\n")
    assert corpus_paragraphs(path) == ["one paragraph", "another one"]


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12),
                max_size=8))
def test_corpus_lines_are_the_lines_between_newlines(lines):
    """Splitting the joined lines gives them back, whatever other separators they hold."""
    assert corpus_lines("\n".join(lines)) == (lines or [""])


# -- path arguments: empty, bytes -----------------------------------------------------------------------------------

from pathlib import Path  # noqa: E402

import aniso  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "models.yaml"
M = "all-MiniLM-L6-v2"
TEXTS = ["the first of the texts, a sentence", "another text, which is a different sentence"]


@pytest.mark.parametrize("call, name", [
    (lambda v: aniso.measure(M, TEXTS, registry=v), "registry"),
    (lambda v: aniso.check(M, "G.token-nlp-anisotropic", registry=v), "registry"),
    (lambda v: aniso.check(M, "G.token-nlp-anisotropic", registry=REGISTRY, claims_dir=v), "claims_dir"),
    (lambda v: aniso.models(registry=v), "registry"),
    (lambda v: aniso.api.run_claims(M, "G.token-nlp-anisotropic", registry=v), "registry"),
    (lambda v: aniso.api.run_claims(M, "G.token-nlp-anisotropic", registry=REGISTRY, claims_dir=v), "claims_dir"),
], ids=["measure", "check", "check-claims_dir", "models", "run_claims", "run_claims-claims_dir"])
@pytest.mark.parametrize("value", ["", "  "], ids=["empty", "blank"])
def test_an_empty_path_argument_is_named_as_empty(clean_env, call, name, value):
    """`registry=''` said "registry:  is not a file" (the working folder looked at); it is named as empty."""
    with pytest.raises(ValueError) as err:
        call(value)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{name}: an empty path ({value!r})"), msg


@pytest.mark.parametrize("call, name", [
    (lambda v: aniso.measure(M, TEXTS, registry=v), "registry"),
    (lambda v: aniso.measure(M, v, registry=REGISTRY), "inputs"),
    (lambda v: aniso.check(M, "G.token-nlp-anisotropic", registry=v), "registry"),
    (lambda v: aniso.check(M, "G.token-nlp-anisotropic", v, registry=REGISTRY), "inputs"),
    (lambda v: aniso.check(M, "G.token-nlp-anisotropic", registry=REGISTRY, claims_dir=v), "claims_dir"),
    (lambda v: aniso.models(registry=v), "registry"),
    (lambda v: aniso.api.run_claims(M, "G.token-nlp-anisotropic", registry=v), "registry"),
    (lambda v: aniso.api.run_twins("gpt2", registry=REGISTRY, keep=v), "keep"),
], ids=["measure", "measure-inputs", "check", "check-inputs", "check-claims_dir", "models", "run_claims",
        "run_twins-keep"])
def test_a_bytes_path_argument_is_a_type_error_naming_it(clean_env, call, name):
    """`registry=b'/path/models.yaml'` said "is not a file" for a real file: bytes are refused as a type, naming the
    argument, for every path argument (as the settings refuse a bytes path)."""
    with pytest.raises(TypeError) as err:
        call(bytes(REGISTRY) if name != "claims_dir" else bytes(ROOT / "claims"))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{name}: bytes (b'") and "give a str or pathlib.Path" in msg, msg


def test_a_report_path_that_is_empty_or_bytes_is_named(tmp_path):
    from aniso.api import _report_path

    with pytest.raises(ValueError, match=r"^path: an empty path \(''\)"):
        _report_path("")
    with pytest.raises(TypeError, match=r"^path: bytes \(b'"):
        _report_path(bytes(tmp_path / "r.html"))


# -- a blank claims filter ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("claims", ["  ", "\t", ["  "]], ids=["blanks", "tab", "list-of-blanks"])
def test_a_blank_claims_filter_is_refused_as_the_command_line_refuses_it(clean_env, claims):
    """`aniso.check(M, claims='  ')` ran every claim, where `aniso run M --claims '  '` and `claims=[]` are refused;
    the one parser (aniso.registry.selection) refuses a filter of blanks, and the empty filter still takes every
    claim."""
    from aniso.registry.selection import parse_claims

    with pytest.raises(ValueError, match="^claims: .* is blank"):  # first: without the refusal, check runs every claim
        parse_claims("  ")
    assert parse_claims("").everything and parse_claims(None).everything
    with pytest.raises(ValueError) as err:
        aniso.check(M, claims=claims, registry=REGISTRY)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("claims: ") and "is blank" in msg, msg


# -- texts given as inputs that the tokenizer reads as no text --------------------------------------------------------

EMOJI = ["\U0001F600\U0001F389\U0001F680" * i for i in range(1, 9)]  # 8 distinct emoji-only texts


@pytest.mark.parametrize("texts, counts", [
    (EMOJI, r"gives 0 known token\(s\)"),
    ([f"w{i} zzq{i} yyq{i} xxq{i}" for i in range(8)], r"gives more unknown-word tokens than known ones"),
    ([f"w{i}" for i in range(8)], r"gives 8 known token\(s\) against 16 special-token vectors"),
], ids=["emoji", "mostly-unknown", "one-word"])
def test_texts_given_as_inputs_that_give_no_real_tokens_are_a_value_error_naming_inputs(clean_env, tiny_bert_dir,
                                                                                        texts, counts):
    """`aniso.measure(M, 8 emoji-only texts)` raised ModelRefused (a RuntimeError) saying "setting corpus", a setting
    the caller never gave: the refusal is a ValueError (still a ModelRefused) that names the argument ``inputs``."""
    import re

    from aniso.sources import ModelRefused

    with pytest.raises(ValueError) as err:
        aniso.measure(str(tiny_bert_dir), texts, registry=REGISTRY, progress=False)
    msg = str(err.value)
    assert isinstance(err.value, ModelRefused) and "\n" not in msg, msg
    assert msg.startswith("inputs: ") and re.search(counts, msg) and "setting corpus" not in msg, msg
    assert "texts given to aniso.measure" in msg and "the corpus" not in msg, msg


def test_a_corpus_setting_that_gives_no_real_tokens_still_names_the_setting(clean_env, tiny_bert_dir, monkeypatch):
    """The same texts as setting corpus (``aniso run``, ``aniso stats``, ``ANISO_CORPUS``) keep naming the setting."""
    from aniso.sources import ModelRefused

    corpus = clean_env / "emoji.txt"
    corpus.write_text("\n".join(EMOJI) + "\n", encoding="utf-8")
    monkeypatch.setenv("ANISO_CORPUS", str(corpus))
    with pytest.raises(ModelRefused) as err:
        aniso.measure(str(tiny_bert_dir), registry=REGISTRY, n_inputs=8, progress=False)
    msg = str(err.value)
    assert not isinstance(err.value, ValueError) and "(setting corpus: " in msg and "the corpus " in msg, msg


# -- pytest options after `--` that write files -------------------------------------------------------------------

@pytest.mark.parametrize("args, named", [
    (["--junitxml", "{file}/x.xml"], "--junitxml {file}/x.xml"),
    (["--junitxml={file}/sub/x.xml"], "--junitxml {file}/sub/x.xml"),
    (["--junit-xml", "{tmp}"], "--junit-xml {tmp}"),
    (["--log-file", "{file}/run.log"], "--log-file {file}/run.log"),
    (["--debug={tmp}/missing/debug.log"], "--debug {tmp}/missing/debug.log"),
    (["--basetemp", "{tmp}/missing/base"], "--basetemp {tmp}/missing/base"),
    (["-o", "cache_dir={file}/cache"], "-o cache_dir={file}/cache"),
    (["--override-ini=log_file={file}/l.log"], "-o log_file={file}/l.log"),
], ids=["junitxml", "junitxml-equals", "junit-xml-folder", "log-file", "debug", "basetemp", "o-cache_dir",
        "override-ini-log_file"])
def test_a_pytest_option_that_writes_where_nothing_can_be_written_is_refused_before_the_run(
        clean_env, tiny_bert_dir, capsys, args, named):
    """`aniso run M --claims C -- --junitxml /proc/nope/x.xml` measured the claims, then pytest's junitxml raised
    FileNotFoundError (a traceback, no verdict table, exit 1). Every pytest option that writes a file or folder is
    checked before the run starts: one line naming the option and the path, exit 2, nothing measured."""
    from aniso.cli import main

    file = clean_env / "a-file.txt"
    file.write_text("not a folder\n")
    fill = {"file": str(file), "tmp": str(clean_env)}
    code = main(["run", str(tiny_bert_dir), "--claims", "G.token-nlp-anisotropic", "--registry", str(REGISTRY), "--",
                 *(a.format(**fill) for a in args), "--aniso-n-sequences", "8", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, out[-2000:] + err[-2000:]
    assert f"the pytest option {named.format(**fill)} after `--`" in lines[0], lines[0]
    assert not (clean_env / "cache").exists() and not (clean_env / "reports").exists(), "measured before refusing"
    assert sorted(p.name for p in clean_env.iterdir()) == ["a-file.txt"]  # no probe left behind


def test_run_claims_refuses_an_unwritable_junit_file_naming_the_option(clean_env):
    """The Python door (aniso.api.run_claims with pytest_args) refuses it as a ValueError, and a writable path is
    taken (its missing folders are pytest's to make)."""
    from aniso.api import _check_written_paths

    with pytest.raises(ValueError, match=r"^the pytest option --junitxml /proc/nope/x\.xml in pytest_args: "):
        aniso.api.run_claims(M, "G.token-nlp-anisotropic", registry=REGISTRY,
                             pytest_args=["--junitxml", "/proc/nope/x.xml"])
    _check_written_paths(["--junitxml", str(clean_env / "new" / "sub" / "x.xml"), "--debug", "-k", "x"])
    assert not (clean_env / "new").exists()


def test_measure_of_texts_with_shards_and_run_claims_with_a_string_of_arguments_are_refused():
    """measure(M, texts, settings={'shards': 2}) said to extract the corpus with torchrun (a ModelUnavailable);
    run_claims(M, C, pytest_args='-x') gave pytest the files '-' and 'x'."""
    texts = [f"paragraph {i} of words" for i in range(8)]
    with pytest.raises(ValueError, match=r"^setting shards 2 .*never of texts given as inputs"):
        aniso.measure("all-MiniLM-L6-v2", texts, settings={"shards": 2}, registry=REGISTRY)
    for given, said in (("-x", r"^pytest_args: '-x' is a str; give a list of arguments \(e\.g\. \['-x'\]\)"),
                        (["-x", 3], r"^pytest_args: holds 3 \(int\)")):
        with pytest.raises(TypeError, match=said):
            aniso.api.run_claims("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=REGISTRY,
                                 pytest_args=given)


def test_layer_stats_of_what_is_no_model_stats_and_hash_name_the_type():
    from aniso.api import LayerStats

    with pytest.raises(TypeError, match=r"^stats: None \(NoneType\); give the aniso\.stats\.results\.ModelStats"):
        LayerStats.of(None)
    with pytest.raises(TypeError, match="unhashable type: 'LayerStats'"):
        hash(LayerStats("m", ("0",), (), {}, {}, {}, None))


def test_a_corpus_file_named_as_the_checks_texts_file_is_a_corpus_file(tmp_path):
    """WikiText copied as texts-given-as-inputs.txt and given as ANISO_CORPUS was labelled "the 1841 texts given as
    inputs" (the name of the file aniso.check writes a list of texts to)."""
    import tempfile

    from aniso.inputs.text import GIVEN_FOLDER_PREFIX, GIVEN_TEXTS, given_texts

    assert not given_texts(str(tmp_path / GIVEN_TEXTS))
    with tempfile.TemporaryDirectory(prefix=GIVEN_FOLDER_PREFIX) as tmp:
        assert given_texts(str(Path(tmp) / GIVEN_TEXTS))


def test_run_claims_refusals_of_pytest_args_name_pytest_args_and_the_model_argument(clean_env):
    """run_claims(pytest_args=[...]) refusals spoke of "the pytest arguments after `--`" and "aniso run MODEL
    chooses the model": the command line's words, not the API's."""
    for args, said in ((["--co"], "pytest_args: --co makes pytest list, describe or print without running a test; "
                                  "run_claims runs claims (for that, run pytest claims/ --co)"),
                       (["--aniso-models", "paraphrase-minilm-l3-onnx"],
                        "the pytest option --aniso-models 'paraphrase-minilm-l3-onnx': run_claims' model argument "
                        f"chooses the model ({M}); leave --aniso-models out")):
        with pytest.raises(ValueError) as exc:
            aniso.api.run_claims(M, "G.token-nlp-anisotropic", registry=REGISTRY, pytest_args=args)
        assert str(exc.value) == said
