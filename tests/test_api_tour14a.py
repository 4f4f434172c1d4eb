"""The listing API: setting ``models`` keeps the rows of its set (it was checked for spelling, never applied, so
``aniso.models(settings={"models": "offline"})`` gave every row); ``aniso list`` still lists every row and marks the
set; a listing resolves no device, so it imports no torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import aniso

ROOT = Path(__file__).resolve().parents[1]


def _registry(tmp_path: Path) -> Path:
    rows = "".join(f"- id: {name}\n  source: {{kind: hub, repo: org/{name}}}\n  modality: text\n"
                   "  granularity: subword\n  architecture: transformer\n  role: encoder\n  family: bert\n"
                   f"  tags: [{tag}]\n" for name, tag in (("one", "mine"), ("two", "theirs"), ("three", "mine")))
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + rows, encoding="utf-8")
    return path


def test_setting_models_keeps_the_rows_of_its_set(tmp_path, clean_env, monkeypatch):
    path = _registry(tmp_path)
    assert [r["model"] for r in aniso.models(path, as_frame=False)] == ["one", "two", "three"]
    assert [r["model"] for r in aniso.models(path, as_frame=False, settings={"models": "mine"})] == ["one", "three"]
    assert aniso.models(path, settings={"models": "two,three"})["model"].tolist() == ["two", "three"]
    monkeypatch.setenv("ANISO_MODELS", "theirs")
    assert [r["model"] for r in aniso.models(path, as_frame=False)] == ["two"]


def test_aniso_list_still_lists_every_row_and_marks_the_set(tmp_path, clean_env, aniso_cli):
    path = _registry(tmp_path)
    code, out, _ = aniso_cli(["list", "models", "--models", "mine", "--registry", str(path)])
    assert code == 0 and "3 models in" in out and "2 in the set 'mine'" in out, out
    assert all(name in out for name in ("one", "two", "three"))


def test_a_listing_imports_no_torch():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    code = "import sys, aniso; aniso.models(as_frame=False); print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("model, suffix, folder_of", [
    ("efficientnet-lite0", ".jpg", "photographs (.jpg/.png)"), ("whisper-tiny.en", ".wav", "recordings (.flac/.wav)"),
], ids=["vision", "speech"])
def test_a_list_of_photograph_or_recording_paths_is_told_to_give_their_folder(clean_env, tmp_path, monkeypatch,
                                                                              model, suffix, folder_of):
    """A vision model given a list of photographs' paths was told to give a .jpg as a corpus file (which it then
    refuses) and that the names would be measured as texts, which a CNN cannot read."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "img").mkdir()
    paths = []
    for i in range(3):
        (tmp_path / "img" / f"a{i}{suffix}").write_bytes(b"\0" * 16)
        paths.append(f"img/a{i}{suffix}")
    for call in (lambda: aniso.measure(model, paths, progress=False), lambda: aniso.check(model, inputs=paths)):
        with pytest.raises(ValueError) as caught:
            call()
        said = str(caught.value)
        assert "\n" not in said and said.startswith("inputs: every text of the list is the path of a file here"), said
        assert f"reads {folder_of} from a folder, not from a list of their paths; give their folder " \
               "(inputs='img')" in said, said
        assert "corpus" not in said and "as texts" not in said, said
