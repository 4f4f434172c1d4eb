"""Claims asked for the way other tools select things: a claim id given to pytest's ``-k`` (which matches test names)
and a ``*`` inside ``--aniso-claims`` (read only at the end of a prefix) each get one line saying how to select them.
Rows of docs/bad-input.md."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _claim_file(folder: Path, name: str, claim_id: str) -> None:
    """A claim test module ``name``.py in ``folder`` (made if need be) whose one test concludes ``claim_id`` holds."""
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text("import pytest\n\n" + textwrap.dedent(f"""
        @pytest.mark.claim("{claim_id}")
        def {name}(claim):
            claim.conclude(True, {{"x": 1.0}}, "always")
    """))


def _pytest(tmp_path: Path, target: Path, *args: str) -> subprocess.CompletedProcess:
    """``pytest TARGET`` with the plugin, the source tree's registry and MiniLM, run in ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANISO_", "PYTEST_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]), HF_HUB_OFFLINE="1",
               ANISO_CACHE_DIR=str(tmp_path / "cache"), ANISO_REPORT_DIR=str(tmp_path / "reports"))
    return subprocess.run([sys.executable, "-m", "pytest", str(target), "-p", "aniso.pytest_plugin", "-p",
                           "no:randomly", "-p", "no:cacheprovider", f"--aniso-registry={ROOT / 'models.yaml'}",
                           "--aniso-models", "all-MiniLM-L6-v2", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def test_k_naming_a_claim_id_that_selects_no_test_points_to_aniso_claims(tmp_path):
    """`pytest -k G.token-nlp-anisotropic` deselected every test with no word (test names hold no claim ids)."""
    folder = tmp_path / "myclaims"
    _claim_file(folder, "test_mine_k", "G.token-nlp-anisotropic")
    done = _pytest(tmp_path, folder, "-k", "G.token-nlp-anisotropic")
    line = ("aniso: -k 'G.token-nlp-anisotropic' selected no test: -k matches test names, which hold no claim ids; "
            "select claims with --aniso-claims G.token-nlp-anisotropic (aniso list claims)")
    assert done.returncode == 5 and line in done.stdout.splitlines(), done.stdout[-3000:] + done.stderr[-2000:]


def test_the_k_pointer_names_ids_and_prefixes_only():
    from aniso.registry.claimtests import k_claim_pointer

    assert k_claim_pointer("G. and not slow") == (
        "aniso: -k 'G. and not slow' selected no test: -k matches test names, which hold no claim ids; select claims "
        "with --aniso-claims G. (aniso list claims)")
    assert k_claim_pointer("token_nlp or anisotropic") is None
    assert k_claim_pointer("") is None


@pytest.mark.parametrize("given, matched", [("*anisotropic", None), ("G.tok*n-nlp-anisotropic",
                                                                     "'G.token-nlp-anisotropic'")])
def test_a_star_before_the_end_of_a_claims_item_is_refused_saying_where_a_star_is_read(given, matched):
    """`--aniso-claims '*anisotropic'` was answered "is no claim id; did you mean 'G.char-nlp-anisotropic'?"."""
    from aniso.registry.catalog import CLAIMS
    from aniso.registry.selection import parse_claims

    with pytest.raises(ValueError) as exc:
        parse_claims(given)
    head = f"claims: {given!r}: a * is read only at the end of a prefix (e.g. 'G.*', 'G.token*'); the ids it would match"
    assert str(exc.value).startswith(head) and str(exc.value).endswith(" (aniso list claims)"), str(exc.value)
    if matched is None:
        ids = [c for c in CLAIMS if c.endswith("anisotropic")]
        assert str(exc.value) == f"{head}, with commas: {','.join(ids)!r} (aniso list claims)"
    else:
        assert str(exc.value) == f"{head}, with commas: {matched} (aniso list claims)"
    assert parse_claims("G.token*").prefixes == ("G.token",)


def test_aniso_claims_naming_a_claim_tested_in_another_file_says_which(tmp_path):
    """`pytest myclaims/test_other.py --aniso-claims G.token-nlp-anisotropic`, the claim's test in another file of the
    folder, said only "1 deselected" (exit 5); the summary now names the file that tests it."""
    folder = tmp_path / "myclaims"
    _claim_file(folder, "test_token", "G.token-nlp-anisotropic")
    _claim_file(folder, "test_other", "G.char-nlp-anisotropic")
    done = _pytest(tmp_path, folder / "test_other.py", "--aniso-claims", "G.token-nlp-anisotropic")
    line = ("aniso: --aniso-claims G.token-nlp-anisotropic selected none of the tests collected, which test other "
            "claims; the tests of G.token-nlp-anisotropic are in myclaims/test_token.py: name those files, or the "
            "claims folder")
    assert done.returncode == 5 and line in done.stdout.splitlines(), done.stdout[-3000:] + done.stderr[-2000:]


def test_the_claims_filter_pointer_without_a_file():
    from aniso.registry.claimtests import claims_filter_pointer

    assert claims_filter_pointer("R.", []) == (
        "aniso: --aniso-claims R. selected none of the tests collected, which test other claims; no claim test file "
        "beside them tests R. (aniso list claims)")
