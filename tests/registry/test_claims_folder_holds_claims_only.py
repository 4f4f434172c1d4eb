"""A claims folder holds claim tests only: a folder that also holds other test modules (``--claims-dir .`` at a
checkout's root, whose ``tests/`` are the unit tests) is refused in one line naming the folder and such a module,
before anything is collected or run. Each case is a row of docs/bad-input.md."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from aniso.cli import main

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = str(ROOT / "models.yaml")


def _mixed_folder(tmp_path: Path) -> Path:
    """A folder holding one claim module and, under ``tests/``, one plain test module that leaves a file when run."""
    folder = tmp_path / "checkout"
    (folder / "claims").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "claims" / "test_a_claim.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.claim("G.token-nlp-anisotropic")
        def test_claim(entry, claim):
            pass
    """))
    ran = tmp_path / "ran"
    (folder / "tests" / "test_plain.py").write_text(textwrap.dedent(f"""
        from pathlib import Path

        def test_plain():
            Path({str(ran)!r}).write_text("ran")
    """))
    return folder


def test_a_claims_dir_holding_other_test_modules_is_refused_naming_one(clean_env, capsys):
    folder = _mixed_folder(clean_env)
    assert main(["run", "all-MiniLM-L6-v2", "--claims", "G.token-nlp-anisotropic", "--registry", REGISTRY,
                 "--claims-dir", str(folder)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out + err, err[-3000:]
    line = lines[0]
    assert f"claims folder {folder}: tests/test_plain.py is no claims module" in line and "--claims-dir" in line, line
    assert not (clean_env / "ran").exists() and not (clean_env / "reports").exists()


def test_the_api_names_claims_dir_for_a_folder_holding_other_test_modules(clean_env):
    from aniso.api import run_claims

    folder = _mixed_folder(clean_env)
    with pytest.raises(ValueError) as err:
        run_claims("all-MiniLM-L6-v2", "G.token-nlp-anisotropic", registry=REGISTRY, claims_dir=folder)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"claims_dir: {folder}: tests/test_plain.py is no claims module"), msg
    assert not (clean_env / "ran").exists()


def test_the_suites_claims_folder_is_claims_only_and_its_checkout_is_not():
    from aniso.registry.locate import claims_folder, other_test_module

    assert other_test_module(ROOT / "claims") is None  # the offline pipeline check is marked with models
    assert other_test_module(ROOT) is not None
    with pytest.raises(ValueError, match=r"^claims folder .*: .* is no claims module"):
        claims_folder(ROOT, None)
