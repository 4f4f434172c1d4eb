"""The package's stages import one way only, with no cycle: the import-linter contracts of ``pyproject.toml``
(``[tool.importlinter]``, described in ``docs/architecture.md``), run on this checkout's ``src/aniso``.

A broken contract fails with import-linter's own report (which import, from where to where). The contracts are
also shown to fail: on a copy of the package with an import against the flow, and with a cycle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
CONTRACTS = {"stages", "no-cycles", "pure-metrics", "doors", "verdict-policy"}


def lint_imports(src: Path) -> subprocess.CompletedProcess:
    """``lint-imports pyproject.toml`` on the package under ``src`` (which comes first on the path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--no-cache", "--no-logo", str(CONFIG)],
                          cwd=src, env=env, capture_output=True, text=True, timeout=120)


def test_the_contracts_are_the_documented_ones():
    from importlinter.api import read_configuration

    options = read_configuration(str(CONFIG))
    assert options["session_options"]["root_packages"] == ["aniso"]
    assert options["session_options"]["exclude_type_checking_imports"] in (True, "True")
    assert {c["id"] for c in options["contracts_options"]} == CONTRACTS
    stages = next(c for c in options["contracts_options"] if c["id"] == "stages")
    assert stages["type"] == "layers" and stages["exhaustive"] in (True, "True")
    assert stages["layers"][-2:] == ["common | metrics", "waits"]
    # the diagram of docs/architecture.md is the contract's layer order
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = doc.split("Imports run one way", 1)[1].split("```", 2)[1]
    assert [line.strip() for line in diagram.splitlines() if line.strip()] == stages["layers"]


def test_imports_keep_the_contracts():
    proc = lint_imports(ROOT / "src")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, contract", [
    # the extraction reading the statistics: against the flow
    ("extract/hidden.py", "from ..stats import accumulators as _against_the_flow", "Stages import downwards only"),
    # the registry reading a claim rule: against the flow
    ("registry/entries.py", "from ..judge import rules as _against_the_flow", "Stages import downwards only"),
    # two input modules importing each other: a cycle inside a stage
    ("inputs/media.py", "from . import reactions as _cycle", "No cycle between the modules of a package"),
    # a new top-level module that no layer names
    ("stray.py", "", "Stages import downwards only"),
])
def test_a_bad_import_breaks_a_contract(tmp_path, module, line, contract):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "aniso", src / "aniso", ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "aniso" / module
    path.write_text((path.read_text() if path.exists() else '"""A module."""\n') + line + "\n")
    proc = lint_imports(src)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout[proc.stdout.index("Broken contracts"):] if "Broken contracts" in proc.stdout else ""
    assert contract in broken, proc.stdout + proc.stderr


def test_no_stage_hides_a_name_of_the_python_api():
    """``aniso.claims()`` is the API's; a subpackage of that name would replace it once imported."""
    import aniso

    stages = {p.stem if p.suffix == ".py" else p.name for p in (ROOT / "src" / "aniso").iterdir()
              if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert not stages & set(aniso._API), stages & set(aniso._API)
