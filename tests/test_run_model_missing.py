"""`aniso run ROW` whose weights cannot be had here (a local folder gone, a hub revision not cached with the hub
unreachable): the run is refused in the one line `aniso stats` gives for the row, exit 2, before any claim test runs;
the model-free checks of G.isotropic-baseline do not make a run of a model that never loaded pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[1]

_ROWS = {
    "local": ("my-gone", "{kind: local, path: ./no-such-folder}", "local model directory"),
    "hub": ("my-hub-bert", "{kind: hub, repo: my-org/my-bert, revision: 3f2a1c0}", "is not cached here"),
}


def _registry(folder: Path, row_id: str, source: str) -> Path:
    path = folder / "m.yaml"
    path.write_text((ROOT / "models.yaml").read_text(encoding="utf-8") + f"""
- id: {row_id}
  source: {source}
  modality: text
  granularity: subword
  architecture: transformer
  role: encoder
  family: bert
""", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", sorted(_ROWS))
def test_a_row_whose_weights_are_not_here_is_refused_as_aniso_stats_refuses_it(hub_env, monkeypatch, capsys, kind):
    monkeypatch.setenv("HF_HUB_CACHE", str(hub_env / "hub-cache"))  # an empty hub cache
    row_id, source, said = _ROWS[kind]
    registry = str(_registry(hub_env, row_id, source))
    assert main(["stats", row_id, "--registry", registry]) == 2
    stats_line = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("aniso stats: ")
    assert said in stats_line, stats_line
    code = main(["run", row_id, "--registry", registry, "--claims", "G.isotropic-baseline,G.token-nlp-anisotropic"])
    out, err = capsys.readouterr()
    assert code == 2, out[-3000:] + err[-3000:]
    assert err.strip().splitlines()[-1] == f"aniso run: {stats_line}", err
    assert "hold" not in out, out  # no claim test ran
