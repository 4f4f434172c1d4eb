"""examples/measure_a_model.ipynb: committed without outputs, and executed as a reader runs it (nbclient, the
``python3`` kernel of ipykernel) on small inputs: the table has one row per layer, the profile is a figure, the
claims have their verdicts and the report is written."""

from __future__ import annotations

import base64
import copy
import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "measure_a_model.ipynb"
#: Seconds any one cell may run (the whole notebook takes well under a minute on two cores at the sizes below).
CELL_TIMEOUT = 300
#: Set in a cell after the notebook's ``parameters`` cell, as papermill would: the sizes of tests/test_api.py.
SMALL = {"N_INPUTS": 6, "MAX_LENGTH": 24, "N_BOOTSTRAP": 0}
#: Settings that name files or folders: the kernel's working folder is a temporary one, so they are passed absolute.
DATA_SETTINGS = ("ANISO_CORPUS", "ANISO_SPEECH_DIR", "ANISO_IMAGE_DIR", "ANISO_MODELS_DIR", "ANISO_TRAIN_TEXT",
                 "ANISO_REGISTRY")
MINILM_LAYERS = ["0", "1", "2", "3", "4", "5", "6"]  # the embedding output, then six Transformer layers


def stored_outputs(nb) -> list[str]:
    """The ids of the code cells that hold outputs or an execution count (none may be committed)."""
    return [c.get("id", str(i)) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]


def _cell(nb, cell_id: str):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def test_the_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.metadata.kernelspec.name == "python3"
    assert stored_outputs(nb) == [], (f"{NOTEBOOK.name}: cells {stored_outputs(nb)} hold outputs or execution "
                                      "counts; clear them (Jupyter: Edit > Clear Outputs of All Cells) and save")
    assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), "no cell tagged 'parameters'"


def test_a_notebook_with_outputs_is_caught():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    ran = copy.deepcopy(nb)
    _cell(ran, "imports").execution_count = 1
    shown = copy.deepcopy(nb)
    _cell(shown, "measure").outputs = [nbformat.v4.new_output("stream", name="stdout", text="7 layers\n")]
    assert stored_outputs(ran) == ["imports"] and stored_outputs(shown) == ["measure"]


def test_the_notebook_runs(tmp_path, monkeypatch):
    """Execute every cell in a temporary working folder with its own statistics cache and temporary folder; a cell
    that raises fails the test with that cell's error."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in SMALL.items()),
                                                      metadata={"tags": ["injected-parameters"]}))
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("ANISO_CACHE_DIR", str(tmp_path / "cache"))  # the kernel inherits this process's environment
    for name in DATA_SETTINGS:  # the kernel runs in another folder: relative data paths (as .ci/run sets) made absolute
        if os.environ.get(name):
            monkeypatch.setenv(name, str(Path(os.environ[name]).resolve()))
    monkeypatch.setenv("TMPDIR", str(tmp))  # where the notebook's tempfile.mkdtemp() writes the report
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # the kernel's connection file
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # no profile or start-up files from the home folder
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANISO_PROGRESS", "0")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend, as in Jupyter
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}})
    try:
        client.execute()
    except CellExecutionError as err:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # the traceback without its terminal colours
        pytest.fail(f"a cell of {NOTEBOOK.name} raised:\n{plain}", pytrace=False)

    # The table: one row per layer of MiniLM, and the line above it says so.
    measure = _cell(nb, "measure")
    assert "all-MiniLM-L6-v2: 7 layers measured on" in _text(measure)
    html = next(o.data["text/html"] for o in measure.outputs if o.output_type == "execute_result")
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert re.findall(r"<tr>\s*<th>\d+</th>\s*<td>(\w+)</td>", body) == MINILM_LAYERS

    # The profile: one figure, shown as a PNG.
    figures = [o for o in _cell(nb, "profile").outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(figures) == 1
    png = base64.b64decode(figures[0].data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000

    # The verdicts: each claim asked for holds on MiniLM, the frame shows them, and the report was written.
    check = _cell(nb, "check")
    claims = [c for c in _cell(nb, "parameters").source.split('CLAIMS = "', 1)[1].split('"', 1)[0].split(",")]
    frame = next(o.data["text/html"] for o in check.outputs if o.output_type == "execute_result")
    assert all(c in frame for c in claims) and "holds" in frame
    printed = _text(_cell(nb, "report"))
    results_path = Path(re.search(r"^results: (.+)$", printed, re.M).group(1))
    report_path = Path(re.search(r"^report: (.+)$", printed, re.M).group(1))
    assert results_path.is_relative_to(tmp) and report_path.is_file() and report_path.stat().st_size > 1000
    results = json.loads(results_path.read_text())["results"]
    assert {r["claim_id"] for r in results} == set(claims) and {r["verdict"] for r in results} == {"holds"}
    assert any(r["model_id"] == "all-MiniLM-L6-v2" for r in results)
    assert "exit code: 0" in printed
