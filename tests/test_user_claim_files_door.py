"""A user's claim files run through the pytest door: each claim result names its test by file and name whatever
pytest took for its rootdir, and a report the writer refuses never loses the run's results. Rows of
docs/bad-input.md."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from aniso.common.settings import Settings
from aniso.registry.entries import ModelEntry, Registry
from aniso.session import AnisoSession
from test_user_claim_tests import _env

ROOT = Path(__file__).resolve().parents[1]
MODEL = "all-MiniLM-L6-v2"
CLAIM = "G.token-nlp-anisotropic"

MODULE = f"""
    import pytest
    pytestmark = [pytest.mark.claim("{CLAIM}"), pytest.mark.models(all_of=("pretrained", "text"))]

    def test_a(entry, claim):
        claim.conclude({{holds}}, {{{{"max_avg_cos": 0.3}}}}, "{{rule}}")
"""


def test_two_user_files_with_one_test_name_keep_their_file_in_the_results_when_the_registry_is_a_separate_argument(
        tmp_path):
    user = tmp_path / "u"
    user.mkdir()
    (user / "test_one.py").write_text(textwrap.dedent(MODULE.format(holds="True", rule="one")))
    (user / "test_two.py").write_text(textwrap.dedent(MODULE.format(holds="False", rule="two")))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "aniso.pytest_plugin", "test_one.py", "test_two.py",
                           "-p", "no:randomly", "-p", "no:cacheprovider", "--aniso-models", MODEL,
                           "--aniso-registry", str(ROOT / "models.yaml"), "-q"],
                          cwd=user, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    out = done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in out, out
    (results,) = (tmp_path / "reports").glob("*/results.json")
    tests = sorted(r["test"] for r in json.loads(results.read_text())["results"])
    assert tests == [f"test_one.py::test_a[{MODEL}]", f"test_two.py::test_a[{MODEL}]"], out
    assert done.returncode == 1, out


def test_a_report_the_writer_refuses_keeps_results_json_and_says_why_in_one_line(tmp_path, monkeypatch):
    import aniso.report

    def refuse(results_json, report_html):
        raise ValueError(f"{results_json}: results[1]: listed twice")

    monkeypatch.setattr(aniso.report, "write_html_report", refuse)
    entry = ModelEntry.model_validate(dict(
        id="m", source={"kind": "hub", "repo": "x/m"}, modality="text", granularity="subword",
        architecture="transformer", role="encoder", family="bert"))
    session = AnisoSession.start(Settings(report_dir=str(tmp_path / "r"), cache_dir=str(tmp_path / "c")),
                                 Registry([entry]), tmp_path)
    for name in ("t1", "t2"):
        context = session.claim(CLAIM, entry, name)
        context.conclude(True, {"max_avg_cos": 0.3}, "rule")
        session.record(context.result, seconds=0.0)
    assert session.finish() is True
    (results,) = (tmp_path / "r").glob("*/results.json")
    (said,) = session.must_run_failures
    assert "\n" not in said and "listed twice" in said and f"the results are kept in {results}" in said, said
    assert len(json.loads(results.read_text())["results"]) == 2


def _user_file(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    user = tmp_path / "u"
    user.mkdir()
    (user / "test_user.py").write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "aniso.pytest_plugin", "test_user.py", "-p",
                           "no:randomly", "-p", "no:cacheprovider", "--aniso-models", MODEL,
                           f"--aniso-registry={ROOT / 'models.yaml'}", "--co", "-q"],
                          cwd=user, env=_env(tmp_path), capture_output=True, text=True, timeout=300)


def test_a_module_claim_mark_without_a_models_mark_on_a_test_taking_entry_is_one_line(tmp_path):
    done = _user_file(tmp_path, f"""
        import pytest
        pytestmark = pytest.mark.claim("{CLAIM}")

        def test_module_marked(entry, claim):
            claim.conclude(True, {{"max_avg_cos": 0.3}}, "module mark")
    """)
    out = done.stdout + done.stderr
    assert done.returncode == 4 and "Traceback" not in out and "pluggy" not in out, out
    (line,) = [l for l in out.splitlines() if l.startswith("ERROR")]
    assert line == (f"ERROR: {tmp_path / 'u' / 'test_user.py'}::test_module_marked: the claim test takes an 'entry' "
                    "argument but has no @pytest.mark.models selecting its registry rows; add one, e.g. "
                    "@pytest.mark.models(all_of=(\"pretrained\", \"text\"))"), out


def test_a_claim_mark_with_its_id_as_a_keyword_is_one_line_giving_the_positional_form(tmp_path):
    done = _user_file(tmp_path, f"""
        import pytest

        @pytest.mark.claim(id="{CLAIM}")
        @pytest.mark.models(all_of=("pretrained", "text"))
        def test_keyword(entry, claim):
            claim.conclude(True, {{"max_avg_cos": 0.3}}, "keyword")
    """)
    out = done.stdout + done.stderr
    assert done.returncode == 4 and "Traceback" not in out, out
    (line,) = [l for l in out.splitlines() if l.startswith("ERROR")]
    assert line == (f"ERROR: {tmp_path / 'u' / 'test_user.py'}::test_keyword: the test is marked "
                    f"@pytest.mark.claim(id='{CLAIM}'); the claim id is given positionally and alone: "
                    f"@pytest.mark.claim('{CLAIM}') (aniso list claims)"), out


def test_pytest_markers_lists_each_aniso_mark_once_with_its_whole_signature(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "--markers"],
                          cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    claim = [line for line in lines if line.startswith("@pytest.mark.claim")]
    models = [line for line in lines if line.startswith("@pytest.mark.models")]
    assert done.returncode == 0 and len(claim) == 1 and len(models) == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert claim[0].startswith("@pytest.mark.claim(id):"), claim
    assert models[0].startswith("@pytest.mark.models(all_of=(), any_of=(), none_of=()):"), models
