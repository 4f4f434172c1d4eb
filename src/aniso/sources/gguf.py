"""Source kind ``gguf``: a GGUF file (llama.cpp's format) shipped in pip packages, dequantised by transformers.

The file lies in an installed package's folder, whole (``file``) or split over several packages (``parts``, joined
in order into the cache and checked against ``sha256``). The packages are located without being imported (their
``__init__`` may need other libraries). transformers reads the file with ``gguf_file=`` (needs the ``gguf``
package), dequantises every tensor to float32 and builds its own architecture class (Llama, Gemma 3, ...) and the
tokenizer stored in the file. A GGUF file holds tensors and metadata, no code.
"""

from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ..common.files import check_readable, sha256_file
from ..common.schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions
from .parts import PackagePart, PackagePath, joined_file, package_file, parts_fingerprint

__all__ = ["GgufSource", "GgufPart", "KIND", "gguf_path"]


#: One piece of a split GGUF file (kept under its old name).
GgufPart = PackagePart


class GgufSource(Strict):
    """A GGUF file in the folder of the installed package ``package`` (``file``), or split over ``parts`` joined in
    order (``sha256`` of the joined file is then required). ``distribution``: the pip name(s), for the install hint."""

    kind: Literal["gguf"]
    package: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    file: PackagePath | None = None
    parts: tuple[GgufPart, ...] = ()
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    distribution: str | None = None

    @model_validator(mode="after")
    def _whole_or_parts(self) -> "GgufSource":
        if bool(self.package and self.file) == bool(self.parts):
            raise ValueError("give either 'package' and 'file' (one GGUF file) or 'parts' (a split one)")
        if self.parts and not self.sha256:
            raise ValueError("a split GGUF file needs the 'sha256' of the joined file")
        return self


def gguf_path(entry, ctx: SourceContext) -> Path:
    """The GGUF file of the entry: the package's file, or the parts joined once into ``<cache>/gguf/<sha256>.gguf``.

    Raises ModelUnavailable naming the model if a package or file is missing, the cache folder is not set for a
    split file, or the joined file's SHA-256 is not ``sha256``.
    """
    src = entry.source
    if not src.parts:
        return package_file(entry, src.package, src.file)
    if ctx.cache_dir is None:
        raise ModelUnavailable(f"{entry.id}: a split GGUF file is joined in the cache folder, which is not set")
    return joined_file(entry, src.parts, src.sha256, Path(ctx.cache_dir) / "gguf" / f"{src.sha256}.gguf")


def fingerprint(entry, ctx: SourceContext) -> str:
    """``gguf:<sha256 prefix>`` of the (joined) file: the registry's checksum for split files, else the file's
    (``gguf:unread`` where ``ctx.read_weights`` is False: the file checked readable, not read)."""
    check_permissions(entry)
    src = entry.source
    if src.parts:
        return f"gguf:{parts_fingerprint(entry, src.parts, src.sha256)}"
    path = gguf_path(entry, ctx)
    if not ctx.read_weights:
        check_readable([path])
        return "gguf:unread"
    return f"gguf:{sha256_file(path)[:16]}"


@contextmanager
def _one_parse():
    """Within the block, every ``gguf.GGUFReader`` of the same file and mode is one reader, parsed once.

    transformers parses the whole file for the tokenizer, again for the config and again for the weights
    (``modeling_gguf_pytorch_utils.load_gguf_checkpoint``, which looks ``gguf.GGUFReader`` up at each call); the
    parse reads every metadata value one element at a time, so for a tokenizer of 262,144 strings (Gemma 3) each
    parse takes about 20 s on one core. The reader is read-only (fields and memory-mapped tensors), so sharing it
    changes nothing that is read. Each value is a slice of the file's ``numpy.memmap``, whose per-slice bookkeeping
    is most of a parse's time: the reader here slices a plain ``ndarray`` view of the same mapping instead (the same
    bytes; 22.7 s -> 8.6 s for Gemma 3's file, fields and tensors equal). The library's class is restored on leaving
    the block.

    Two more pure functions are computed once per block: the metadata transformers reads without the tensors
    (``load_gguf_checkpoint(path, return_tensors=False)``, asked for the tokenizer and again for the config; each
    caller gets its own deep copy, since callers edit what they get), and gguf's tensor-name table of an
    architecture and depth (``gguf.get_tensor_name_map``, which transformers builds anew for every submodule of the
    model: 706 times, about 19 s on one core, for Gemma 3; the table is only read).
    """
    import copy

    import gguf
    import numpy as np
    from transformers import modeling_gguf_pytorch_utils as conversion

    original = gguf.GGUFReader
    original_names, original_load = gguf.get_tensor_name_map, conversion.load_gguf_checkpoint

    class PlainArrayReader(original):
        def _get(self, *args, **kwargs):
            if type(self.data) is np.memmap:  # the first read, in __init__: the mapping, seen as a plain array
                self.data = self.data.view(np.ndarray)
            return super()._get(*args, **kwargs)

    readers: dict[tuple[str, str], object] = {}

    def reader(path, mode="r"):
        key = (os.path.realpath(os.fspath(path)), mode)
        if key not in readers:
            readers[key] = PlainArrayReader(path, mode)
        return readers[key]

    names: dict[tuple, object] = {}

    def name_map(arch, n_blocks):
        if (arch, n_blocks) not in names:
            names[arch, n_blocks] = original_names(arch, n_blocks)
        return names[arch, n_blocks]

    metadata: dict[str, dict] = {}

    def load_checkpoint(path, return_tensors=False, *args, **kwargs):
        if return_tensors or args or kwargs:
            return original_load(path, return_tensors, *args, **kwargs)
        key = os.path.realpath(os.fspath(path))
        if key not in metadata:
            metadata[key] = original_load(path, False)
        return copy.deepcopy(metadata[key])

    gguf.GGUFReader = reader
    gguf.get_tensor_name_map, conversion.load_gguf_checkpoint = name_map, load_checkpoint
    try:
        yield
    finally:
        gguf.GGUFReader = original
        gguf.get_tensor_name_map, conversion.load_gguf_checkpoint = original_names, original_load


@contextmanager
def _no_conversion_bar():
    """Within the block, transformers' GGUF weight conversion runs without its progress bar ("Converting and
    de-quantizing GGUF tensors..."): that bar is a plain ``tqdm`` of ``modeling_gguf_pytorch_utils``, which the
    library's progress-bar switch (:func:`aniso.sources.no_loading_bars`) does not reach, and its carriage-return line
    would be left in logs and CI output. The module's ``tqdm`` is restored on leaving the block."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as conversion

    original = getattr(conversion, "tqdm", None)
    if original is None:
        yield
        return
    conversion.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        conversion.tqdm = original


def load(entry, ctx: SourceContext) -> LoadedModel:
    """The model (float32, eval mode) and its tokenizer, read from the GGUF file by transformers."""
    check_permissions(entry)
    path = gguf_path(entry, ctx)
    if importlib.util.find_spec("gguf") is None:
        raise ModelUnavailable(f"{entry.id}: reading GGUF files needs the gguf package (pip install gguf)")
    import torch
    from transformers import AutoModel, AutoTokenizer

    try:
        with _one_parse(), _no_conversion_bar():
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModel.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(f"{entry.id}: transformers could not read {path}: {str(exc)[:300]}") from None
    return LoadedModel(entry, model, tokenizer, f"gguf: {path} (dequantised to float32 by transformers, "
                       f"{type(model).__name__})")


KIND = SourceKind("gguf", GgufSource, fingerprint, load, needs=(("modality", "text"),), is_a="a language model")
