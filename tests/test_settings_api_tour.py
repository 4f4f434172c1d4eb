"""Settings given twice, empty or pointing at nothing, and Python API arguments that used to be ignored silently:
each is refused in one line naming the option, variable, setting or argument (exit code 2 from `aniso run`, a pytest
usage error from `pytest claims/`, a ValueError or TypeError from the API), before anything is computed. Each case
is a row of docs/bad-input.md."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aniso
from aniso.cli import main
from aniso.common.settings import SettingError, Settings

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = str(ROOT / "models.yaml")
M = "all-MiniLM-L6-v2"
SMALL = ["--aniso-n-sequences", "16", "--aniso-n-bootstrap", "0"]
EIGHT = [f"Paragraph number {i} says something about cats, mats and hidden states." for i in range(8)]


def _one_line(capsys) -> str:
    """Standard error of a command that must have stopped with one line, before any test ran."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso "), err[-3000:]
    assert "Traceback" not in out + err and "passed" not in out and "skipped" not in out, out[-3000:]
    return lines[0]


def _pytest_claims(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`pytest claims/ --co OPTIONS` in a process of its own (the plugin's options are pytest's argparse)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    environ |= {"ANISO_CACHE_DIR": str(tmp_path / "cache"), "ANISO_REPORT_DIR": str(tmp_path / "reports"),
                "HF_HUB_OFFLINE": "1"} | (env or {})
    return subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims"), "--co", "-q", "-p",
                           "no:cacheprovider", *options], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=300)


# -- one setting, one value: aniso run ------------------------------------------------------------------------------


def test_claims_and_the_pytest_option_aniso_claims_with_different_values_stop_aniso_run(clean_env, capsys):
    """A02: `--claims G.… -- --aniso-claims X.` used to run G.… and ignore X. silently."""
    assert main(["run", M, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic", "--", *SMALL,
                 "--aniso-claims", "X."]) == 2
    line = _one_line(capsys)
    assert "--claims 'G.token-nlp-anisotropic'" in line and "--aniso-claims 'X.'" in line and "give one" in line, line


def test_a_setting_given_twice_with_one_value_is_no_conflict():
    """The same value through two routes (a path relative or absolute, a number as text) is one value."""
    from aniso.api import _one_plan, _one_value

    _one_plan(M, "G.", REGISTRY, {"n_sequences": 16}, {"claims": "G.", "n_sequences": "16", "registry": REGISTRY},
              "aniso run MODEL")
    _one_value("corpus", [("inputs=", "models.yaml"), ("settings['corpus']=", Path.cwd() / "models.yaml")])
    with pytest.raises(ValueError, match=r"settings\['n_sequences'\]=16 and the pytest option --aniso-n-sequences "
                                         r"'8' both given for setting n_sequences"):
        _one_plan(M, None, None, {"n_sequences": 16}, {"n_sequences": "8"}, "aniso run MODEL")


def test_registry_and_the_pytest_option_aniso_registry_with_different_files_stop_aniso_run(clean_env, capsys):
    other = clean_env / "other.yaml"
    other.write_text(Path(REGISTRY).read_text())
    assert main(["run", M, "--registry", REGISTRY, "--", "--aniso-registry", str(other)]) == 2
    line = _one_line(capsys)
    assert "--registry" in line and f"--aniso-registry '{other}'" in line, line


def test_the_pytest_option_aniso_models_stops_aniso_run_which_chooses_the_model(clean_env, capsys):
    """A03: `aniso run M -- --aniso-models roberta-base` used to run M and ignore the option silently."""
    assert main(["run", M, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic", "--", *SMALL,
                 "--aniso-models", "roberta-base"]) == 2
    line = _one_line(capsys)
    assert "--aniso-models 'roberta-base'" in line and "chooses the model" in line and M in line, line


def test_a_twin_run_refuses_the_options_it_sets_itself_and_leaves_the_users_sizes_to_them(clean_env, capsys):
    """`aniso run ID --twin -- --aniso-models …` is refused; a size the user gives is not given a second time by the
    twin run (a repeated option is refused), so the user's decides."""
    from aniso.api import TWIN_SIZES, _twin_args

    for option in ("--aniso-models", "--aniso-twin", "--aniso-registry"):
        assert main(["run", "bert-base-uncased", "--twin", "--registry", REGISTRY, "--", option, "x"]) == 2
        line = _one_line(capsys)
        assert option in line, line
    args = _twin_args(Path("claims"), ["a"], Path("r.yaml"), Path("m.json"), TWIN_SIZES, "G.",
                      {"n_sequences": "8", "claims": "X."})
    assert "--aniso-n-sequences" not in args and "--aniso-claims" not in args and "--aniso-max-length" in args


# -- an option given twice ------------------------------------------------------------------------------------------


def test_a_repeated_setting_option_stops_aniso_run_naming_it(clean_env, capsys):
    """A04: `-- --aniso-n-sequences 16 --aniso-n-sequences 1` used to measure 1 paragraph (the last won)."""
    assert main(["run", M, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic", "--",
                 "--aniso-n-sequences", "16", "--aniso-n-sequences", "1", "--aniso-n-bootstrap", "0"]) == 2
    line = _one_line(capsys)
    assert "--aniso-n-sequences: given twice ('16', then '1'); give it once" in line, line


def test_the_setting_options_refuse_a_second_occurrence():
    from aniso.common.settings import add_setting_options

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_setting_options(parser.add_argument, by_name=True)
    assert vars(parser.parse_args(["--aniso-seed", "3", "--aniso-no-cache"]))["seed"] == "3"
    for args in (["--aniso-seed", "3", "--aniso-seed=4"], ["--aniso-no-cache", "--aniso-no-cache"]):
        with pytest.raises(argparse.ArgumentError, match="given twice"):
            parser.parse_args(args)


def test_a_repeated_setting_option_is_a_pytest_usage_error_naming_it(tmp_path):
    """A04 through `pytest claims/`: the plugin registers its options with the same once-only action."""
    proc = _pytest_claims(tmp_path, "--aniso-n-sequences", "16", "--aniso-n-sequences", "1")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "argument --aniso-n-sequences: given twice ('16', then '1')" in proc.stderr, proc.stderr[-2000:]


# -- empty values -----------------------------------------------------------------------------------------------------


def test_an_empty_option_is_a_pytest_usage_error_naming_it(tmp_path):
    """N03: `pytest claims/ --aniso-report-dir ''` used to write to the default reports/."""
    proc = _pytest_claims(tmp_path, "--aniso-report-dir", "")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "option --aniso-report-dir: empty" in lines[0], proc.stderr[-2000:]


@pytest.mark.parametrize("variable", ["ANISO_CORPUS", "ANISO_IMAGE_DIR", "ANISO_REPORT_DIR", "ANISO_SEED"])
def test_an_empty_variable_stops_aniso_run_and_an_unset_one_means_the_default(clean_env, monkeypatch, capsys,
                                                                              variable):
    """A08: `ANISO_CORPUS= aniso run M` used to run on the fallback corpus and say "set ANISO_CORPUS"."""
    monkeypatch.setenv(variable, "")
    assert main(["run", M, "--registry", REGISTRY, "--claims", "G.token-nlp-anisotropic", "--", *SMALL]) == 2
    name = variable.removeprefix("ANISO_").lower()
    assert _one_line(capsys) == (f"aniso run: setting {name} ({variable}) is set but empty; unset it for the default "
                                 f"(unset {variable})")
    defaults = Settings.from_sources({}, {})  # not set: the default
    assert defaults.corpus is None and defaults.report_dir == os.path.abspath("reports") and defaults.seed == 0
    assert Settings.from_sources({}, {"ANISO_CLAIMS": ""}).claims == ""  # empty claims: every claim, a value


@pytest.mark.parametrize("options", [{"corpus": ""}, {"image_dir": "  "}, {"twin": ""}])
def test_an_empty_path_through_the_api_is_refused(clean_env, options):
    with pytest.raises(SettingError, match=f"setting {next(iter(options))} .* is empty"):
        Settings.from_sources(options, {})
    with pytest.raises(ValueError, match=f"setting {next(iter(options))} .* is empty"):
        aniso.measure(M, EIGHT, settings=options, registry=REGISTRY)


def test_an_empty_option_through_aniso_run_is_refused(clean_env, capsys):
    assert main(["run", M, "--registry", REGISTRY, "--", "--aniso-corpus", ""]) == 2
    assert "option --aniso-corpus: empty ('')" in _one_line(capsys)


# -- data folders -----------------------------------------------------------------------------------------------------


def _folder(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize("variable, case, message", [
    ("ANISO_IMAGE_DIR", "missing", "does not exist"),
    ("ANISO_IMAGE_DIR", "notes", "holds no .jpg/.jpeg/.png file"),
    ("ANISO_SPEECH_DIR", "notes", "holds no .flac/.wav file"),
    ("ANISO_MODELS_DIR", "missing", "does not exist"),
])
def test_a_data_folder_that_is_missing_or_holds_no_input_stops_aniso_run(clean_env, monkeypatch, capsys, variable,
                                                                         case, message):
    """C03/C06/H02: `ANISO_IMAGE_DIR=/nonexistent/imgs aniso run efficientnet-lite0` (or a folder of .txt notes)
    used to exit 3 with every test skipped, the setting named only on standard output."""
    folder = clean_env / "nowhere" if case == "missing" else _folder(
        clean_env / "notes", {f"note{i}.txt": "x" for i in range(3)} | {"sub/readme.md": "x", "x.jpg.txt": "x"})
    monkeypatch.setenv(variable, str(folder))
    assert main(["run", "efficientnet-lite0", "--registry", REGISTRY, "--claims", "G.cnn-mostly-isotropic", "--",
                 "--aniso-n-images", "64", "--aniso-n-bootstrap", "0"]) == 2
    line = _one_line(capsys)
    assert variable in line and str(folder) in line and message in line, line


def test_the_data_folder_check_agrees_with_the_media_loaders(tmp_path):
    """A folder the loaders read from passes (a photograph in a sub-folder, an upper-case suffix); one they find
    nothing in is refused, as a link to a folder of photographs is (the loaders do not descend into it). The suffixes
    are the loaders' own (DATA_FORMATS), which settings_and_registry passes to the check (the common layer may not
    import the inputs layer)."""
    from aniso.common.settings import data_folder_problem
    from aniso.inputs.media import DATA_FORMATS, InputsUnavailable, _list

    assert DATA_FORMATS == {"speech_dir": (".flac", ".wav"), "image_dir": (".jpg", ".jpeg", ".png")}
    suffixes = DATA_FORMATS["image_dir"]
    photos = _folder(tmp_path / "photos", {"a/b/IMG_1.PNG": "x", "notes.txt": "x"})
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "to-photos").symlink_to(photos, target_is_directory=True)
    for folder in (photos, linked):
        try:
            loaders = bool(_list(folder, suffixes, "image_dir"))
        except InputsUnavailable:
            loaders = False
        assert (data_folder_problem(str(folder), suffixes) is None) == loaders, folder
    assert data_folder_problem(str(photos), suffixes) is None
    assert "holds no .jpg/.jpeg/.png file" in data_folder_problem(str(linked), suffixes)
    dead = tmp_path / "dead"  # a link to nothing is listed by the loaders only to be skipped and named: no photograph
    dead.mkdir()
    (dead / "dead.jpg").symlink_to(tmp_path / "nothing.jpg")
    assert "holds no .jpg/.jpeg/.png file" in data_folder_problem(str(dead), suffixes)


def test_a_folder_of_no_photographs_given_as_inputs_is_refused_naming_inputs(clean_env):
    notes = _folder(clean_env / "notes", {"a.txt": "x"})
    with pytest.raises(ValueError, match=f"^inputs: {notes} holds no .jpg/.jpeg/.png file"):
        aniso.measure("efficientnet-lite0", str(notes), registry=REGISTRY)


def test_a_data_folder_that_holds_no_input_is_a_pytest_usage_error(tmp_path):
    notes = _folder(tmp_path / "notes", {"a.txt": "x"})
    proc = _pytest_claims(tmp_path, env={"ANISO_SPEECH_DIR": str(notes)})
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"ANISO_SPEECH_DIR, --aniso-speech-dir): {notes} holds no .flac/.wav file" in proc.stderr, proc.stderr


# -- the Python API -------------------------------------------------------------------------------------------------


def test_a_tokenizer_or_name_for_a_model_that_is_not_in_memory_is_refused(clean_env):
    """P14: `aniso.measure(M, texts, tokenizer="bert-base-uncased")` used to ignore the tokenizer silently."""
    with pytest.raises(ValueError, match="^tokenizer: only for an in-memory model"):
        aniso.measure(M, EIGHT, tokenizer="bert-base-uncased", registry=REGISTRY)
    with pytest.raises(ValueError, match="^name: only for an in-memory model"):
        aniso.measure(M, EIGHT, name="mine", registry=REGISTRY)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_inputs": 6}, r"^n_inputs: 6 applies to a corpus file or a folder of inputs, .* measured whole \(8 texts: "
                      r"give inputs\[:6\] for fewer\)"),
    ({"settings": {"n_sequences": 4}}, r"^settings: 'n_sequences' \(4\) applies to a corpus file"),
    ({"settings": {"corpus": REGISTRY}}, r"^settings: 'corpus' .* and inputs \(a list of 8 texts\) both name the "
                                         "inputs"),
])
def test_a_count_or_corpus_that_a_list_of_texts_would_leave_unused_is_refused(clean_env, kwargs, message):
    """P21: `aniso.measure(M, eight_texts, n_inputs=6)` (or settings={"n_sequences": 4}) used to measure all 8."""
    with pytest.raises(ValueError, match=message):
        aniso.measure(M, EIGHT, registry=REGISTRY, **kwargs)


def test_an_argument_and_a_setting_with_different_values_are_refused(clean_env, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(EIGHT) + "\n")
    with pytest.raises(ValueError, match=r"^device='cpu' and settings\['device'\]='meta' both given"):
        aniso.measure(M, EIGHT, device="cpu", settings={"device": "meta"}, registry=REGISTRY)
    with pytest.raises(ValueError, match=r"^n_inputs=5 and settings\['n_sequences'\]=4 both given"):
        aniso.measure(M, str(corpus), n_inputs=5, settings={"n_sequences": 4}, registry=REGISTRY)
    with pytest.raises(ValueError, match=r"^inputs=.* and settings\['corpus'\]=.* both given for setting corpus"):
        aniso.measure(M, str(corpus), settings={"corpus": REGISTRY}, registry=REGISTRY)
    with pytest.raises(ValueError, match=r"^inputs=.* and settings\['corpus'\]=.* both given for setting corpus"):
        aniso.check(M, claims="G.token-nlp-anisotropic", inputs=str(corpus), settings={"corpus": REGISTRY},
                    registry=REGISTRY)


@pytest.mark.parametrize("inputs, message", [
    (["one paragraph"], "inputs: 1 text; at least 2 distinct are needed"),
    (["one paragraph", "one  paragraph "], "inputs: 2 copies of one text; at least 2 distinct are needed"),
    (["= A heading =", "one paragraph", "another one"], r"inputs\[0\]: '= A heading =' is no paragraph"),
])
def test_check_on_too_few_texts_names_inputs(clean_env, inputs, message):
    """P23: `aniso.check(M, inputs=["one paragraph"], …)` used to blame ANISO_CORPUS and a temporary file."""
    with pytest.raises(ValueError, match=f"^{message}") as caught:
        aniso.check(M, claims="G.token-nlp-anisotropic", inputs=inputs, settings={"n_bootstrap": 0},
                    registry=REGISTRY)
    assert "ANISO_CORPUS" not in str(caught.value) and "\n" not in str(caught.value)


def test_check_on_texts_too_short_for_the_claim_speaks_of_the_texts_given(clean_env):
    """`aniso.check(M, claims=(ID,), inputs=[4 short texts])` refused the claim naming "local corpus texts.txt" (a
    temporary file) and asking to raise n_sequences, which a list of texts does not take; the refusal now speaks of
    the texts given and asks for more or longer ones."""
    import json

    texts = ["The cat sat on the mat.", "Stock markets fell on Tuesday.", "A frog was found in Peru.",
             "He played the violin."]
    done = aniso.check(M, claims=("G.token-nlp-anisotropic",), inputs=texts, settings={"n_bootstrap": 0},
                       registry=REGISTRY)
    (result,) = json.loads(done.path.read_text())["results"]
    assert done.exit_code == 2 and result["inputs_label"] == "the 4 texts given as inputs", result
    assert result["reason"].startswith(f"{M}: G.token-nlp-anisotropic is decided on at least ") and (
        "; the 4 texts given as inputs gave " in result["reason"]), result["reason"]
    assert result["reason"].endswith(" tokens; give more or longer texts"), result["reason"]
    assert "texts.txt" not in result["reason"] and "n_sequences" not in result["reason"], result["reason"]


def test_a_report_path_through_a_file_or_naming_a_folder_is_refused_naming_path(tmp_path):
    """P24: `v.report("…/one.txt/x.html")` used to raise a bare FileExistsError."""
    from aniso.api import ClaimResults

    one = tmp_path / "one.txt"
    one.write_text("x\n")
    results = ClaimResults(tmp_path / "run" / "results.json", None, 0, M)
    with pytest.raises(ValueError, match=f"^path: {one} is a file, not a folder"):
        results.report(one / "x.html")
    with pytest.raises(ValueError, match=f"^path: {tmp_path} is a folder; name the HTML file"):
        results.report(tmp_path)
    with pytest.raises(TypeError, match="^path: 5"):
        results.report(5)


def test_a_flag_that_is_not_true_or_false_is_a_type_error_naming_it(clean_env):
    """`aniso.measure(..., progress="no")` and `check(..., verbose="loud")` used to be taken for True."""
    with pytest.raises(TypeError, match=r"^progress: 'no' \(str\); give True or False"):
        aniso.measure(M, EIGHT, progress="no", registry=REGISTRY)
    with pytest.raises(TypeError, match=r"^verbose: 'loud' \(str\); give True or False"):
        aniso.check(M, claims="G.token-nlp-anisotropic", verbose="loud", registry=REGISTRY)
    with pytest.raises(TypeError, match=r"^as_frame: 1 \(int\)"):
        aniso.claims(as_frame=1)


def test_pytest_help_lists_the_setting_options():
    """A help text with "%" ("2%", "95%") used to make `pytest --help` fail with a traceback (argparse formats help
    with %)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--aniso-n-sequences" in proc.stdout and "95% interval" in " ".join(proc.stdout.split())
