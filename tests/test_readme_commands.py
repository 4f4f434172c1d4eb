"""The README's command-line block runs as written, every command of it (with tiny sizes added after `--`), so the
README cannot drift from the command line; and the README stays short and current (at most 250 lines, no dated
measurement log, every link to a documentation page that exists)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()

#: Sizes that make a run take seconds (after `--`: pytest options of the run).
TINY = ["--", "--aniso-n-sequences", "8", "--aniso-max-length", "32"]


def _command_block() -> list[str]:
    after = README.split("## The command line", 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, re.S).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo, check=True,
                   capture_output=True)


def test_the_readme_commands_run(tmp_path, tiny_bert_dir, monkeypatch, capsys):
    """Each command of the README's block, in a working folder of the test's own (the registry and the claims are
    found in this source tree, as an editable install finds them): `./my-bert-folder` is a tiny BERT there,
    `origin/main` a ref of a git repository there, and `reports/run-A` the folder of the registry run."""
    commands = _command_block()
    assert [c.split()[:2] for c in commands] == [["aniso", "list"], ["aniso", "run"], ["aniso", "run"],
                                                 ["aniso", "run"], ["aniso", "diff"], ["aniso", "report"],
                                                 ["aniso", "record"]], commands
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(tiny_bert_dir, work / "my-bert-folder")
    for name in [k for k in os.environ if k.startswith("ANISO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where `aniso run` writes a detected model's registry
    monkeypatch.chdir(work)
    for line in commands:
        argv = shlex.split(line)[1:]
        if argv[0] == "run" and argv[1] == "--changed-since":
            # A repository whose origin/main is its HEAD and whose registry is unchanged since: nothing to run.
            repo = tmp_path / "repo"
            repo.mkdir()
            shutil.copy(ROOT / "models.yaml", repo / "models.yaml")
            _git(repo, "init", "-q")
            _git(repo, "add", "models.yaml")
            _git(repo, "commit", "-q", "-m", "registry")
            _git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
            monkeypatch.chdir(repo)
            assert main(argv) == 0, line
            assert "was added or changed since origin/main; nothing to run" in capsys.readouterr().err
            monkeypatch.chdir(work)
            continue
        if argv[0] == "run":
            runs = tmp_path / f"runs-{argv[1].strip('./')}"
            monkeypatch.setenv("ANISO_REPORT_DIR", str(runs))
            extra = (["--claims", "G.token-nlp-anisotropic"] if "--claims" not in argv else []) + TINY
            code = main(argv + extra + (["--aniso-n-bootstrap", "0"] if argv[1] == "all-MiniLM-L6-v2" else []))
            out, err = capsys.readouterr()
            assert code == 0, out[-3000:] + err[-3000:]
            (written,) = runs.glob("run-*/results.json")
            results = json.loads(written.read_text())
            if argv[1] == "all-MiniLM-L6-v2":  # its folder becomes the README's reports/run-A
                assert re.search(r"^G\.token-nlp-anisotropic +all-MiniLM-L6-v2 ", out, re.M), out[-2000:]
                (work / "reports").mkdir(exist_ok=True)
                shutil.move(str(written.parent), str(work / "reports/run-A"))
            else:  # the folder: an entry detected from its config, every G claim that applies to it measured
                assert ("my-bert-folder is not in the registry; detected modality: text, granularity: subword, "
                        "architecture: transformer, role: encoder") in err
                assert not list(tmp_path.glob("aniso-run-*"))  # the temporary registry is removed again
                mine = [r for r in results["results"] if r["model_id"] == "my-bert-folder"]
                assert {r["claim_id"] for r in mine} >= {"G.token-nlp-anisotropic", "G.drift-correlation-spearman"}
                assert all(r["claim_id"].startswith("G.") for r in results["results"])
                token = next(r for r in mine if r["claim_id"] == "G.token-nlp-anisotropic")
                assert token["verdict"] in ("holds", "does not hold") and token["uncertainty"]["n_boot"] == 1000
            continue
        if argv[0] == "diff":
            shutil.copytree(work / "reports/run-A", work / "reports/run-B")
        assert main(argv) == 0, line
        out = capsys.readouterr().out
        if argv[0] == "list":
            minilm = next(row for row in out.splitlines() if row.startswith("all-MiniLM-L6-v2 "))
            assert " yes " in minilm and "package: here" in minilm
        if argv[0] == "diff":
            assert "no verdict or number changed" in out
        if argv[0] == "report":
            report = work / "reports/run-A/report.html"
            assert report.stat().st_size > 0 and str(Path("reports/run-A/report.html")) in out
        if argv[0] == "record":  # a run at tiny sizes compares no record's numbers: nothing to re-measure
            assert "no stale record" in out


def test_the_readme_is_short_and_holds_no_dated_log():
    lines = README.splitlines()
    assert len(lines) <= 250, len(lines)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", README), re.search(r".{40}\b20\d\d-\d\d-\d\d\b.{40}", README)
    for verdict in ("holds", "does not hold", "expected not to hold", "differs on these inputs", "fragile",
                    "underpowered at this size"):
        assert f"| {verdict} |" in README, verdict


def test_the_readme_links_to_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)(#[^)]*)?\)", README)
    assert len(links) >= 10
    for path, _ in links:
        assert (ROOT / path).is_file(), path
