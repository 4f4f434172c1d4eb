"""A new user's first runs: single-model runs, exit codes, `aniso diff` across model sets, paths that are wrong,
report folders, corrupt cache entries, temporary registries and file permissions."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from aniso.cli import RUN_EXIT_CODES, main, run_exit_code
from aniso.registry.entries import ModelEntry, Registry
from aniso.judge.results import ClaimResult, ResultsDocument, provenance, read_results, write_results
from aniso.session import AnisoSession, Skip
from aniso.common.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _entry(ident: str, role: str = "encoder", **extra) -> ModelEntry:
    return ModelEntry.model_validate(dict(id=ident, source={"kind": "hub", "repo": f"org/{ident}"}, modality="text",
                                          granularity="subword", architecture="transformer", role=role,
                                          family="bert" if role == "encoder" else "gpt2", **extra))


def _session(tmp_path, entries, models: str) -> AnisoSession:
    settings = Settings(models=models, report_dir=str(tmp_path / "reports"), cache_dir=str(tmp_path / "cache"))
    return AnisoSession.start(settings, Registry(entries), tmp_path)


def _result(model: str, verdict: str = "holds", test: str | None = None) -> ClaimResult:
    return ClaimResult(claim_id="R.encoder-flat-profile", paper="R", section="§4.1", figure="Fig. 1", statement="s",
                       model_id=model, test=test or f"claims/t.py::t[{model}]", verdict=verdict)


# -- 1. a claim that compares with models outside a single-model run ---------------------------------------------

def test_a_claim_needing_models_outside_the_run_is_not_applicable_and_must_run_accepts_it(tmp_path):
    """`aniso run all-MiniLM-L6-v2`: the decoders R.encoder-flat-profile compares with are outside the model set,
    so the claim is skipped as not applicable (naming them), and the must_run model does not fail the run."""
    enc, dec = _entry("enc", must_run=True), _entry("dec", role="decoder")
    session = _session(tmp_path, [enc, dec], "enc")
    ctx = session.claim("R.encoder-flat-profile", enc, "claims/t.py::t[enc]")
    with pytest.raises(Skip, match=r"not applicable to this run: needs a decoder to compare with, and the model "
                                   r"set 'enc' has none \(outside it: dec; add one to --aniso-models"):
        ctx.require_others("a decoder to compare with", [], [], ("decoder",))
    session.record(ctx.result, seconds=0.0, skipped="Skipped: not applicable")
    assert ctx.result.skip_kind == "not-applicable"
    assert session.finish() is False and session.must_run_failures == []


def test_a_compared_model_in_the_run_but_unavailable_still_fails_a_must_run_model(tmp_path):
    enc, dec = _entry("enc", must_run=True), _entry("dec", role="decoder")
    session = _session(tmp_path, [enc, dec], "enc,dec")
    ctx = session.claim("R.encoder-flat-profile", enc, "claims/t.py::t[enc]")
    with pytest.raises(Skip, match=r"^needs a decoder to compare with; unavailable: dec: no weights$"):
        ctx.require_others("a decoder to compare with", [], ["dec: no weights"], ("decoder",))
    session.record(ctx.result, seconds=0.0, skipped="needs a decoder; unavailable: dec: no weights")
    assert session.finish() is True
    assert session.must_run_failures[0].startswith("enc is marked must_run but 1 claim test(s) skipped")


def test_the_report_shows_what_failed_the_run(tmp_path):
    """A run failed by a must_run skip never writes a report that says every claim holds."""
    enc = _entry("enc", must_run=True)
    session = _session(tmp_path, [enc], "enc")
    session.record(_result("other"), seconds=0.0)
    skipped = _result("enc")
    session.record(skipped, seconds=0.0, skipped="no weights here")
    assert session.finish() is True
    html = session.report_path.read_text()
    doc = read_results(session.report_path.with_name("results.json"))
    assert doc.run_errors == session.must_run_failures
    assert "This run failed" in html and "enc is marked must_run" in html
    assert "every measured claim holds" not in html


# -- 2. exit codes of `aniso run` --------------------------------------------------------------------------------

@pytest.mark.parametrize("pytest_code, measured, expected", [
    (0, 3, 0), (1, 3, 1), (3, 0, 1), (4, 0, 2), (2, 1, 2), (0, 0, 3), (5, 0, 3)])
def test_run_exit_codes(pytest_code, measured, expected):
    assert run_exit_code(pytest_code, measured) == expected


def test_run_documents_its_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # the help wraps a long line to the terminal's width
    assert "exit codes:" in out and all(f"\n  {k}  " in out and f"{k} {v}" in flat for k, v in RUN_EXIT_CODES.items())
    readme = (ROOT / "README.md").read_text()
    assert all(f"| {k} | {v} |" in readme for k, v in RUN_EXIT_CODES.items())


def _tiny_registry(tmp_path, tiny_bert_dir) -> Path:
    reg = tmp_path / "models.yaml"
    reg.write_text(f"models:\n  - id: tiny\n    source: {{kind: local, path: {tiny_bert_dir}}}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n"
                   "    must_run: true\n"
                   "  - id: dec\n    source: {kind: hub, repo: org/not-here}\n    modality: text\n"
                   "    granularity: subword\n    architecture: transformer\n    role: decoder\n    family: gpt2\n")
    return reg


def _env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    env.update(ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"), CI="1",
               TMPDIR=str(tmp_path / "tmp"), HF_HUB_OFFLINE="1")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


def test_a_single_model_run_whose_only_claim_is_not_applicable_exits_3(tmp_path, tiny_bert_dir, monkeypatch, capsys):
    """A real `aniso run` (in this process) of a must_run encoder alone with R.encoder-flat-profile: not applicable
    (no decoder in the run), no must_run error, nothing measured: exit code 3, and the report says why."""
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in [k for k in os.environ if k.startswith("ANISO_") and k not in ("ANISO_CACHE_DIR", "ANISO_REPORT_DIR")]:
        monkeypatch.delenv(name)
    code = main(["run", "tiny", "--claims", "R.encoder-flat-profile", "--claims-dir", str(ROOT / "claims"),
                 "--registry", str(_tiny_registry(tmp_path, tiny_bert_dir)), "--",
                 "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code == 3, out[-3000:] + err[-3000:]
    assert "must_run" not in out and "nothing measured" in err
    results = json.loads(next((tmp_path / "reports").glob("run-*/results.json")).read_text())
    assert [(r["verdict"], r["skip_kind"]) for r in results["results"]] == [("skipped", "not-applicable")]
    assert "outside it: dec" in results["results"][0]["reason"] and results["run_errors"] == []


# -- 3. `aniso diff` of runs over different model sets -------------------------------------------------------------

def _doc(tmp_path, name, results) -> Path:
    path = tmp_path / name / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None), results=results))
    return path


def test_diff_of_a_one_model_run_against_a_full_run_compares_what_both_have(tmp_path, capsys):
    full = _doc(tmp_path, "full", [_result("a"), _result("b"), _result("c", "does not hold")])
    one = _doc(tmp_path, "one", [_result("a", "does not hold")])
    assert main(["diff", str(full), str(one)]) == 1
    out = capsys.readouterr().out
    assert "1 verdict" in out and "| removed" not in out
    assert "compared the 1 result(s) both have, left aside 2 only in" in out and "0 only in" in out
    assert main(["diff", "--all", str(full), str(one)]) == 1
    assert "2 removed" in capsys.readouterr().out


# -- 4. paths that are wrong: one line naming the path and the setting -------------------------------------------

def _read_only_folder(tmp_path) -> Path:
    if os.geteuid() == 0:  # root writes through permission bits; /sys is read-only to it too
        return Path("/sys")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.parametrize("case", ["corpus is a folder", "cache is a file", "cache is read-only",
                                  "image_dir is a file"])
def test_a_wrong_path_gives_one_line_naming_the_setting(tmp_path, case, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    variable, value, message = {
        "corpus is a folder": ("ANISO_CORPUS", tmp_path, "is a folder; it must name a text file"),
        "cache is a file": ("ANISO_CACHE_DIR", tmp_path / "file", "is a file; it must name a folder"),
        "cache is read-only": ("ANISO_CACHE_DIR", _read_only_folder(tmp_path), "cannot write in"),
        "image_dir is a file": ("ANISO_IMAGE_DIR", tmp_path / "file", "is a file; it must name a folder"),
    }[case]
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(variable, str(value))
    for command in (["run", "all-MiniLM-L6-v2"], ["stats", "all-MiniLM-L6-v2"]):
        assert main(command + ["--registry", str(ROOT / "models.yaml")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and variable in err and str(value) in err and message in err, err


@pytest.mark.parametrize("variable", ["ANISO_CACHE_DIR", "ANISO_REPORT_DIR"])
def test_a_wrong_cache_or_report_path_stops_pytest_with_one_line(tmp_path, monkeypatch, variable):
    """`pytest claims/` checks the paths when it starts (the plugin's configure hook), the report folder included,
    before anything is computed: a usage error, one line."""
    from aniso.pytest_plugin import pytest_configure

    class Config:
        rootpath = ROOT
        args = [str(ROOT / "claims")]  # the files and folders pytest collects
        invocation_params = type("InvocationParams", (), {"args": (str(ROOT / "claims"),),  # (pytest's command line)
                                                          "dir": ROOT})

        class hook:  # no plugin hands a plan: the plugin reads its options and the environment
            @staticmethod
            def pytest_aniso_plan(config):
                return None

        def addinivalue_line(self, *args):
            pass

        def getoption(self, name):
            return None

    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv(variable, str(tmp_path / "file"))
    name = variable[len("ANISO_"):].lower()
    with pytest.raises(pytest.UsageError) as exc:
        pytest_configure(Config())
    assert str(exc.value) == (f"aniso settings: setting {name} ({variable}, --aniso-{name.replace('_', '-')}): "
                              f"{tmp_path / 'file'} is a file; it must name a folder (it is created if missing)")


# -- 5. nothing lost: report folders, corrupt cache entries, temporary registries, permissions --------------------

def test_runs_started_in_the_same_second_get_folders_of_their_own(tmp_path):
    from datetime import datetime

    from aniso.session import _new_run_folder

    now = datetime(2026, 11, 25, 3, 0, 0)
    folders = []
    threads = [threading.Thread(target=lambda: folders.append(_new_run_folder(tmp_path, now))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(folders)) == 8
    assert sorted(f.name for f in folders) == sorted(["run-20261125-030000"] + [f"run-20261125-030000-{n}"
                                                                                for n in range(2, 9)])


def test_two_sessions_finishing_in_the_same_second_keep_both_reports(tmp_path):
    for model in ("a", "b"):
        session = _session(tmp_path, [], "small")
        session.record(_result(model), seconds=0.0)
        session.finish()
    docs = [read_results(p) for p in (tmp_path / "reports").glob("run-*/results.json")]
    assert sorted(d.results[0].model_id for d in docs) == ["a", "b"]


def test_a_corrupt_cache_entry_is_moved_aside_and_the_warning_says_so(tmp_path):
    from aniso.stats.cache import JsonCache, StatsCache

    (tmp_path / "k.safetensors").write_bytes(b"not safetensors")
    (tmp_path / "k.json").write_text("{truncated")
    with pytest.warns(RuntimeWarning, match=r"k\.safetensors is corrupt .*moved aside to k\.safetensors\.corrupt, "
                                            r"k\.json\.corrupt; recomputing it"):
        assert StatsCache(tmp_path).load("k") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json.corrupt", "k.safetensors.corrupt", "seal.key"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert StatsCache(tmp_path).load("k") is None  # absent now: no second warning
    blocks = tmp_path / "blocks"
    JsonCache(blocks).save("s", {"x": 1})
    (blocks / "s.json").write_text((blocks / "s.json").read_text().replace('"x": 1', '"x": 2'))
    with pytest.warns(RuntimeWarning, match=r"seal does not verify.*moved aside to s\.json\.corrupt"):
        assert JsonCache(blocks).load("s") is None
    assert sorted(p.name for p in blocks.iterdir()) == ["s.json.corrupt", "seal.key"]


def test_the_temporary_registry_of_a_detected_model_is_removed_also_on_error(tmp_path, tiny_bert_dir, monkeypatch):
    import tempfile

    import pytest as pytest_module

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def crash(*args, **kwargs):
        raise RuntimeError("the run broke")

    monkeypatch.setattr(pytest_module, "main", crash)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(RuntimeError, match="the run broke"):
        main(["run", str(tiny_bert_dir), "--registry", str(ROOT / "models.yaml")])
    assert not list(tmp_path.glob("aniso-run-*"))
    assert "ANISO_REGISTRY" not in os.environ


def test_reports_and_results_get_the_permissions_of_the_umask(tmp_path):
    from aniso.report import write_html_report

    old = os.umask(0o022)
    try:
        path = _doc(tmp_path, "run", [_result("a")])
        html = write_html_report(path, path.with_name("report.html"))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and stat.S_IMODE(html.stat().st_mode) == 0o644


def test_the_console_of_a_single_model_run_fits_100_columns_without_pytest_noise(tmp_path, tiny_bert_dir,
                                                                                  monkeypatch, capsys):
    """`aniso run MODEL` (output no terminal: 100 columns): every line fits, claim tests that no model of the run
    selects are deselected rather than listed as skips ("got empty parameter set"), skip reasons are grouped with
    their counts, and the hint for the models left out is a command that works as typed."""
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in [k for k in os.environ if k.startswith("ANISO_") and k not in ("ANISO_CACHE_DIR", "ANISO_REPORT_DIR")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("COLUMNS", raising=False)
    code = main(["run", "tiny", "--claims", "G.token-nlp-anisotropic,R.encoder-flat-profile,G.isotropic-baseline",
                 "--claims-dir", str(ROOT / "claims"), "--registry", str(_tiny_registry(tmp_path, tiny_bert_dir)),
                 "--", "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    assert code in (0, 1), out[-3000:] + err[-3000:]
    lines = out.splitlines()
    long = [line for line in lines if len(line) > 100 and len(line.split()) > 1]  # a path alone may be longer
    assert not long, long
    assert "empty parameter set" not in out and "SKIPPED [" not in out and "deselected" in out
    assert any(line.startswith("claim ") and " verdict " in line for line in lines)
    assert any(re.match(r"^\s+1 x not applicable to this run: needs a decoder", line) for line in lines), out
    left_out = " ".join(out.split("registry model(s) outside the model set", 1)[1].split())
    assert "all of them with: pytest claims --aniso-models all" in left_out


def test_the_first_run_of_a_new_model_reports_its_new_findings_and_exits_0(tmp_path, tiny_bert_dir, monkeypatch,
                                                                         capsys):
    """`aniso run FOLDER` on a model the registry lacks: the claims that do not hold are new findings (the test
    passes, the reason says so), underpowered verdicts do not fail, the console names the findings in one line with
    the `aniso record` command that records them, and the run exits 0; that command then adds the row and its
    records to the registry."""
    import shutil

    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    for name in [k for k in os.environ if k.startswith("ANISO_") and k not in ("ANISO_CACHE_DIR", "ANISO_REPORT_DIR")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("COLUMNS", raising=False)
    registry = _tiny_registry(tmp_path, tiny_bert_dir)
    folder = tmp_path / "my-bert"
    shutil.copytree(tiny_bert_dir, folder)
    code = main(["run", str(folder), "--claims", "X.rogue-dimensions,G.drift-correlation-spearman",
                 "--claims-dir", str(ROOT / "claims"), "--registry", str(registry), "--",
                 "--aniso-n-sequences", "8", "--aniso-max-length", "16", "--aniso-n-bootstrap", "0"])
    out, err = capsys.readouterr()
    results = read_results(next((tmp_path / "reports").glob("run-*/results.json")))
    mine = [r for r in results.results if r.model_id == "my-bert"]
    new = [r for r in mine if r.verdict == "does not hold"]
    assert new and all("new" in r.reason for r in new), [(r.claim_id, r.verdict, r.reason) for r in mine]
    flat = " ".join(out.split())
    written = next((tmp_path / "reports").glob("run-*/results.json"))
    assert (f"{len(new)} claim(s) do not hold on my-bert, which has no record: new findings to look at; record "
            f"them with: aniso record {written}") in flat, out[-3000:]
    assert code == 0, out[-3000:] + err[-3000:]
    monkeypatch.chdir(tmp_path / "reports")  # no models.yaml here: the registry the run read is the one recorded into
    assert main(["record", str(written), "--dry-run"]) == 0
    assert f"{registry} unchanged" in capsys.readouterr().out
    link = tmp_path / "link.yaml"  # a registry named through a link is written through it, the link kept
    link.symlink_to(registry)
    assert main(["record", str(written), "--registry", str(link)]) == 0
    assert link.is_symlink() and "my-bert" in registry.read_text()
    from aniso.registry.entries import load_registry

    entry = load_registry(registry).get("my-bert")
    assert set(entry.expected) == {r.claim_id for r in new} and entry.source.kind == "local"
