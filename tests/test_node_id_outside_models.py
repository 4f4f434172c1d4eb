"""`pytest claims/test_x.py::test_y[gpt2] --aniso-models all-MiniLM-L6-v2`: one line saying the node id's model is
outside the run's model set, not pytest's "not found … (no match in any of [<Module …>])". A row of
docs/bad-input.md."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_node_id_of_a_model_outside_the_model_set_is_named(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
               ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"))
    node = "claims/test_godey_pretrained.py::test_token_nlp_anisotropic[gpt2]"
    done = subprocess.run([sys.executable, "-m", "pytest", node, "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "--aniso-models", "all-MiniLM-L6-v2"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said[-2000:]
    assert (f"the test {node} runs on the registry row 'gpt2', which is outside the run's model set (setting models: "
            "'all-MiniLM-L6-v2'); add it, e.g. --aniso-models gpt2") in said, said[-2000:]
    assert "no match in any of" not in said, said[-2000:]
