"""`aniso record` into a registry: two at once take turns (each read, checked and rewrote the registry on its own,
and one's new record was lost while both said they had written it), and a registry that cannot be rewritten (a
file-size limit) is one line, the registry unchanged (it was a traceback)."""

from __future__ import annotations

import resource
import threading

from aniso.cli import main
from aniso.common.files import atomic_write, rewriting
from aniso.judge.results import RecordDrift, ResultsDocument, file_digest, provenance, write_results
from test_cli import _result

REGISTRY = ("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n"
            "  granularity: pixel\n  architecture: cnn\n  role: encoder\n  family: f\n  expected:\n"
            "    G.cnn-mostly-isotropic:\n      verdict: does-not-hold\n"
            "      measured: {max_avg_cos: 0.521}\n      reason: 'max {max_avg_cos:.3f}'\n")


def _stale_record(tmp_path, text: bytes | None = None):
    """A registry with a stale record (``text``, default :data:`REGISTRY`), and the results of a run of it that
    rewrite the record."""
    registry = tmp_path / "models.yaml"
    registry.write_bytes(REGISTRY.encode() if text is None else text)
    r = _result("expected not to hold", 0.539, 0.5, 0.56).model_copy(update={
        "expected": {"measured": {"max_avg_cos": 0.521}},
        "record_drift": [RecordDrift(key="max_avg_cos", recorded=0.521, measured=0.539)]})
    results = tmp_path / "a" / "results.json"
    write_results(results, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                                 registry_sha256=file_digest(registry)), results=[r]))
    return registry, results


def test_a_record_waits_for_another_rewriting_the_registry_then_reads_it_anew(tmp_path, capsys):
    registry, results = _stale_record(tmp_path)
    other = REGISTRY.replace("family: f\n", "family: f\n  description: written by another aniso record\n", 1)
    codes = []
    with rewriting(registry):  # another aniso record holds the registry
        worker = threading.Thread(target=lambda: codes.append(main(["record", str(results), "--registry",
                                                                     str(registry)])))
        worker.start()
        worker.join(timeout=3)  # without a lock it has read, checked and written by now
        atomic_write(registry, lambda path: path.write_text(other))  # the other's rewrite
    worker.join(timeout=60)
    assert codes == [2], capsys.readouterr()
    assert "was not written by a run of" in capsys.readouterr().err
    assert registry.read_text() == other  # the other's record kept, nothing written over it


def test_a_registry_that_cannot_be_rewritten_is_one_line_and_unchanged(tmp_path, capsys):
    registry, results = _stale_record(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    import signal

    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, hard))
    try:
        code = main(["record", str(results), "--registry", str(registry)])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "cannot write" in err and "File too large" in err and "unchanged" in err, err
    assert registry.read_text() == REGISTRY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "models.yaml"]  # no temporary file left
