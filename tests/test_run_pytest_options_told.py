"""pytest options after `aniso run M --` that a claims run cannot take, or a filter that leaves no claim test: one
line saying why (the cache plugin is off in claims runs, a switch takes no value, the filter selected no claim test)
rather than a misspelling's "did you mean", pytest's "file not found" or a line blaming the model. Rows of
docs/bad-input.md."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = str(ROOT / "models.yaml")
MODEL, CLAIM = "all-MiniLM-L6-v2", "G.token-nlp-anisotropic"


def _one_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aniso run: "), err[-3000:]
    assert "Traceback" not in out + err, out[-3000:]
    return lines[0]


@pytest.mark.parametrize("option", ["--lf", "--last-failed", "--cache-clear", "--ff", "--nf", "--cache-show"])
def test_a_cache_plugin_option_after_dashes_says_claims_runs_turn_the_plugin_off(clean_env, capsys, option):
    assert main(["run", MODEL, "--registry", REGISTRY, "--", option]) == 2
    line = _one_line(capsys)
    assert f"{option} is an option of pytest's cache plugin, which claims runs turn off (-p no:cacheprovider)" in line
    assert "did you mean" not in line, line


@pytest.mark.parametrize("given", [["--aniso-no-cache", "false"], ["--aniso-no-cache=0"], ["--aniso-no-cache=true"]])
def test_a_switch_given_a_value_after_dashes_says_it_takes_none(clean_env, capsys, given):
    assert main(["run", MODEL, "--registry", REGISTRY, "--", *given]) == 2
    line = _one_line(capsys)
    value = given[-1].split("=")[-1]
    assert (f"--aniso-no-cache is a switch and takes no value (got {value!r}): give --aniso-no-cache alone to "
            "recompute statistics, ignoring the cache, or leave it out") in line, line
    assert "ANISO_NO_CACHE takes true or false" in line and "ignored explicit argument" not in line, line


def test_a_switch_given_a_value_through_pytest_says_it_takes_none(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
               ANISO_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "claims"), "-q", "-p", "no:cacheprovider",
                           "--aniso-models", MODEL, "--aniso-no-cache", "false"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-2000:]
    assert "--aniso-no-cache is a switch and takes no value (got 'false')" in said, said[-2000:]
    assert "file or directory not found" not in said, said[-2000:]


@pytest.mark.parametrize("selection", [["-k", "plain"], ["-m", "not claim"]])
def test_a_filter_that_leaves_only_tests_of_no_claim_names_the_filter(clean_env, capsys, selection):
    claims = clean_env / "claims"
    claims.mkdir()
    (claims / f"test_mixed_{uuid.uuid4().hex}.py").write_text(textwrap.dedent(f"""
        import pytest

        @pytest.mark.claim({CLAIM!r})
        def test_claim():
            pass

        def test_plain():
            pass
    """))
    assert main(["run", MODEL, "--claims", CLAIM, "--claims-dir", str(claims), "--registry", REGISTRY, "--",
                 *selection]) == 3
    out, err = capsys.readouterr()
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"aniso run: the pytest filter {selection[0]} {selection[1]!r} after -- selected none of "
                           f"the claim tests of {MODEL} (it left 1 test(s) that measure no claim)"), err[-2000:]
    assert "no selected claim applies" not in err, err[-2000:]
