"""`aniso record` rewrites a registry's records and nothing else of its file: a registry saved with Windows line
ends keeps them (every line became LF), and a private registry keeps its mode (a 0600 file became 0644)."""

from __future__ import annotations

import os
import stat

from aniso.cli import main
from aniso.judge.results import RecordDrift, ResultsDocument, file_digest, provenance, write_results
from test_cli import _result
from test_record_tour16 import REGISTRY


def _stale_record(tmp_path, text: bytes):
    registry = tmp_path / "models.yaml"
    registry.write_bytes(text)
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.539)]})
    results = tmp_path / "a" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    return registry, results


def test_record_keeps_a_registry_s_crlf_line_ends(tmp_path, capsys):
    registry, results = _stale_record(tmp_path, REGISTRY.replace("\n", "\r\n").encode())
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    data = registry.read_bytes()
    assert b"0.539" in data, data
    assert data.count(b"\r\n") == data.count(b"\n") == REGISTRY.count("\n"), data  # every line still ends CRLF
    assert data.replace(b"0.539", b"0.521") == REGISTRY.replace("\n", "\r\n").encode()



def test_record_keeps_a_registry_s_file_mode(tmp_path, capsys):
    registry, results = _stale_record(tmp_path, REGISTRY.encode())
    os.chmod(registry, 0o600)
    assert main(["record", str(results), "--registry", str(registry)]) == 0
    assert "0.539" in registry.read_text()
    assert stat.S_IMODE(registry.stat().st_mode) == 0o600
