"""One switch per concept: a source kind, a modality, a kind of inputs, an untrained block kind or a twin's
tokenizer or preprocessor is compared with a name only in its table's module.

Adding a modality is one row of :mod:`aniso.extract.modalities` (and a loader and a row of
:mod:`aniso.inputs.forms` for a new kind of inputs); adding a source kind is one module of :mod:`aniso.sources` and
one row of its table; a block kind is one row of ``aniso.experiments.untrained_block._BLOCKS``; a twin's tokenizer
or preprocessor one row of the tables of :mod:`aniso.sources.twin`. Code elsewhere asks the row
(``modality_of(entry)``, ``INPUT_FORMS[kind]``, ``SOURCE_KINDS[kind]``, a row's fields) instead of comparing
``entry.modality == "speech"`` or ``source.kind == "hub"``; this scan of the source (an AST walk) finds every such
comparison outside the table modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "aniso"

#: The names a registry entry gives its modality, its inputs, its architecture and its source kind.
MODALITY_WORDS = {"text", "speech", "vision", "embeddings", "reactions", "vision-transformer", "cnn-map",
                  "transformer", "cnn"}
SOURCE_KIND_WORDS = {"hub", "local", "package", "onnx", "gguf", "llama2c", "init", "miniature", "miniature-text"}
#: What is compared with them: a field or variable holding a modality, inputs kind, architecture or source kind.
SUBJECTS = {"modality", "kind", "architecture", "measured_on", "inputs", "source_kind", "inputs_kind"}


def _row_names() -> set[str]:
    """Names that are rows of a table and nothing else (compared with anything, they are a switch): the untrained
    block kinds, and the tokenizer kinds and preprocessor classes of the twins."""
    from aniso.experiments.names import BLOCK_KINDS
    from aniso.sources.twin import TWIN_SPECS

    return set(BLOCK_KINDS) | {n for s in TWIN_SPECS.values() for n in (s.tokenizer, s.processor) if n}


ROW_NAMES = _row_names()

#: The table modules, where the rows are written down (a comparison there is the table itself).
TABLES = {"extract/modalities.py", "inputs/forms.py", "sources/__init__.py", "sources/base.py", "registry/entries.py"}

#: Comparisons left outside the tables (file → how many), each listed in the failure message when a file's count
#: grows. Lower a count when a comparison moves into its table; never raise one.
ALLOWED: dict[str, int] = {
    "cli.py": 1,  # twins are made of hub rows: SOURCE_KINDS[kind].twins, as aniso.api asks
    "inputs/media.py": 1,  # training images need photographs
    "sources/detect.py": 2,  # a detected entry's role from its config; the Transformer check
}


def _subject(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _words(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def switches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of each comparison of a modality, inputs kind, architecture or source kind with a name."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or not all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                         for op in node.ops):
            continue
        operands = [node.left, *node.comparators]
        words = set().union(*(_words(o) for o in operands))
        subjects = {_subject(o) for o in operands} & SUBJECTS
        named = {_subject(o) for o in operands}
        if (words & ROW_NAMES and "model_type" not in named) or (words & (MODALITY_WORDS | SOURCE_KIND_WORDS)
                                                                  and subjects):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_table_modules_exist():
    assert all((SRC / name).is_file() for name in TABLES)


def _scan() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name not in TABLES and (found := switches(ast.parse(path.read_text(), str(path)))):
            out[name] = found
    return out


def test_the_scan_finds_a_switch_and_ignores_other_comparisons():
    tree = ast.parse("a = entry.modality == 'speech'\nb = source.kind in ('hub', 'local')\n"
                     "c = cfg.model_type == 'whisper'\nd = verdict.kind == 'holds'\ne = 'text' != x.measured_on\n"
                     "f = self.kind == 'gpt2-pre-ln'\ng = name == 'ConvNextImageProcessor'\nh = name == 'text'\n")
    assert [line for line, _ in switches(tree)] == [1, 2, 5, 6, 7]


def test_modalities_and_source_kinds_are_compared_only_in_their_tables():
    found = _scan()
    over = {name: rows for name, rows in found.items() if len(rows) > ALLOWED.get(name, 0)}
    listing = "\n".join(f"src/aniso/{name}:{line}: {code}" for name, rows in over.items() for line, code in rows)
    assert not over, (f"{sum(map(len, over.values()))} comparison(s) of a modality or source kind outside its "
                      f"table (ask the row of aniso.extract.modalities / aniso.sources instead):\n{listing}")
    fewer = {name: len(found.get(name, [])) for name, n in ALLOWED.items() if len(found.get(name, [])) < n}
    assert not fewer, f"fewer comparisons than allowed now; lower ALLOWED to {fewer}"
