"""A results file saved by an editor with a UTF-8 byte-order mark was refused with the JSON reader's own message (a
registry with one is read); `aniso record` into the registry the run read, checked out with other line ends (CRLF),
sent the user to re-run the claims when only the line ends differ."""

from __future__ import annotations

from aniso.cli import main
from aniso.judge.results import ResultsDocument, file_digest, provenance, read_results, write_results


def _run(tmp_path, registry=None):
    path = tmp_path / "run" / "results.json"
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None, registry_sha256=file_digest(registry)
                                                              if registry else None), results=[]))
    return path


def test_a_results_file_with_a_byte_order_mark_is_read(tmp_path, capsys):
    results = _run(tmp_path)
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + results.read_bytes())
    assert read_results(marked).digest == read_results(results).digest
    assert main(["report", str(marked), "--out", str(tmp_path / "r.html")]) == 0


def test_record_into_the_registry_with_other_line_ends_says_so(tmp_path, capsys):
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n")
    results = _run(tmp_path, registry)
    registry.write_bytes(registry.read_bytes().replace(b"\n", b"\r\n"))
    before = registry.read_bytes()
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "as it was before its line ends (the run read LF, this file has CRLF; e.g. " \
        "dos2unix) changed: put it back and record again; nothing else differs" in err
    assert registry.read_bytes() == before


def test_record_into_the_registry_with_cr_line_ends_or_a_byte_order_mark_says_so(tmp_path, capsys):
    """Tour 19: CR-only line ends and a byte-order mark an editor added were sent to re-run the claims."""
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
                        "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n")
    results = _run(tmp_path, registry)
    lf = registry.read_bytes()
    for changed, said in ((lf.replace(b"\n", b"\r"), "its line ends (the run read LF, this file has CR"),
                          (b"\xef\xbb\xbf" + lf, "before a byte-order mark at its start (remove it) changed"),
                          (b"\xef\xbb\xbf" + lf.replace(b"\n", b"\r\n"), "this file has CRLF; e.g. dos2unix) and a "
                                                                          "byte-order mark at its start")):
        registry.write_bytes(changed)
        assert main(["record", str(results), "--registry", str(registry)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and "re-run" not in err, err
        assert registry.read_bytes() == changed
    registry.write_bytes(lf + b"# a comment\n")
    assert main(["record", str(results), "--registry", str(registry)]) == 2
    assert "re-run the claims on it" in capsys.readouterr().err
