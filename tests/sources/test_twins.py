"""Twins of the registry's hub rows, through the path a user with a hub takes (:mod:`aniso.sources.twin`).

Every hub row's twin (its own model class and model_type, seeded random weights as safetensors, the preprocessing
files of its own tokenizer or processor class) is imported with `aniso hub import`'s code into a temporary Hugging
Face cache at the row's repo and revision, and loaded by the hub source with HF_HUB_OFFLINE=1 in the row's dtype,
then run through its modality's extraction; a checkpoint series' twins load under their own repos and revisions.
A row that needs its repository's code loads only with the opt-in; a row the registry says cannot run is refused
with the record. `aniso run ID,... --twin` runs every claim on five twins end to end, one of each path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from aniso.extract.modalities import modality_of
from aniso.registry.entries import load_registry
from aniso.sources import ModelUnavailable, SourceContext, load_model
from aniso.sources.hubcache import import_folder, resolve_commit
from aniso.sources.twin import TWIN_SPECS, TwinError, twin_folders, twin_spec
from aniso.stats.dynamics import checkpoint_entries

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = load_registry(ROOT / "models.yaml")
HUB_ROWS = [e for e in REGISTRY if e.source.kind == "hub"]


@pytest.fixture(scope="module")
def texts():
    from aniso.inputs.text import load_corpus

    return load_corpus(None, 128, 0).sequences  # the embedded fallback corpus: no file, no hub


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    return tmp_path_factory.mktemp("twins") / "hub"


@pytest.fixture
def offline(hub, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return hub


def _imported(entry, hub, texts, tmp_path):
    folders = twin_folders(entry, tmp_path / "folders", texts, seed=0, max_steps=2)
    for f in folders:
        done = import_folder(f.repo, f.folder, f.revision, cache_dir=hub)
        assert resolve_commit(f.repo, f.revision, hub) == done.commit
    return folders


def test_every_hub_row_has_a_twin_or_a_record_of_why_not():
    """40 of the 41 hub rows have a twin; VAN (no model_type van in transformers 5) is refused with the registry's
    record of what stops it and what would make it run."""
    assert len(HUB_ROWS) == 41
    refused = {}
    for e in HUB_ROWS:
        try:
            twin_spec(e)
        except TwinError as exc:
            refused[e.id] = str(exc)
    assert list(refused) == ["van-base"]
    assert "transformers 5 removed VAN" in refused["van-base"] and "would run with transformers < 5" in refused["van-base"]


@pytest.mark.parametrize("entry", [e for e in HUB_ROWS if e.cannot_run is None], ids=lambda e: e.id)
def test_twin_loads_through_the_hub_cache_offline(entry, texts, offline, tmp_path):
    """The twin, imported at the row's repo and revision, loads through the hub source from the cache: the base
    model of the row's own class in the row's dtype, every weight from the files, the preprocessing of the row's
    own classes, and one forward through the row's modality; a series' checkpoints load under their own repos."""
    folders = _imported(entry, offline, texts, tmp_path)
    model_type, _, spec = twin_spec(entry)
    if entry.needs_remote_code:  # the repository's code: refused without the opt-in, run with it
        with pytest.raises(ModelUnavailable, match="needs custom code from its repository"):
            load_model(entry, SourceContext())
        entry = entry.model_copy(update={"trust_remote_code": True})
    loaded = load_model(entry, SourceContext())
    model = loaded.model
    assert model.config.model_type == model_type and model.config.architectures == [spec.model_class]
    assert type(model).__name__ == (spec.model_class if spec.remote else type(model).__name__)
    assert {p.dtype for p in model.parameters()} == {getattr(torch, entry.source.dtype)}
    assert loaded.origin.startswith(f"hub cache: {entry.source.repo}@{entry.source.revision} (commit ")
    assert f"imported from {folders[0].folder}" in loaded.origin
    provenance = folders[0].provenance
    if entry.modality == "text":
        assert type(loaded.tokenizer).__name__.removesuffix("Fast") in (provenance["tokenizer"].removesuffix("Fast"),
                                                                       "TokenizersBackend")
        ids = loaded.tokenizer("The anisotropy of hidden states.")["input_ids"]
        assert loaded.tokenizer.unk_token_id not in ids  # a vocabulary trained on the corpus, not a stub
    else:
        assert type(loaded.processor).__name__.removesuffix("Pil") == provenance["processor"]
    modality = modality_of(entry)
    model.float()
    batches = list(modality.run(model, loaded.tokenizer, loaded.processor, modality.check_items(0), 2, "cpu", 32))
    assert batches and all(torch.isfinite(h).all() for b in batches for h in b.layers)
    if entry.checkpoints is not None:
        steps = [f.step for f in folders[1:]]
        assert len(steps) == 2 and steps == [entry.checkpoints.steps[0], entry.checkpoints.steps[-1]]
        series = entry.model_copy(update={"checkpoints": entry.checkpoints.model_copy(update={"steps": steps})})
        weights = []
        for (step, ckpt), folder in zip(checkpoint_entries(series, SourceContext()), folders[1:]):
            assert (ckpt.source.repo, ckpt.source.revision) == (folder.repo, folder.revision)
            got = load_model(ckpt, SourceContext())
            assert f"imported from {folder.folder}" in got.origin
            weights.append(next(got.model.parameters()).detach().clone())
        assert not torch.equal(weights[0], weights[1])  # each checkpoint its own weights


def test_twin_specs_name_classes_transformers_has():
    import transformers

    for model_type, spec in TWIN_SPECS.items():
        if spec.remote is None:
            assert hasattr(transformers, spec.model_class), model_type
        else:
            assert all(hasattr(transformers, c) for c in spec.remote), model_type


def test_a_twin_is_the_same_files_for_the_same_seed(texts, tmp_path):
    entry = REGISTRY.get("gpt2")
    a = twin_folders(entry, tmp_path / "a", texts, seed=3)[0]
    b = twin_folders(entry, tmp_path / "b", texts, seed=3)[0]
    c = twin_folders(entry, tmp_path / "c", texts, seed=4)[0]
    read = lambda f: (f.folder / "model.safetensors").read_bytes()  # noqa: E731
    assert read(a) == read(b) != read(c)
    assert (a.folder / "tokenizer.json").read_bytes() == (b.folder / "tokenizer.json").read_bytes()
    assert os.path.getsize(a.folder / "model.safetensors") < 1_000_000


#: Rows whose twins run every claim end to end in CI, one of each path: a subword decoder with a checkpoint series
#: (three checkpoints under their own revisions), a character encoder from its repository's code (opt-in for the
#: twin), speech, a vision Transformer, a CNN.
END_TO_END = ("pythia-2.8b", "character-bert", "wav2vec2-base", "vit-base-patch16-224", "resnet-50")


def test_aniso_run_twin_runs_the_claims_through_the_hub_path(tmp_path, monkeypatch, capsys):
    """`aniso run ID,ID,... --twin`: every claim that applies runs on the twins (exit 0), each verdict labelled and
    not judged, none a finding; results.json names each twin's provenance and the hub cache it was loaded from."""
    import json

    from aniso.cli import main
    from aniso.sources.twin import TWIN_LABEL

    for name in [k for k in os.environ if k.startswith("ANISO_") and k not in ("ANISO_CACHE_DIR", "ANISO_SPEECH_DIR",
                                                                               "ANISO_IMAGE_DIR", "ANISO_CORPUS")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANISO_REPORT_DIR", str(tmp_path / "reports"))
    for name in ("ANISO_CACHE_DIR", "ANISO_SPEECH_DIR", "ANISO_IMAGE_DIR", "ANISO_CORPUS"):  # (set relative to the
        if os.environ.get(name):  # checkout, as CI sets them: absolute before the working folder changes)
            monkeypatch.setenv(name, os.path.abspath(os.environ[name]))
    monkeypatch.chdir(tmp_path)  # --keep-twins relative to the working folder, not to the claims' root folder
    code = main(["run", ",".join(END_TO_END), "--twin", "--registry", str(ROOT / "models.yaml"),
                 "--keep-twins", "twins"])
    out, err = capsys.readouterr()
    assert code == 0, out[-3000:] + err[-3000:]
    assert "TWIN RUN (twin: random weights, code path only)" in out
    doc = json.loads(next((tmp_path / "reports").glob("run-*/results.json")).read_text())
    twin = doc["provenance"]["twin"]
    assert twin["label"] == TWIN_LABEL and sorted(twin["rows"]) == sorted(END_TO_END)
    assert [i["revision"] for i in twin["rows"]["pythia-2.8b"]["imported"]] == ["main", "step0", "step1000",
                                                                               "step143000"]
    assert twin["rows"]["character-bert"]["remote_code"] == "modeling_twin.py"
    # the speech row reads short synthetic recordings (INPUT_FORMS["speech"].synthetic), not the 30-s folder
    assert list(twin["inputs"]) == ["speech"] and twin["inputs"]["speech"].startswith("4 synthetic recordings")
    assert len(list((tmp_path / "twins" / "speech").glob("tone-*.wav"))) == 4
    measured = [r for r in doc["results"] if r["model_id"] in END_TO_END and r["verdict"] != "skipped"]
    assert {r["model_id"] for r in measured} == set(END_TO_END)
    assert all(r["twin"] == TWIN_LABEL and r["expected"] is None
               and r["verdict"] in ("holds", "does not hold", "underpowered at this size") for r in measured)
    assert {r["claim_id"] for r in measured if r["model_id"] == "pythia-2.8b"} >= {
        "R.decoder-anisotropy-grows", "G.qk-means-align", "G.attention-entropy-decays", "X.attention-sink"}
    for mid in END_TO_END:
        origin = doc["models"][mid]["meta"]["origin"]
        assert origin.startswith(f"hub cache: {REGISTRY.get(mid).source.repo}@main (commit ") and "imported from" in origin
    html = next((tmp_path / "reports").glob("run-*/report.html")).read_text()
    assert "Twin run — twin: random weights, code path only" in html and "None: every measured claim holds" in html


def test_aniso_run_twin_refuses_a_row_the_registry_says_cannot_run(capsys):
    from aniso.cli import main

    assert main(["run", "van-base", "--twin", "--registry", str(ROOT / "models.yaml")]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "van-base" in line]
    assert len(lines) == 1 and "cannot run with the locked libraries: transformers 5 removed VAN" in lines[0]


@pytest.mark.parametrize("kind", ["bert-wordpiece", "t5-unigram", "albert-unigram", "gpt2-bpe", "llama-bpe"])
def test_a_twin_tokenizer_is_the_same_files_each_build(kind, texts, tmp_path):
    """Two builds of one twin (a CI job run twice) are one commit: the trainers' hash-map order, which changes
    from run to run, reaches neither the vocabulary, nor its ids, nor the scores."""
    from aniso.sources.twin import _save_tokenizer, twin_tokenizer

    def files(i):
        _save_tokenizer(twin_tokenizer(kind, texts, 512), tmp_path / str(i))
        return {p.name: p.read_bytes() for p in (tmp_path / str(i)).iterdir()}

    first = files(0)
    for i in range(1, 4):
        assert files(i) == first


def test_the_bert_twin_is_the_same_files_each_build(texts, tmp_path):
    entry = REGISTRY.get("bert-base-uncased")
    a, b = (twin_folders(entry, tmp_path / n, texts, seed=0)[0] for n in "ab")
    assert sorted(p.name for p in a.folder.iterdir()) == sorted(p.name for p in b.folder.iterdir())
    for p in a.folder.iterdir():
        assert p.read_bytes() == (b.folder / p.name).read_bytes(), p.name
