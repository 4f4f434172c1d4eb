"""Which registry rows a change adds or edits: the models ``aniso run --changed-since REF`` runs, so that CI over a
pull request measures the models it adds to ``models.yaml`` (``docs/github-actions-example.yml``).

The registry file at the git ref and the file as it is now are compared row by row, by id, on their YAML values
(so comments, spacing and the order of keys or rows change nothing): a row is *changed* when its id is new or any of
its fields differs. Rows removed since the ref are not run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from .entries import RegistryError

__all__ = ["changed_rows", "registry_at"]


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ValueError("--changed-since: git is not installed") from None


def registry_at(path: Path, ref: str) -> str | None:
    """The text of the registry file ``path`` at git ref ``ref`` (of the repository that holds ``path``), or None
    when the file did not exist there. Raises ValueError (one line) when ``path`` is in no git repository or
    ``ref`` names no commit."""
    path = Path(path).resolve()
    top = _git(["rev-parse", "--show-toplevel"], path.parent)
    if top.returncode != 0:
        raise ValueError(f"--changed-since {ref}: the registry {path} is not in a git repository")
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], path.parent)
    if commit.returncode != 0:
        raise ValueError(f"--changed-since {ref}: no such commit, branch or tag in {top.stdout.strip()} "
                         "(in CI, fetch it first: actions/checkout with fetch-depth: 0)")
    relative = path.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
    shown = _git(["show", f"{commit.stdout.strip()}:{relative}"], path.parent)
    return shown.stdout if shown.returncode == 0 else None


def _rows(text: str | None, where: str) -> dict[str, dict]:
    if text is None:
        return {}
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise RegistryError(f"{where}: not YAML ({' '.join(str(exc).split())})") from None
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, list):
        raise RegistryError(f"{where}: no 'models:' list")
    return {row["id"]: row for row in models if isinstance(row, dict) and "id" in row}


def changed_rows(path: str | Path, ref: str) -> list[str]:
    """The ids of the registry rows of ``path`` that are new or differ from the same file at git ref ``ref``, in
    file order. Raises ValueError (one line) for a path that is a folder or does not exist, a path outside git or an
    unknown ref, and :class:`~aniso.registry.entries.RegistryError` for a file that is not a registry."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--changed-since {ref}: the registry {path} is a folder; give the registry file "
                         f"({path / 'models.yaml'})")
    if not path.exists():
        raise ValueError(f"--changed-since {ref}: the registry {path.absolute()} does not exist")
    old = _rows(registry_at(path, ref), f"{path} at {ref}")
    new = _rows(path.read_text(encoding="utf-8"), str(path))
    return [mid for mid, row in new.items() if old.get(mid) != row]
