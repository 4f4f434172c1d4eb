"""`aniso run --changed-since REF` with an option no row can run with (a claims filter naming no claim, a setting
the command chooses itself): one line, exit 2, before any row is run, as `aniso run M` says it (it was said once per
changed row, then a summary of every row's exit code)."""

from __future__ import annotations

import pytest

from aniso.cli import main
from test_cli import ROOT, _env, _git, _registry_row


@pytest.fixture
def changed_registry(clean_env, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "models.yaml").write_text("models:\n" + _registry_row("kept", tmp_path / "m"))
    _git(repo, "init", "-q")
    _git(repo, "add", "models.yaml")
    _git(repo, "commit", "-q", "-m", "registry")
    (repo / "models.yaml").write_text("models:\n" + "".join(_registry_row(i, tmp_path / "m") for i in
                                                            ("kept", "a", "b", "c")))
    for name, value in _env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(repo)
    return repo


@pytest.mark.parametrize("options, said", [
    (["--claims", "NOPE.x"], "claims: 'NOPE.x' is no claim id"),
    (["--", "--aniso-models", "a"], "--aniso-models"),
])
def test_a_bad_option_of_changed_since_is_one_line_before_any_row(changed_registry, capsys, options, said):
    code = main(["run", "--changed-since", "HEAD", "--claims-dir", str(ROOT / "claims"), *options])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("aniso run: ") and said in err, err
    assert "exit 2" not in err and "registry row(s)" not in err, err
