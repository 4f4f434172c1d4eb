"""Inputs that are not what they claim to be: a model folder whose tokenizer is another model's (a tokenizer class of
another family, padding with another id, a vocabulary id past the embedding), recordings and photographs that are
copies of one another, text files read under an ASCII locale, file names that are UTF-8 under an ASCII locale, and
a relative registry given to pytest. Each is refused in one line naming the file and field, or said, never measured
silently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _entry(folder: Path):
    from aniso.registry.entries import ModelEntry

    return ModelEntry.model_validate(dict(id="m", source={"kind": "local", "path": str(folder)}, modality="text",
                                          granularity="subword", architecture="transformer", role="encoder",
                                          family="bert"))


def _copy(tiny_bert_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    return folder


def _edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(json.dumps(data), encoding="utf-8")


def _refusal(folder: Path) -> str:
    from aniso.sources import load_model
    from aniso.sources.base import ModelRefused

    with pytest.raises(ModelRefused) as info:
        load_model(_entry(folder))
    msg = str(info.value)
    assert len(msg.splitlines()) == 1, msg
    return msg


def test_the_model_s_own_tokenizer_loads(tiny_bert_dir):
    from aniso.sources import load_model

    assert load_model(_entry(tiny_bert_dir)).tokenizer is not None


@pytest.mark.parametrize("cls", ["GPT2Tokenizer", "RobertaTokenizer"])
def test_a_tokenizer_class_of_another_family_is_refused_naming_the_field(tiny_bert_dir, tmp_path, cls):
    """It was measured: a BERT read through GPT-2's (RoBERTa's) tokenizer class, 0.52 (0.80) instead of 0.27."""
    folder = _copy(tiny_bert_dir, tmp_path)
    _edit(folder / "tokenizer_config.json", tokenizer_class=cls)
    msg = _refusal(folder)
    assert "tokenizer_config.json field tokenizer_class" in msg and repr(cls) in msg and "'bert'" in msg, msg


def test_a_tokenizer_of_a_shared_class_is_not_judged_by_family():
    """ByT5's tokenizer with ``model_type: t5`` is the model's own (transformers lists it for no model type)."""
    from aniso.sources.hub import _shared_tokenizers

    assert {"ByT5Tokenizer", "BertweetTokenizer"} <= _shared_tokenizers()
    assert not {"BertTokenizer", "RobertaTokenizer", "GPT2Tokenizer", "T5Tokenizer"} & _shared_tokenizers()


def test_a_tokenizer_padding_with_another_id_than_the_config_is_refused(tiny_bert_dir, tmp_path):
    """It was measured: MiniLM's weights with RoBERTa's tokenizer (<pad> = 1; the config pads with 0)."""
    folder = _copy(tiny_bert_dir, tmp_path)
    _edit(folder / "config.json", pad_token_id=1)
    msg = _refusal(folder)
    assert "pads with '[PAD]', id 0" in msg and "config.json field pad_token_id is 1" in msg, msg
    assert "tokenizer.json" in msg, msg


def test_a_tokenizer_id_past_the_embedding_is_blamed_on_the_tokenizer(tiny_bert_dir, tmp_path):
    """It was refused later, blaming config.json's vocab_size and naming neither tokenizer.json nor the id."""
    folder = _copy(tiny_bert_dir, tmp_path)
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    data["model"]["vocab"]["w0"] = 40000
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    msg = _refusal(folder)
    assert "tokenizer.json" in msg and "'w0' the id 40000" in msg and "embedding's" in msg, msg


def _photos(folder: Path, n: int, copies: int) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(folder / f"p{i}.png")
    for i in range(copies):
        shutil.copyfile(folder / "p0.png", folder / f"z{i}.png")


def _recordings(folder: Path, n: int, copies: int) -> None:
    import soundfile

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        soundfile.write(folder / f"r{i}.wav", 0.1 * np.sin(np.arange(16000) / (5.0 + i)).astype(np.float32), 16000)
    for i in range(copies):
        shutil.copyfile(folder / "r0.wav", folder / f"z{i}.wav")


@pytest.mark.parametrize("kind", ["images", "speech"])
def test_copies_of_one_photograph_or_recording_are_refused(tmp_path, kind):
    """Eight copies of one photograph were measured as eight photographs (average cosine 1 at every layer)."""
    from aniso.inputs.media import InputsUnavailable, load_images, load_speech

    make, load, setting = ((_photos, load_images, "image_dir") if kind == "images"
                           else (_recordings, load_speech, "speech_dir"))
    make(tmp_path, 1, 3)
    with pytest.raises(InputsUnavailable) as info:
        load(tmp_path, 8, 0)
    msg = str(info.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(f"{setting}: the 4 ") and "copies of one" in msg, msg


@pytest.mark.parametrize("kind", ["images", "speech"])
def test_copies_among_distinct_inputs_are_counted_in_the_label(tmp_path, kind):
    from aniso.inputs.media import load_images, load_speech

    make, load, what = ((_photos, load_images, "photographs") if kind == "images"
                        else (_recordings, load_speech, "recordings"))
    make(tmp_path, 3, 2)
    media = load(tmp_path, 8, 0)
    assert len(media.items) == 5
    assert f"2 of the 5 {what} repeat another (the same content: " in media.label, media.label
    make(tmp_path / "distinct", 3, 0)
    assert "repeat" not in load(tmp_path / "distinct", 8, 0).label


def _ascii_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", PYTHONUTF8="0", PYTHONPATH=str(ROOT / "src"))
    return env


def test_the_registry_is_read_and_listed_under_an_ascii_locale(tmp_path):
    """models.yaml (UTF-8) could not be read under LC_ALL=C: 'ascii' codec can't decode byte 0xc2."""
    proc = subprocess.run([sys.executable, "-m", "aniso.cli", "list", "claims", "--registry", str(ROOT / "models.yaml")],
                          capture_output=True, text=True, timeout=120, env=_ascii_env(), cwd=tmp_path,
                          encoding="utf-8", errors="replace")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "G.token-nlp-anisotropic" in proc.stdout


def test_a_utf8_file_name_read_under_an_ascii_locale_is_accepted_and_an_undecodable_one_refused(tmp_path):
    """Under an ASCII locale Python reads a UTF-8 name's bytes past 127 as lone surrogates; the name is UTF-8."""
    from aniso.common.settings import SettingError, Settings

    as_ascii_reads_it = "c\udcc3\udcb6rpus.txt"  # 'cörpus.txt' under LC_ALL=C
    settings = Settings.from_sources({"report_dir": str(tmp_path / as_ascii_reads_it)})
    assert settings.report_dir.endswith(as_ascii_reads_it)
    with pytest.raises(SettingError, match=r"setting report_dir .*no UTF-8 text"):
        Settings.from_sources({"report_dir": str(tmp_path / "c\udcffrpus")})  # byte 0xff: no UTF-8 at all


def test_a_relative_registry_given_to_pytest_is_taken_from_the_working_folder(tmp_path, monkeypatch):
    """pytest took it from its root folder, while the docs (and aniso run --registry) take the working folder."""
    from aniso.registry.locate import registry_path

    here, root = tmp_path / "here", tmp_path / "root"
    (here / "fx").mkdir(parents=True)
    root.mkdir()
    (here / "fx" / "models.yaml").write_text("models: []\n", encoding="utf-8")
    monkeypatch.chdir(here)
    assert registry_path(None, "fx/models.yaml", root) == here / "fx" / "models.yaml"
    assert registry_path("fx/models.yaml", None, root) == here / "fx" / "models.yaml"
    assert registry_path(None, None, root) == ROOT / "models.yaml"  # unset: models.yaml in the root, else the tree's


def test_a_photograph_with_a_utf8_name_is_measured_under_an_ascii_locale(tmp_path):
    """Under an ASCII locale the name of ``é.png`` reaches Python as ``\\udcc3\\udca9.png``; it was skipped as "not
    UTF-8"."""
    from PIL import Image

    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(tmp_path / "p.png")
    Image.fromarray(np.full((8, 8, 3), 200, dtype=np.uint8)).save(tmp_path / "\u00e9.png")
    code = ("import warnings, sys; warnings.simplefilter('error'); from aniso.inputs.media import load_images; "
            f"m = load_images({str(tmp_path)!r}.encode('utf-8').decode('ascii', 'surrogateescape'), 8, 0); "
            "print(len(m.items), len(m.skipped))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_ascii_env(), encoding="utf-8", errors="replace")
    assert proc.returncode == 0 and proc.stdout.split() == ["2", "0"], proc.stderr[-2000:]


def test_a_report_recording_a_utf8_path_read_under_an_ascii_locale_is_written_as_utf8(tmp_path):
    """The run measured and then stopped writing report.html ("'utf-8' codec can't encode ... surrogates not
    allowed"): a report folder named 'rép' under LC_ALL=C reaches Python as 'r\\udcc3\\udca9p'."""
    from aniso.judge.results import ResultsDocument, provenance, write_results
    from aniso.report import write_html_report

    as_ascii_reads_it = "r\udcc3\udca9p"
    doc = ResultsDocument(provenance=provenance(tmp_path, {"report_dir": f"/tmp/{as_ascii_reads_it}"}, None),
                          results=[])
    write_results(tmp_path / "results.json", doc)
    out = write_html_report(tmp_path / "results.json", tmp_path / "report.html")
    assert "report_dir = \u2026/r\u00e9p" in out.read_text(encoding="utf-8")


#: The modules that read and write the registry, the model folders, the inputs, results and reports; each text file
#: they open names its encoding (a locale's default, ASCII under LC_ALL=C, could not read the suite's own models.yaml).
_ENCODED = ("registry", "sources", "inputs", "judge", "report", "stats/cache.py", "common/files.py",
            "common/settings.py", "cli.py", "api.py")


def _text_opens_without_encoding(path: Path) -> list[str]:
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        keywords = {k.arg for k in node.keywords}
        if name in ("read_text", "write_text") and "encoding" not in keywords:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
        elif name == "open" and isinstance(func, ast.Name) and "encoding" not in keywords:
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                 None)
            if not (isinstance(mode, ast.Constant) and "b" in str(mode.value)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} open")
    return found


def test_every_text_file_the_suite_reads_or_writes_names_its_encoding():
    src = ROOT / "src" / "aniso"
    files = [p for part in _ENCODED for p in ((src / part).rglob("*.py") if (src / part).is_dir() else [src / part])]
    assert len(files) > 30
    found = [hit for p in files for hit in _text_opens_without_encoding(p)]
    assert not found, found
