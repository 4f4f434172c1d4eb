"""`aniso record` into a registry edited since the run: the refusal names the row and field that changed, from the
copy of the rows the results keep, or says that the edit is elsewhere (any edit of the file counts). A row of
docs/bad-input.md."""

from __future__ import annotations

from aniso.cli import main
from aniso.judge.results import RegistryRow, ResultsDocument, file_digest, provenance, write_results
from aniso.registry.entries import load_registry

REGISTRY = ("models:\n- id: m\n  source: {kind: local, path: ./m}\n  modality: vision\n  granularity: pixel\n"
            "  architecture: cnn\n  role: encoder\n  family: f\n  description: a small cnn\n")


def _run(tmp_path, registry, copy: bool):
    path = tmp_path / "run" / "results.json"
    rows = {e.id: RegistryRow.of(e) for e in load_registry(registry)} if copy else {}
    write_results(path, ResultsDocument(provenance=provenance(tmp_path, {}, None,
                                                              registry_sha256=file_digest(registry)),
                                        results=[], registry=rows))
    return path


def _refusal(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "re-run the claims on it" in err, err
    return err


def _record_after_edit(tmp_path, capsys, copy: bool, old: str, new: str) -> str:
    """Results of a run of REGISTRY (with or without the copy of its rows), the file then edited (``old`` ->
    ``new``): ``aniso record --dry-run`` exits 2 with one line, returned."""
    registry = tmp_path / "models.yaml"
    registry.write_text(REGISTRY)
    results = _run(tmp_path, registry, copy=copy)
    registry.write_text(REGISTRY.replace(old, new))
    assert main(["record", str(results), "--registry", str(registry), "--dry-run"]) == 2
    return _refusal(capsys)


def test_record_after_a_description_edit_names_the_row_and_field(tmp_path, capsys):
    err = _record_after_edit(tmp_path, capsys, True, "a small cnn", "a tiny cnn")
    assert "; changed since the run: row 'm': description)" in err


def test_record_after_an_edit_outside_the_kept_fields_says_any_edit_counts(tmp_path, capsys):
    """The edit is a row's source; the line said that a comment or the layout counts too, which `aniso record`
    accepts (a comment added elsewhere is no change of a row the run measured)."""
    err = _record_after_edit(tmp_path, capsys, True, "./m", "./m2")
    assert "are as they were, so the edit is in another field of a row the run measured (its source, tags or " \
           "records; a comment or the layout elsewhere does not count)" in err, err


def test_record_of_results_without_a_copy_of_the_rows_says_any_edit_counts(tmp_path, capsys):
    err = _record_after_edit(tmp_path, capsys, False, "a small cnn", "a tiny cnn")
    assert "the run kept no copy of its rows to compare with: any edit of the file counts" in err
