"""Full-size twins (``aniso run ID --twin --full-size``, :mod:`aniso.sources.twin`) and the registry's ``full``
configs they are built from.

Every hub row's ``full`` config, built as its twin's model class on the meta device (no memory), has the parameter
count the row's ``params_m`` states, within 2%: a wrong width or depth in the registry fails here. The option is
refused in one line where it does not apply, and the smallest row's full-size twin runs a claim through the hub path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from aniso.registry.entries import load_registry
from aniso.sources.twin import TWIN_FULL_SIZE_LABEL, TWIN_SPECS, TwinError, twin_spec

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = load_registry(ROOT / "models.yaml")
HUB_ROWS = [e for e in REGISTRY if e.source.kind == "hub"]

#: Rows whose ``params_m`` counts parameters their twin's model class does not hold (millions; negative: the twin
#: holds more), and why. The rest of the count is checked to 2% as every other row's is.
NOT_IN_TWIN = {
    "albert-base-v2": (0.59, "params_m counts ALBERT's pooler (768 x 768 + 768); AlbertForMaskedLM builds none"),
    "character-bert": (-4.9, "the twin's stand-in (a BertModel) has BERT's wordpiece embedding matrix, 30522 x 768, "
                             "where CharacterBERT has its character CNN"),
}
#: Rows with no model class to build (the registry's cannot_run record says why), checked to be refused as such.
NOT_BUILT = {"van-base": "transformers 5 removed VAN"}


def _on_meta(entry, full: dict | None = None) -> int:
    """Parameters of ``entry``'s full-size twin (its ``full`` config, or ``full`` given), built on the meta device."""
    import transformers

    if full is not None:
        entry = entry.model_copy(update={"full": full})
    model_type, fields_, spec = twin_spec(entry, full_size=True)
    if spec.remote is not None:  # the twin's own module subclasses these two without adding a weight
        config = getattr(transformers, spec.remote[0])(**fields_)
        cls = getattr(transformers, spec.remote[1])
    else:
        config = transformers.AutoConfig.for_model(model_type, **fields_)
        cls = getattr(transformers, spec.model_class)
    with torch.device("meta"):
        model = cls(config)
    return sum(p.numel() for p in model.parameters())


def _off_by(entry, count: int) -> float:
    """Relative difference of ``count`` from the row's params_m (less what the twin's class does not hold)."""
    expected = entry.params_m - NOT_IN_TWIN.get(entry.id, (0.0, ""))[0]
    return count / 1e6 / expected - 1


def test_every_hub_row_states_its_full_config_and_parameter_count():
    assert len(HUB_ROWS) == 41
    assert [e.id for e in HUB_ROWS if e.full is None or e.params_m is None] == []
    assert set(NOT_IN_TWIN) | set(NOT_BUILT) <= {e.id for e in HUB_ROWS}


@pytest.mark.parametrize("entry", HUB_ROWS, ids=lambda e: e.id)
def test_full_config_has_the_rows_parameter_count(entry):
    """The twin's model class at the row's ``full`` config holds ``params_m`` million parameters, within 2% (rows
    in NOT_IN_TWIN: less what the class does not hold; the row in NOT_BUILT: refused with its record)."""
    if entry.id in NOT_BUILT:
        with pytest.raises(TwinError, match=NOT_BUILT[entry.id]):
            twin_spec(entry, full_size=True)
        return
    count = _on_meta(entry)
    assert abs(_off_by(entry, count)) <= 0.02, f"{entry.id}: {count / 1e6:.2f} M parameters, params_m {entry.params_m}"


@pytest.mark.parametrize("row, change", [
    ("bert-base-uncased", {"num_hidden_layers": 11}),
    ("opt-13b", {"num_hidden_layers": 39}),  # one layer of 40: 2.5%
    ("llama-2-7b-hf", {"hidden_size": 4224}),
    ("gpt2", {"n_embd": 744}),
    ("resnet-50", {"depths": [3, 4, 5, 3]}),
    ("wav2vec2-base", {"intermediate_size": 2816}),
])
def test_a_wrong_width_or_depth_fails_the_count(row, change):
    entry = REGISTRY.get(row)
    assert abs(_off_by(entry, _on_meta(entry, dict(entry.full, **change)))) > 0.02


def test_full_and_tiny_share_one_model_type():
    from aniso.registry.entries import ModelEntry

    raw = REGISTRY.get("gpt2").model_dump(exclude_unset=True)
    with pytest.raises(ValueError, match="full.model_type is 'llama', tiny's is 'gpt2'"):
        ModelEntry.model_validate(dict(raw, full={"model_type": "llama", "n_embd": 768}))
    with pytest.raises(ValueError, match=r"full.n_layer is 0: a size or count"):
        ModelEntry.model_validate(dict(raw, full={"n_layer": 0}))
    with pytest.raises(ValueError, match="full .* goes with tiny"):
        ModelEntry.model_validate(dict({k: v for k, v in raw.items() if k != "tiny"}, full={"n_layer": 12}))


def test_full_size_keeps_the_twin_tokenizers_token_ids_and_nothing_else_of_tiny():
    _, fields_, _ = twin_spec(REGISTRY.get("gpt2"), full_size=True)
    assert fields_ == {"bos_token_id": 0, "eos_token_id": 0, **REGISTRY.get("gpt2").full}
    _, fields_, _ = twin_spec(REGISTRY.get("mit-b0"), full_size=True)  # no tiny-only MiT stages
    assert fields_["hidden_sizes"] == [32, 64, 160, 256] and fields_["image_size"] == 224


def test_a_full_size_twin_is_drawn_seeded_in_the_rows_dtype(tmp_path):
    """A float16 row's full-size twin is written in float16 (built in it: no float32 copy), the same weights for the
    same seed and others for another; the provenance says full size and holds the config."""
    from safetensors import safe_open

    from aniso.sources.twin import build_twin

    entry = REGISTRY.get("albert-base-v2")
    entry = entry.model_copy(update={"source": entry.source.model_copy(update={"dtype": "float16"})})
    texts = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the sea"] * 4
    a, b, c = (build_twin(entry, tmp_path / name, texts, seed, full_size=True)
               for name, seed in (("a", 3), ("b", 3), ("c", 4)))
    read = lambda name: (tmp_path / name / "model.safetensors").read_bytes()  # noqa: E731
    assert read("a") == read("b") != read("c")
    with safe_open(str(tmp_path / "a" / "model.safetensors"), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16"}
    assert a["size"] == "full size" and a["weights_dtype"] == "float16" and a["parameters"] == 11_221_680
    assert a["config"] == entry.full and a["vocab_size"] == 30000 and a["tokenizer_vocab"] < 30000
    assert "the embedding matrix has all 30000 rows" in a["vocab_note"]


# -- the recorded CPU runs and their table in docs/twins.md --------------------------------------------------------

#: The record of the full-size twins' CPU runs, and the table of docs/twins.md made from it (between the markers;
#: ``python tests/sources/test_twin_full_size.py`` writes it again from the record).
RECORD = ROOT / "docs/records/full-size-twins/2026-11-27-full-size-twins-cpu.json"
TABLE_START = "<!-- full-size-twins-cpu: made from the record by python tests/sources/test_twin_full_size.py -->"
TABLE_END = "<!-- /full-size-twins-cpu -->"


def _has_tokenizer(entry) -> bool:
    spec = TWIN_SPECS.get(entry.tiny["model_type"])
    return spec is not None and spec.tokenizer is not None


def records_table(record: dict) -> str:
    """The Markdown table of a record of full-size twin runs: one row per registry row, in the order run."""
    lines = ["| registry row | parameters (M) | dtype | claim | verdict | exit | wall (s) | max RSS (MiB) | "
             "tokenizer vocabulary: trained / config |", "|---|---:|---|---|---|---:|---:|---:|---|"]
    for r in record["rows"]:
        vocab = (f"{r['tokenizer_vocab']:,} / {r['vocab_size']:,}" if r.get("tokenizer_vocab") is not None
                 else "none (no vocabulary to train)" if _has_tokenizer(REGISTRY.get(r["id"])) else "(no tokenizer)")
        params = f"{r['parameters'] / 1e6:,.1f}" if r.get("parameters") else "–"
        said = (r.get("said") or "").removeprefix("aniso run: ").split(" (", 1)[0]  # the line, up to its details
        verdict = r["verdict"] or (f"refused: {said}" if said else "–")
        lines.append(f"| {r['id']} | {params} | {REGISTRY.get(r['id']).source.dtype} | `{r['claim']}` | {verdict} | "
                     f"{r['exit_code']} | {r['wall_s']:,.0f} | {r['max_rss_mib']:,} | {vocab} |")
    return "\n".join(lines)


def _page_table(page: str) -> str:
    return page.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def test_the_twins_page_shows_the_recorded_runs_as_recorded():
    """The table of docs/twins.md is the record's, row for row; every recorded row is a hub row with a full config,
    and the record says what was run, where, and that the machine was shared."""
    record = json.loads(RECORD.read_text())
    assert _page_table((ROOT / "docs/twins.md").read_text()) == records_table(record)
    assert "--twin --full-size" in record["command"] and record["commit"] and "shared" in record["machine"]["shared"]
    for r in record["rows"]:
        assert REGISTRY.get(r["id"]).full is not None and r["exit_code"] in (0, 1, 2, 3)
        assert r["wall_s"] > 0 and r["max_rss_mib"] > 0


def test_the_table_says_each_field_of_a_row():
    row = {"id": "gpt2", "claim": "G.token-nlp-anisotropic", "verdict": "holds", "exit_code": 0, "wall_s": 95.8,
           "max_rss_mib": 1017, "parameters": 124_439_808, "tokenizer_vocab": 31_000, "vocab_size": 50257}
    table = records_table({"rows": [row, dict(row, id="canine-s", tokenizer_vocab=None, verdict=None, exit_code=2,
                                               said="aniso run: x: cannot run (because)")]}).splitlines()
    assert table[2] == ("| gpt2 | 124.4 | float32 | `G.token-nlp-anisotropic` | holds | 0 | 96 | 1,017 | "
                        "31,000 / 50,257 |")
    assert table[3].endswith("| refused: x: cannot run | 2 | 96 | 1,017 | none (no vocabulary to train) |")


# -- refusals -----------------------------------------------------------------------------------------------------


def test_full_size_without_twin_is_one_line_exit_2(capsys):
    from aniso.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "albert-base-v2", "--full-size"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--full-size needs --twin" in err[0], err


def test_a_row_without_full_is_refused_in_one_line_naming_it(tmp_path, capsys):
    from aniso.cli import main

    text = (ROOT / "models.yaml").read_text(encoding="utf-8")
    line = next(l for l in text.splitlines() if l.startswith("  full: {hidden_size: 768, embedding_size: 128"))
    (tmp_path / "models.yaml").write_text(text.replace(line + "\n", "", 1), encoding="utf-8")
    assert main(["run", "albert-base-v2", "--twin", "--full-size", "--registry", str(tmp_path / "models.yaml"),
                 "--claims-dir", str(ROOT / "claims")]) == 2
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and "albert-base-v2: the registry row has no 'full' config" in err[0], err


def test_run_twins_full_size_must_be_a_bool():
    from aniso.api import run_twins

    with pytest.raises(TypeError, match="full_size: 'yes'"):
        run_twins("albert-base-v2", full_size="yes")


# -- one real run -------------------------------------------------------------------------------------------------


def test_full_size_twin_of_albert_runs_a_claim_through_the_hub_path(tmp_path, monkeypatch):
    """The smallest row's full-size twin (ALBERT-base, 11 M parameters): built at its full config, its Unigram
    vocabulary trained towards 30,000 entries (the manifest says how many the trainer reached), imported into a hub
    cache and run offline; its verdicts are labelled as a full-size twin's, never judged, never findings."""
    from aniso.api import run_twins

    for name in [k for k in os.environ if k.startswith("ANISO_") and k not in ("ANISO_CACHE_DIR", "ANISO_CORPUS")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    for name in ("ANISO_CACHE_DIR", "ANISO_CORPUS"):  # (relative to the checkout in CI)
        if os.environ.get(name):
            monkeypatch.setenv(name, os.path.abspath(os.environ[name]))
    said = []
    done = run_twins("albert-base-v2", "G.token-nlp-anisotropic", registry=ROOT / "models.yaml",
                     keep=tmp_path / "twins", full_size=True, say=said.append,
                     pytest_args=["--aniso-n-sequences", "4", "--aniso-n-bootstrap", "0"])
    assert done.exit_code == 0, said
    manifest = json.loads((tmp_path / "twins" / "twin-manifest.json").read_text())
    assert manifest["label"] == TWIN_FULL_SIZE_LABEL and manifest["size"] == "full size"
    row = manifest["rows"]["albert-base-v2"]
    assert row["size"] == "full size" and row["config"] == REGISTRY.get("albert-base-v2").full
    assert row["parameters"] == 11_221_680 and row["weights_dtype"] == "float32"
    assert row["vocab_size"] == 30000 and 512 < row["tokenizer_vocab"] <= 30000
    if row["tokenizer_vocab"] < 30000:
        assert f"reached {row['tokenizer_vocab']} of the config's 30000" in row["vocab_note"]
    from safetensors import safe_open

    folder = tmp_path / "twins" / "folders" / "albert-base-v2"
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        embeddings = [f.get_slice(k).get_shape() for k in f.keys() if k.endswith("word_embeddings.weight")]
    assert embeddings == [[30000, 128]]
    doc = json.loads(done.results_path.read_text())
    assert doc["provenance"]["twin"]["size"] == "full size"
    measured = [r for r in doc["results"] if r["model_id"] == "albert-base-v2" and r["verdict"] != "skipped"]
    assert measured and all(r["twin"] == TWIN_FULL_SIZE_LABEL and r["expected"] is None for r in measured)
    html = done.results_path.with_name("report.html").read_text()
    assert f"Twin run — {TWIN_FULL_SIZE_LABEL}" in html


if __name__ == "__main__":  # write the table of docs/twins.md again from the record
    page = ROOT / "docs/twins.md"
    text = page.read_text()
    head, rest = text.split(TABLE_START, 1)
    page.write_text(head + TABLE_START + "\n" + records_table(json.loads(RECORD.read_text())) + "\n"
                    + TABLE_END + rest.split(TABLE_END, 1)[1])
