"""Registry rows that setting ``models`` could never select, and sizes that are no number: refused in one line."""

from __future__ import annotations

import pytest

from aniso.registry.entries import RegistryError, load_registry

ROW = """\
  - id: {id}
    source: {{kind: local, path: ./tiny}}
    modality: text
    granularity: subword
    architecture: transformer
    role: encoder
    family: bert
    tags: [{tags}]
"""


def write(tmp_path, *rows, extra=""):
    p = tmp_path / "models.yaml"
    p.write_text("models:\n" + "".join(ROW.format(id=i, tags=t) for i, t in rows) + extra)
    return p


@pytest.mark.parametrize("rows, clash", [
    ((("tiny", ""), ("small", "")), "model set 'small'"),
    ((("tiny", "quantized"), ("quantized", "")), "a tag of row 'tiny'"),
    ((("tiny", ""), ("encoder", "")), "a tag every row"),
])
def test_an_id_that_is_a_model_set_name_or_a_tag_is_refused(tmp_path, rows, clash):
    path = write(tmp_path, *rows)
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and f"models[1] (id {rows[1][0]!r}): id" in msg and clash in msg


def test_an_id_that_is_a_family_name_stays_allowed(tmp_path):
    path = write(tmp_path, ("bert", ""), ("tiny", ""))
    assert [e.id for e in load_registry(path)] == ["bert", "tiny"]


@pytest.mark.parametrize("value", ["1e400", "-1e400", ".inf", ".nan"])
def test_a_size_that_is_no_finite_number_is_refused(tmp_path, value):
    path = write(tmp_path, ("tiny", ""))
    path.write_text(path.read_text() + f"    params_m: {value}\n")
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    assert "models[0] (id 'tiny'): params_m" in str(err.value)


def test_a_model_set_or_a_case_slip_where_a_registry_id_is_taken_is_named(tmp_path):
    from aniso.registry.entries import UnknownModel

    reg = load_registry(write(tmp_path, ("tiny-Model", "quantized")))
    for name in ("small", "quantized"):
        with pytest.raises(UnknownModel) as err:
            reg.get(name)
        assert f"{name!r} is a model set or tag, and this takes registry ids" in str(err.value)
    with pytest.raises(UnknownModel) as err:
        reg.get("TINY-MODEL")
    assert str(err.value).endswith("did you mean 'tiny-Model'?")


def test_aniso_run_suggests_the_registry_id_that_differs_only_in_case(capsys, monkeypatch, tmp_path):
    from pathlib import Path

    from aniso.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    registry = Path(__file__).resolve().parents[2] / "models.yaml"
    assert main(["run", "ALL-MINILM-L6-V2", "--registry", str(registry), "--claims", "G.token-nlp-anisotropic"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "did you mean 'all-MiniLM-L6-v2'?" in err
    assert main(["extract", "small", "--registry", str(registry)]) == 2
    assert "'small' is a model set or tag, and this takes registry ids" in capsys.readouterr().err
