"""`aniso record` rewrites a registry's records and nothing else of its file: a registry saved with Windows line
ends keeps them (every line became LF), and a private registry keeps its mode (a 0600 file became 0644)."""

from __future__ import annotations

import os
import stat

from aniso.cli import main
from test_record_tour16 import REGISTRY, _stale_record


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
