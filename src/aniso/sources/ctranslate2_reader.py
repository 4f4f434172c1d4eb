"""A reader for CTranslate2's ``model.bin`` weight format, and its mapping onto transformers' Whisper.

CTranslate2 (OpenNMT) stores a converted model as one binary file: a format
version, the spec name and revision, then every variable as
``name, rank, dims, dtype id, byte count, raw bytes`` (little endian), then
aliases (variables that share another's value). This module reads that file
into numpy arrays without running any code from it, and maps a Whisper spec
onto the parameter names of ``transformers.WhisperModel`` (fused Q/K/V and
K/V projections are split; Whisper's key projection has no bias).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["CT2Model", "read_ct2_model", "whisper_state_dict", "whisper_config"]

#: CTranslate2's DataType enum (include/ctranslate2/types.h), in order.
_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16, "bfloat16")


@dataclass
class CT2Model:
    """The contents of a CTranslate2 ``model.bin``.

    ``variables`` maps names to arrays (as stored: float16 stays float16,
    bfloat16 is widened to float32); aliases are resolved to the arrays they
    name. ``spec`` is the spec name (e.g. ``WhisperSpec``), ``revision`` its
    revision and ``binary_version`` the file-format version.
    """

    spec: str
    revision: int
    binary_version: int
    variables: dict[str, np.ndarray]


class _Cursor:
    def __init__(self, data: bytes, path: Path):
        self.data, self.pos, self.path = data, 0, path

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"{self.path}: truncated CTranslate2 model file (wanted {n} bytes at offset {self.pos})")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def string(self) -> str:
        (n,) = self.unpack("H")
        return self.take(n)[:-1].decode("utf-8")  # stored with a trailing NUL


def read_ct2_model(path: str | Path) -> CT2Model:
    """Read a CTranslate2 ``model.bin`` (binary format versions 5 and 6).

    Parameters
    ----------
    path : the ``model.bin`` file

    Returns
    -------
    :class:`CT2Model`

    Raises
    ------
    FileNotFoundError if the file is missing; ValueError naming the file on an
    unsupported format version, an unknown dtype id, a byte count that does
    not match the shape, or truncation.
    """
    path = Path(path)
    cur = _Cursor(path.read_bytes(), path)
    (version,) = cur.unpack("I")
    if version not in (5, 6):
        raise ValueError(f"{path}: CTranslate2 binary format version {version} is not supported (5 or 6)")
    spec = cur.string()
    (revision,) = cur.unpack("I")
    (n_vars,) = cur.unpack("I")
    variables: dict[str, np.ndarray] = {}
    for _ in range(n_vars):
        name = cur.string()
        (rank,) = cur.unpack("B")
        shape = cur.unpack(f"{rank}I") if rank else ()
        (type_id,) = cur.unpack("B")
        (n_bytes,) = cur.unpack("I")
        raw = cur.take(n_bytes)
        if type_id >= len(_DTYPES):
            raise ValueError(f"{path}: variable {name!r} has unknown dtype id {type_id}")
        dtype = _DTYPES[type_id]
        if dtype == "bfloat16":
            arr = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype)
        if arr.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: variable {name!r} has {arr.size} values for shape {shape}")
        variables[name] = arr.reshape(shape)
    (n_alias,) = cur.unpack("I")
    for _ in range(n_alias):
        alias, target = cur.string(), cur.string()
        if target not in variables:
            raise ValueError(f"{path}: alias {alias!r} names a missing variable {target!r}")
        variables[alias] = variables[target]
    return CT2Model(spec, revision, version, variables)


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _count_layers(variables: dict[str, np.ndarray], prefix: str) -> int:
    pattern = re.compile(rf"^{prefix}/layer_(\d+)/")
    return len({m.group(1) for k in variables if (m := pattern.match(k))})


def whisper_config(ct2: CT2Model, **overrides):
    """A ``transformers.WhisperConfig`` with the sizes of a CTranslate2 Whisper model.

    Sizes are read from the variables' shapes (d_model, layers, heads, FFN
    width, mel bins, positions, vocabulary). ``overrides`` (e.g. token ids from
    the model's config.json) are passed on. Raises ValueError if ``ct2`` is not
    a ``WhisperSpec``.
    """
    from transformers import WhisperConfig

    if ct2.spec != "WhisperSpec":
        raise ValueError(f"not a CTranslate2 Whisper model (spec {ct2.spec!r})")
    v = ct2.variables
    vocab, d_model = v["decoder/embeddings/weight"].shape
    return WhisperConfig(
        vocab_size=int(vocab),
        d_model=int(d_model),
        num_mel_bins=int(v["encoder/conv1/weight"].shape[1]),
        encoder_layers=_count_layers(v, "encoder"),
        decoder_layers=_count_layers(v, "decoder"),
        encoder_attention_heads=int(v["encoder/num_heads"]),
        decoder_attention_heads=int(v["decoder/num_heads"]),
        encoder_ffn_dim=int(v["encoder/layer_0/ffn/linear_0/weight"].shape[0]),
        decoder_ffn_dim=int(v["decoder/layer_0/ffn/linear_0/weight"].shape[0]),
        max_source_positions=int(v["encoder/position_encodings/encodings"].shape[0]),
        max_target_positions=int(v["decoder/position_encodings/encodings"].shape[0]),
        tie_word_embeddings=True,
        **overrides,
    )


def _split(w: np.ndarray, parts: int) -> list[np.ndarray]:
    if w.shape[0] % parts:
        raise ValueError(f"cannot split a fused projection of {w.shape[0]} rows into {parts}")
    return np.split(w, parts, axis=0)


def _attention(out: dict, dst: str, src: str, v: dict, fused: tuple[str, ...], names: tuple[str, ...]) -> None:
    """Map CTranslate2 attention projections (fused linear_0 / linear_1 / linear_2) onto q/k/v/out_proj."""
    for linear, group in zip(fused, names):
        w = v[f"{src}/{linear}/weight"]
        b = v[f"{src}/{linear}/bias"]
        for proj, wi, bi in zip(group, _split(w, len(group)), _split(b, len(group))):
            out[f"{dst}.{proj}.weight"] = _f32(wi)
            if proj == "k_proj":
                # Whisper's key projection has no bias; CTranslate2 stores zeros in its place.
                if np.any(bi != 0):
                    raise ValueError(f"{src}/{linear}: non-zero key bias, which WhisperModel cannot hold")
            else:
                out[f"{dst}.{proj}.bias"] = _f32(bi)


def whisper_state_dict(ct2: CT2Model) -> dict[str, np.ndarray]:
    """The weights of a CTranslate2 Whisper model under ``transformers.WhisperModel``'s parameter names.

    Float16 weights become float32. The fused self-attention projection
    (``linear_0``, rows Q, K, V) and the cross-attention K/V projection are
    split; the output projection ``decoder/projection`` is tied to the token
    embeddings in Whisper and is not part of ``WhisperModel``.

    Returns a dict name → float32 array. Raises KeyError naming a variable the
    file lacks, ValueError on a spec that is not Whisper.
    """
    if ct2.spec != "WhisperSpec":
        raise ValueError(f"not a CTranslate2 Whisper model (spec {ct2.spec!r})")
    v = ct2.variables
    out: dict[str, np.ndarray] = {}

    def norm(dst: str, src: str) -> None:
        out[f"{dst}.weight"] = _f32(v[f"{src}/gamma"])
        out[f"{dst}.bias"] = _f32(v[f"{src}/beta"])

    def linear(dst: str, src: str) -> None:
        out[f"{dst}.weight"] = _f32(v[f"{src}/weight"])
        out[f"{dst}.bias"] = _f32(v[f"{src}/bias"])

    def layer(d: str, s: str, cross: bool) -> None:
        norm(f"{d}.self_attn_layer_norm", f"{s}/self_attention/layer_norm")
        _attention(out, f"{d}.self_attn", f"{s}/self_attention", v, ("linear_0", "linear_1"),
                   (("q_proj", "k_proj", "v_proj"), ("out_proj",)))
        if cross:
            norm(f"{d}.encoder_attn_layer_norm", f"{s}/attention/layer_norm")
            _attention(out, f"{d}.encoder_attn", f"{s}/attention", v, ("linear_0", "linear_1", "linear_2"),
                       (("q_proj",), ("k_proj", "v_proj"), ("out_proj",)))
        norm(f"{d}.final_layer_norm", f"{s}/ffn/layer_norm")
        linear(f"{d}.fc1", f"{s}/ffn/linear_0")
        linear(f"{d}.fc2", f"{s}/ffn/linear_1")

    for conv in ("conv1", "conv2"):
        linear(f"encoder.{conv}", f"encoder/{conv}")
    out["encoder.embed_positions.weight"] = _f32(v["encoder/position_encodings/encodings"])
    for i in range(_count_layers(v, "encoder")):
        layer(f"encoder.layers.{i}", f"encoder/layer_{i}", cross=False)
    norm("encoder.layer_norm", "encoder/layer_norm")
    out["decoder.embed_tokens.weight"] = _f32(v["decoder/embeddings/weight"])
    out["decoder.embed_positions.weight"] = _f32(v["decoder/position_encodings/encodings"])
    for i in range(_count_layers(v, "decoder")):
        layer(f"decoder.layers.{i}", f"decoder/layer_{i}", cross=True)
    norm("decoder.layer_norm", "decoder/layer_norm")
    return out
