"""A user's own claim tests (a claims folder of one's own, run with ``-p aniso.pytest_plugin``, ``aniso run
--claims-dir`` or ``aniso.check(..., claims_dir=...)``): a test that never concludes, a verdict that is no bool and a
claim id the catalogue lacks are each one line, never a verdict given silently. Rows of docs/bad-input.md."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "all-MiniLM-L6-v2"
CLAIM = "G.token-nlp-anisotropic"


def _claims(tmp_path: Path, body: str, name: str = "test_mine") -> Path:
    """A claims folder of one test file ``name``.py holding ``body`` (model-free claim tests: nothing is measured;
    each in-process run gets its own module name, as pytest imports it into this process)."""
    folder = tmp_path / "myclaims"
    folder.mkdir()
    (folder / f"{name}.py").write_text("import pytest\n\n" + textwrap.dedent(body))
    return folder


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"),
               ANISO_PROGRESS="0")
    return env


def _pytest(tmp_path: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", str(folder), "-p", "aniso.pytest_plugin", "-p",
                           "no:randomly", "-p", "no:cacheprovider", f"--aniso-registry={ROOT / 'models.yaml'}",
                           "--aniso-models", MODEL, *args], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)


def _aniso_run(tmp_path: Path, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aniso.cli", "run", MODEL, "--claims", CLAIM, "--claims-dir",
                           str(folder), "--registry", str(ROOT / "models.yaml")], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)


def _verdicts(tmp_path: Path) -> list[tuple[str, str]]:
    (results,) = (tmp_path / "reports").glob("*/results.json")
    return [(r["verdict"], r["reason"]) for r in json.loads(results.read_text())["results"]]


NEVER_CONCLUDES = f"""
    @pytest.mark.claim("{CLAIM}")
    def test_no_conclude(claim):
        claim.settings
"""

NOT_A_BOOL = f"""
    @pytest.mark.claim("{CLAIM}")
    def test_said_no(claim):
        claim.conclude("no", {{"max_avg_cos": 0.01}}, "a rule")
"""

UNKNOWN_ID = """
    @pytest.mark.claim("G.token-nlp-anisotropc")
    def test_mine(claim):
        claim.conclude(True, {"x": 1.0}, "always")
"""


def test_a_claim_test_that_never_concludes_fails_with_one_line_and_an_error_verdict(tmp_path):
    folder = _claims(tmp_path, NEVER_CONCLUDES)
    done = _pytest(tmp_path, folder, "-q")
    line = "the claim test myclaims/test_mine.py::test_no_conclude never concluded: call claim.conclude(...)"
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert _verdicts(tmp_path) == [("error", line)]


def test_a_claim_test_that_never_concludes_exits_1_through_aniso_run_and_check(tmp_path, monkeypatch):
    folder = _claims(tmp_path, NEVER_CONCLUDES, "test_mine_never")
    done = _aniso_run(tmp_path, folder)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    import aniso

    _in_process_as_the_subprocesses(monkeypatch, tmp_path)
    results = aniso.check(MODEL, CLAIM, registry=ROOT / "models.yaml", claims_dir=folder)
    assert results.exit_code == 1
    assert [(r.verdict, r.reason) for r in results.document.results] == [
        ("error", "the claim test myclaims/test_mine_never.py::test_no_conclude never concluded: call claim.conclude(...)")]


def test_a_verdict_that_is_no_bool_is_refused_naming_holds(tmp_path):
    folder = _claims(tmp_path, NOT_A_BOOL)
    done = _pytest(tmp_path, folder, "-q")
    line = ("TypeError: claim.conclude: holds is 'no' (str); give True or False (a bool or numpy.bool_), whether "
            "the claim holds")
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert _verdicts(tmp_path) == [("error", line)]


def _in_process_as_the_subprocesses(monkeypatch, tmp_path: Path) -> None:
    """This process's settings as :func:`_env` gives the subprocesses' (every other ``ANISO_*`` variable removed: a
    relative path such as CI's ``ANISO_SPEECH_DIR=../shared/data/speech`` would name another folder from
    ``tmp_path``), and ``tmp_path`` as the working folder."""
    for name in [n for n in os.environ if n.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    for name, value in _env(tmp_path).items():
        if name.startswith("ANISO_"):
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)


def _refused_through_run_and_check(tmp_path, monkeypatch, folder, line: str) -> None:
    """``aniso run --claims-dir folder`` exits 2 with ``line`` and no traceback, and ``aniso.check(claims_dir=folder)``
    raises a ValueError of exactly ``line``."""
    done = _aniso_run(tmp_path, folder)
    assert done.returncode == 2 and line in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    import aniso

    _in_process_as_the_subprocesses(monkeypatch, tmp_path)
    with pytest.raises(ValueError) as exc:
        aniso.check(MODEL, CLAIM, registry=ROOT / "models.yaml", claims_dir=folder)
    assert str(exc.value) == line


class _BareSession:
    """What ``claim.conclude`` reads of a run with no twin, no record and no adjusted family."""
    twin = None
    family_sizes: dict = {}

    @staticmethod
    def record_of(entry, claim_id):
        return None, None, False

    @staticmethod
    def decision(entry, claim_id, holds, inputs, undecided):
        from aniso.judge.verdicts import decide

        return decide(holds, None, undecided=undecided)


def test_conclude_takes_a_numpy_bool_and_refuses_other_types():
    from aniso.judge.results import ClaimResult
    from aniso.session import ClaimContext

    import numpy as np

    for bad in ("no", 1, None, np.float64(1.0)):
        context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                                          model_id=None, test="t"), None)
        with pytest.raises(TypeError, match=r"^claim\.conclude: holds is .*; give True or False"):
            context.conclude(bad, {}, "r")
        assert context.result.verdict == "error" and not context.concluded
    context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                                          model_id=None, test="t"), None)
    context.conclude(np.bool_(False), {}, "r")
    assert context.concluded and context.result.verdict == "does not hold"


def test_a_claim_id_not_in_the_catalogue_is_one_line_naming_file_test_and_id(tmp_path, monkeypatch):
    folder = _claims(tmp_path, UNKNOWN_ID, "test_mine_unknown")
    done = _pytest(tmp_path, folder, "-q")
    line = (f"{folder / 'test_mine_unknown.py'}: the test test_mine is marked @pytest.mark.claim('G.token-nlp-anisotropc'), "
            "an id not in the claims catalogue (did you mean 'G.token-nlp-anisotropic'?); a claim test takes one of "
            "its ids (aniso list claims)")
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: {line}", done.stdout[-3000:] + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    _refused_through_run_and_check(tmp_path, monkeypatch, folder, line)


def test_a_copied_claims_folder_runs_with_the_plugin_named_as_the_usage_page_says(tmp_path):
    """No pytest11 entry point loads the plugin into every pytest run of the environment: docs/usage.md says to
    name it (`pytest -p aniso.pytest_plugin myclaims`), and that command collects a copy of claims/ outside the
    checkout; docs/architecture.md claims no entry point."""
    usage = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    assert "`pytest -p aniso.pytest_plugin myclaims --aniso-models all-MiniLM-L6-v2`" in usage
    assert "pytest11 entry point)" not in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    folder = tmp_path / "myclaims"
    folder.mkdir()
    (folder / "test_godey_pretrained.py").write_bytes((ROOT / "claims" / "test_godey_pretrained.py").read_bytes())
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "aniso.pytest_plugin", "myclaims", "--aniso-models",
                           MODEL, "--co", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "tests collected" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


BAD_MODELS_MARKS = {
    "positional": ('"whisper-tiny.en"', "@pytest.mark.models has a positional argument 'whisper-tiny.en'; it takes "
                   "keywords only: @pytest.mark.models(all_of=(...), any_of=(...), none_of=(...)), each a tuple of "
                   "registry tags"),
    "keyword": ('all_off=("decoder", "text")', "@pytest.mark.models has no keyword 'all_off' (did you mean "
                "'all_of'?); it takes @pytest.mark.models(all_of=(...), any_of=(...), none_of=(...)), each a tuple "
                "of registry tags"),
    "str-none-of": ('all_of=("pretrained", "transformer"), none_of="vision"',
                    "@pytest.mark.models(none_of='vision'): none_of is a str, which would be read as one tag per "
                    "character; give a tuple: none_of=('vision',)"),
    "str-all-of": ('all_of="text"', "@pytest.mark.models(all_of='text'): all_of is a str, which would be read as one "
                   "tag per character; give a tuple: all_of=('text',)"),
    "unknown-tag": ('all_of=("pretrainedd", "text")', "@pytest.mark.models(all_of=('pretrainedd', 'text')): no "
                    "registry row has the tag 'pretrainedd'; did you mean 'pretrained'?"),
}


def _models_test(mark: str) -> str:
    return f"""
        @pytest.mark.claim("{CLAIM}")
        @pytest.mark.models({mark})
        def test_mine(entry, claim):
            claim.conclude(True, {{"x": 1.0}}, "always")
    """


@pytest.mark.parametrize("case", list(BAD_MODELS_MARKS))
def test_a_models_mark_that_would_not_select_the_rows_it_says_is_one_line_naming_file_test_and_why(tmp_path, case):
    """A positional argument, a misspelt keyword, a lone str and a tag no row has were dropped, read one character
    per tag or deselected everything without a word (a text claim then ran on every row of the model set)."""
    mark, why = BAD_MODELS_MARKS[case]
    folder = _claims(tmp_path, _models_test(mark), f"test_mine_{case.replace('-', '_')}")
    done = _pytest(tmp_path, folder, "--co", "-q")
    line = f"{folder / f'test_mine_{case.replace(chr(45), chr(95))}.py'}::test_mine: {why}"
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: {line}", done.stdout[-3000:] + done.stderr


def test_a_models_mark_with_a_tag_no_row_has_is_refused_through_aniso_run_and_check(tmp_path, monkeypatch):
    folder = _claims(tmp_path, _models_test('all_of=("pretrainedd", "text")'), "test_mine_tag_check")
    line = (f"{folder / 'test_mine_tag_check.py'}::test_mine: @pytest.mark.models(all_of=('pretrainedd', 'text')): "
            "no registry row has the tag 'pretrainedd'; did you mean 'pretrained'?")
    _refused_through_run_and_check(tmp_path, monkeypatch, folder, line)


def test_the_suite_s_own_models_marks_are_well_formed_and_a_refused_mark_selects_no_row_in_the_registry_check(
        tmp_path):
    """Every ``models`` mark of claims/ passes the check the plugin makes; the registry's reading of the claim tests'
    source takes a mark the plugin refuses for no selection (None), not for the rows a str's characters select."""
    from aniso.registry.claimtests import row_selections

    selections = row_selections(ROOT / "claims")
    assert selections and all(s is not None for tests in selections.values() for s in tests)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "test_x.py").write_text("import pytest\n" + textwrap.dedent(_models_test('none_of="vision"')))
    assert row_selections(folder) == {CLAIM: (None,)}


def test_a_test_marked_with_two_claims_is_refused_naming_both_ids(tmp_path):
    """The nearer id was measured and the other dropped without a word."""
    folder = _claims(tmp_path, f"""
        @pytest.mark.claim("R.encoder-flat-profile")
        @pytest.mark.claim("{CLAIM}")
        @pytest.mark.models(all_of=("pretrained", "text", "subword", "transformer"))
        def test_two(entry, claim):
            claim.conclude(True, {{"x": 1.0}}, "always")
    """, "test_mine_two")
    done = _pytest(tmp_path, folder, "--co", "-q")
    line = (f"{folder / 'test_mine_two.py'}::test_two: the test is marked @pytest.mark.claim twice, "
            f"'{CLAIM}' and 'R.encoder-flat-profile'; a claim test measures one claim: write one test per claim")
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: {line}", done.stdout[-3000:] + done.stderr


def test_a_claim_test_without_an_entry_argument_is_told_what_to_add():
    """Its error verdict said only "this claim test has no model"."""
    from aniso.judge.results import ClaimResult
    from aniso.session import ClaimContext

    context = ClaimContext(None, ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                             model_id=None, test="t"), None)
    with pytest.raises(RuntimeError) as exc:
        context.stats()
    assert str(exc.value) == (f"{CLAIM}: this claim test has no model: give it an 'entry' argument and a mark "
                              "selecting its registry rows by tag, e.g. @pytest.mark.models(all_of=(\"pretrained\", "
                              "\"text\")) over def test_x(entry, claim)")


def test_a_verdict_given_beside_a_nan_measured_number_names_it_in_its_reason():
    """`claim.conclude(True, {"max_avg_cos": nan}, rule)` was recorded as holds with the number null and no word
    (claims/ gives NaN numbers beside a verdict too: an empty list's maximum, so NaN is named, not refused)."""
    import numpy as np

    from aniso.judge.results import ClaimResult
    from aniso.session import ClaimContext

    note = ("measured max_avg_cos is NaN (not a number; null in results.json): the verdict was given beside it, check "
            "that the rule does not rest on it")
    for holds, nan in ((True, float("nan")), (False, np.float32("nan"))):
        context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                                      model_id=None, test="t"), None)
        context.conclude(holds, {"max_avg_cos": nan, "d": 384, "kind": "x"}, "r")
        assert context.result.verdict == ("holds" if holds else "does not hold")
        assert context.result.reason.endswith(note) and context.result.reason.count("NaN") == 1, context.result.reason
    context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                                  model_id=None, test="t"), None)
    context.conclude(True, {"max_avg_cos": 0.5, "profile": [float("nan")]}, "r")
    assert "NaN" not in context.result.reason


TWO_TESTS = f"""
    @pytest.mark.claim("{CLAIM}")
    def test_a_does_not_hold(claim):
        claim.conclude(False, {{"max_avg_cos": 0.01}}, "a rule")


    @pytest.mark.claim("{CLAIM}")
    def test_b_holds(claim):
        claim.conclude(True, {{"max_avg_cos": 0.9}}, "a rule")
"""


@pytest.mark.parametrize("stop", [["-x"], ["--maxfail", "1"]])
def test_a_run_stopped_by_x_says_its_results_are_not_the_whole_selection(tmp_path, stop):
    """``pytest -x`` stopped after the first failing claim test; results.json, the report and the summary held that
    one result with no word of the stop, so a report read later looked like the whole selection."""
    folder = _claims(tmp_path, TWO_TESTS, f"test_stop{len(stop)}")
    done = _pytest(tmp_path, folder, "-q", *stop)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    (results,) = (tmp_path / "reports").glob("*/results.json")
    doc = json.loads(results.read_text())
    assert len(doc["results"]) == 1
    line = ("the run stopped early (pytest: stopping after 1 failures): 1 of 2 selected claim test(s) were not run "
            f"(first: myclaims/test_stop{len(stop)}.py::test_b_holds); these results are not the whole selection")
    assert doc["run_errors"] == [line]
    assert line in done.stdout.replace("\n", " ") or line[:60] in done.stdout
    assert "not the whole selection" in (results.parent / "report.html").read_text()


def test_a_run_not_stopped_has_no_such_line(tmp_path):
    folder = _claims(tmp_path, TWO_TESTS, "test_nostop")
    done = _pytest(tmp_path, folder, "-q")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    (results,) = (tmp_path / "reports").glob("*/results.json")
    doc = json.loads(results.read_text())
    assert len(doc["results"]) == 2 and doc["run_errors"] == []


MEASURED_A_NUMBER = f"""
    @pytest.mark.claim("{CLAIM}")
    def test_a_number(claim):
        claim.conclude(True, 0.0, "always")

    @pytest.mark.claim("{CLAIM}")
    def test_a_dict(claim):
        claim.conclude(True, {{"max_avg_cos": 0.5}}, "always")
"""


def test_conclude_refuses_a_measured_that_is_no_mapping_naming_measured():
    from aniso.judge.results import ClaimResult
    from aniso.session import ClaimContext

    for bad in (0.0, [("x", 1.0)], "x=1", {1: 2.0}):
        context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="",
                                                          statement="s", model_id=None, test="t"), None)
        with pytest.raises(TypeError, match=r"^claim\.conclude: measured is .*; give a dict \{name: value\}"):
            context.conclude(True, bad, "r")
        assert context.result.verdict == "error" and not context.concluded and context.result.measured == {}


def test_a_measured_number_fails_its_test_alone_and_the_table_and_report_are_written(tmp_path):
    folder = _claims(tmp_path, MEASURED_A_NUMBER)
    done = _pytest(tmp_path, folder, "-q")
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout, out[-4000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-4000:]
    assert "aniso: claim verdicts" in done.stdout and "max_avg_cos=0.5" in done.stdout, out[-4000:]
    (run,) = (tmp_path / "reports").glob("*/results.json")
    assert (run.parent / "report.html").is_file()
    (first, second) = _verdicts(tmp_path)
    assert first == ("error", "TypeError: claim.conclude: measured is 0.0 (float); give a dict {name: value} of the "
                              "numbers the verdict rests on, names as str")
    assert second[0] == "holds"


def test_a_test_taking_the_claim_fixture_without_a_claim_mark_is_refused_at_collection(tmp_path):
    """It was collected without a word and errored at setup with the fixture's 13-line source at each run."""
    folder = _claims(tmp_path, """
        @pytest.mark.models(all_of=("pretrained", "text"))
        def test_no_mark(entry, claim):
            claim.conclude(True, {"x": 1.0}, "always")
    """, "test_mine_no_mark")
    done = _pytest(tmp_path, folder, "--co", "-q")
    line = (f"{folder / 'test_mine_no_mark.py'}::test_no_mark: the test takes the 'claim' fixture but has no "
            "@pytest.mark.claim; mark it with the claim it measures, e.g. @pytest.mark.claim(\"G.token-nlp-anisotropic\")"
            " (aniso list claims)")
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: {line}", done.stdout[-3000:] + done.stderr


def test_a_parameter_or_fixture_of_its_own_named_claim_is_no_claim_test(tmp_path):
    """A test whose own parameter (or own conftest fixture) is named ``claim`` does not take the plugin's fixture:
    it is collected and run as any test (the check above refused the suite's own unit tests of that kind)."""
    folder = _claims(tmp_path, """
        @pytest.fixture
        def claim():
            return "mine"


        @pytest.mark.parametrize("claim", ["G.token-nlp-anisotropic"])
        def test_parametrised(claim):
            assert claim.startswith("G.")


        def test_own_fixture(claim):
            assert claim == "mine"
    """, "test_own_claim_names")
    done = _pytest(tmp_path, folder, "-q")
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr


def test_a_claim_file_named_twice_with_keep_duplicates_is_refused_before_the_run(tmp_path):
    """Both copies ran, the results file held one result twice: no report, exit 1, and `aniso report` refused it."""
    folder = _claims(tmp_path, f"""
        @pytest.mark.claim("{CLAIM}")
        def test_once(claim):
            claim.conclude(True, {{"x": 1.0}}, "always")
    """, "test_mine_twice")
    path = str(folder / "test_mine_twice.py")
    done = _pytest(tmp_path, path, path, "--keep-duplicates", "-q")
    line = ("myclaims/test_mine_twice.py::test_once is collected twice (a file or folder named twice with "
            "--keep-duplicates); a claim test is judged once: name each file once, or leave out --keep-duplicates")
    assert done.returncode == 4 and done.stderr.strip() == f"ERROR: {line}", done.stdout[-3000:] + done.stderr
    assert not list((tmp_path / "reports").glob("*/results.json"))


def test_a_registry_given_as_two_words_that_pytest_takes_for_its_root_folder_is_warned_of(tmp_path):
    """pytest took the checkout holding the registry for its root folder (its ini file, node ids under it) without
    a word; given as one word it does not."""
    folder = _claims(tmp_path, f"""
        @pytest.mark.claim("{CLAIM}")
        def test_once(claim):
            claim.conclude(True, {{"x": 1.0}}, "always")
    """, "test_mine_root")
    registry = os.path.relpath(ROOT / "models.yaml", tmp_path)
    args = [sys.executable, "-m", "pytest", str(folder), "-p", "aniso.pytest_plugin", "-p", "no:randomly", "-p",
            "no:cacheprovider", "--aniso-models", MODEL, "--co", "-q"]
    done = subprocess.run([*args, "--aniso-registry", registry], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    line = (f"aniso: pytest took {ROOT} (the folder of --aniso-registry {registry}) for its root folder, not this "
            f"folder: give --aniso-registry={registry} as one word")
    assert done.returncode == 0 and done.stderr.splitlines().count(line) == 1, done.stdout[-3000:] + done.stderr
    done = subprocess.run([*args, f"--aniso-registry={registry}"], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "as one word" not in done.stderr, done.stdout[-3000:] + done.stderr


@pytest.mark.parametrize("value, kept", [("np.float32(0.25)", 0.25), ("np.int64(3)", 3), ("torch.tensor(0.5)", 0.5),
                                         ("[np.float32(0.5), {'a': np.int64(1)}]", [0.5, {"a": 1}])])
def test_numpy_and_torch_numbers_in_measured_are_written_as_numbers(tmp_path, value, kept):
    """A numpy scalar or a 0-d tensor in measured passed the test, then the results' writing failed at the end of the
    run (PydanticSerializationError, 84 lines): no results.json and no report, every verdict lost."""
    folder = _claims(tmp_path, f"""
        import numpy as np
        import torch


        @pytest.mark.claim("{CLAIM}")
        def test_numbers(claim):
            claim.conclude(True, {{"value": {value}}}, "a rule")
    """, f"test_numbers_{abs(hash(value)) % 1000}")
    done = _pytest(tmp_path, folder, "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (results,) = (tmp_path / "reports").glob("*/results.json")
    assert json.loads(results.read_text())["results"][0]["measured"] == {"value": pytest.approx(kept)
                                                                        if not isinstance(kept, list) else kept}
    assert (results.parent / "report.html").is_file()


@pytest.mark.parametrize("value, says", [("np.zeros(3)", "an array of shape (3,)"), ("1 + 2j", "(1+2j) (complex)")])
def test_a_measured_value_that_is_no_number_is_refused_naming_its_key(value, says):
    import numpy as np  # noqa: F401 (the values' names)

    from aniso.session import _plain_value

    with pytest.raises(TypeError, match=r"^claim\.conclude: measured\['v'\] is " + re.escape(says)):
        _plain_value(eval(value), "measured['v']")


def test_an_infinite_measured_number_is_named_in_the_reason():
    """An infinity was written null in results.json with nothing in the reason (a NaN was named)."""
    from aniso.session import nan_note

    assert nan_note({"value": float("inf")}).startswith("measured value is infinite (null in results.json): ")


def test_a_second_conclude_in_one_test_is_refused_not_taken_silently():
    """A user's test that concluded holds, then does not hold, had its first verdict replaced without a word."""
    from aniso.judge.results import ClaimResult
    from aniso.session import ClaimContext

    context = ClaimContext(_BareSession(), ClaimResult(claim_id=CLAIM, paper="G", section="", figure="", statement="s",
                                                       model_id=None, test="t"), None)
    context.conclude(True, {"x": 1.0}, "r")
    with pytest.raises(RuntimeError) as refused:
        context.conclude(False, {"x": 2.0}, "r")
    assert str(refused.value) == ("claim.conclude: called a second time in this test (the first concluded holds: x=1); "
                                  "a claim test concludes once, with the verdict its numbers decide")
    assert context.result.verdict == "holds" and context.result.measured == {"x": 1.0}


CONCLUDES_TWICE = f"""
    @pytest.mark.claim("{CLAIM}")
    def test_twice(claim):
        claim.conclude(True, {{"x": 1.0}}, "always")
        claim.conclude(False, {{"x": 2.0}}, "always")
"""


def test_a_claim_test_that_concludes_twice_fails_naming_it(tmp_path):
    folder = _claims(tmp_path, CONCLUDES_TWICE, "test_mine_twice")
    done = _pytest(tmp_path, folder, "-q")
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
    assert "RuntimeError: claim.conclude: called a second time in this test" in done.stdout, done.stdout[-3000:]
