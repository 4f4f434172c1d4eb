"""aniso.registry.changes.changed_rows given a path that is no registry file: one line saying what the path is."""

import re
import subprocess

import pytest

from aniso.registry.changes import changed_rows


def _repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "models.yaml").write_text("models:\n  - id: a\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "models.yaml"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "registry"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def test_changed_rows_of_a_folder_or_a_missing_file_says_which(tmp_path, monkeypatch):
    """A folder, or a relative path that names nothing from the working folder, was "is not in a git repository"."""
    repo = _repository(tmp_path)
    assert changed_rows(repo / "models.yaml", "HEAD") == []
    folder, file = re.escape(str(repo)), re.escape(str(repo / "models.yaml"))
    with pytest.raises(ValueError, match=rf"^--changed-since HEAD: the registry {folder} is a folder; give the "
                                         rf"registry file \({file}\)$"):
        changed_rows(repo, "HEAD")
    monkeypatch.chdir(tmp_path)
    missing = re.escape(str(tmp_path / "models.yaml"))
    with pytest.raises(ValueError, match=rf"^--changed-since HEAD: the registry {missing} does not exist$"):
        changed_rows("models.yaml", "HEAD")
