"""Which registry rows each claim's tests measure, read from the claim tests themselves.

A claim test over registry rows carries ``@pytest.mark.claim("<id>")`` and ``@pytest.mark.models(all_of=...,
any_of=..., none_of=...)``; the pytest plugin parametrises it over the rows those tags select
(:meth:`aniso.registry.entries.Registry.select`). This module reads the same two marks from the test modules'
source (parsed, not imported), so that a registry record of a claim on a row that no test of the claim selects
(it would never be checked) can be refused where the registry is read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The source tree this package runs from (``<tree>/src/aniso/registry/claimtests.py``): its ``claims/`` and
#: ``models.yaml`` are the defaults where none is beside the registry or here.
SOURCE_TREE = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class RowSelection:
    """The tags of one claim test's ``models`` mark, and where the test is (``file::function``)."""

    test: str
    all_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()

    def selects(self, entry) -> bool:
        """Whether the test is parametrised over ``entry`` (a registry row): :meth:`ModelEntry.matches`."""
        return entry.matches(self.all_of, self.any_of, self.none_of)

    def __str__(self) -> str:
        words = [f"tagged {' and '.join(self.all_of)}" if self.all_of else "",
                 f"tagged one of {', '.join(self.any_of)}" if self.any_of else "",
                 f"not tagged {' or '.join(self.none_of)}" if self.none_of else ""]
        return ", ".join(w for w in words if w) or "every row"


#: The keywords of ``@pytest.mark.models``: each a tuple (or list) of registry tags (:meth:`ModelEntry.matches`).
MODELS_KEYWORDS = ("all_of", "any_of", "none_of")


def models_marker_problem(args: tuple, kwargs: dict, known_tags) -> str | None:
    """Why a ``@pytest.mark.models(*args, **kwargs)`` mark would not select the rows it says, in words to follow the
    test's name; None when it is well formed. Refused: a positional argument (the mark takes keywords only), a keyword
    other than :data:`MODELS_KEYWORDS`, a value that is not a tuple or list of str (a lone str would be read one
    character per tag), and a tag that is not in ``known_tags`` (no registry row has it: the test would select
    nothing, silently), with the closest known tag."""
    import difflib

    form = "@pytest.mark.models(all_of=(...), any_of=(...), none_of=(...)), each a tuple of registry tags"
    if args:
        return (f"@pytest.mark.models has a positional argument {args[0]!r}; it takes keywords only: {form}")
    for key, value in kwargs.items():
        if key not in MODELS_KEYWORDS:
            close = difflib.get_close_matches(str(key), MODELS_KEYWORDS, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            return f"@pytest.mark.models has no keyword {key!r}{hint}; it takes {form}"
        if isinstance(value, str):
            return (f"@pytest.mark.models({key}={value!r}): {key} is a str, which would be read as one tag per "
                    f"character; give a tuple: {key}=({value!r},)")
        if not isinstance(value, (tuple, list)) or not all(isinstance(t, str) for t in value):
            bad = value if not isinstance(value, (tuple, list)) else next(t for t in value if not isinstance(t, str))
            return (f"@pytest.mark.models({key}={value!r}): {bad!r} is a {type(bad).__name__}; give a tuple of "
                    f"registry tags (str), e.g. {key}=('text',)")
    for key, value in kwargs.items():
        for tag in value:
            if tag not in known_tags:
                close = difflib.get_close_matches(tag, sorted(known_tags), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else " (aniso list models shows the rows' tags)"
                return f"@pytest.mark.models({key}={tuple(value)!r}): no registry row has the tag {tag!r}{hint}"
    return None


def default_claims_folder(registry: Path | None) -> Path | None:
    """The claim tests of a registry when none are given: ``claims/`` beside it, else the source tree's; None when
    neither is a folder."""
    return next((p for p in ([registry.parent / "claims"] if registry is not None else []) + [SOURCE_TREE / "claims"]
                 if p.is_dir()), None)


def _mark(node, name: str) -> ast.Call | None:
    """``node`` when it is ``pytest.mark.<name>(...)`` or ``mark.<name>(...)``, else None."""
    func = node.func if isinstance(node, ast.Call) else None
    if (isinstance(func, ast.Attribute) and func.attr == name
            and ((isinstance(func.value, ast.Attribute) and func.value.attr == "mark")
                 or (isinstance(func.value, ast.Name) and func.value.id == "mark"))):
        return node
    return None


def _value(node, names: dict[str, ast.expr]):
    """The literal value of ``node``: a literal, a module-level name bound to one, or ``dict(key=literal, ...)``.
    Raises ValueError when it is none of these."""
    if isinstance(node, ast.Name) and node.id in names:
        return _value(names[node.id], names)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args
            and all(k.arg is not None for k in node.keywords)):
        return {k.arg: _value(k.value, names) for k in node.keywords}
    return ast.literal_eval(node)


def _module_selections(path: Path, shown: str) -> dict[str, list[RowSelection | None]]:
    """Claim id -> one item per test of the claim in the module at ``path``: its :class:`RowSelection` for a test
    over registry rows, None for a test whose rows cannot be read from its source."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
        return {}
    names = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Name)}
    found: dict[str, list[RowSelection | None]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        claim = next((m for m in (_mark(d, "claim") for d in node.decorator_list) if m is not None), None)
        models = next((m for m in (_mark(d, "models") for d in node.decorator_list) if m is not None), None)
        if claim is None or not claim.args or not isinstance(claim.args[0], ast.Constant):
            continue
        if models is None or "entry" not in {a.arg for a in node.args.args}:
            continue  # a test of the claim over no registry row (its own parameters, or other models' statistics)
        try:
            tags: dict = {}
            for keyword in models.keywords:
                tags.update(_value(keyword.value, names) if keyword.arg is None
                            else {keyword.arg: _value(keyword.value, names)})
            well_formed = not models.args and models_marker_problem((), tags, _AnyTag()) is None
            # a mark the plugin refuses (a positional argument, another keyword, a lone str) selects no row
            selection = RowSelection(f"{shown}::{node.name}", *(tuple(tags.get(k, ())) for k in MODELS_KEYWORDS)) \
                if well_formed else None
        except (ValueError, TypeError, SyntaxError, RecursionError):
            selection = None
        found.setdefault(str(claim.args[0].value), []).append(selection)
    return found


class _AnyTag:
    """Every tag: the form of a ``models`` mark checked alone, whatever the registry."""

    def __contains__(self, tag) -> bool:
        return True


@lru_cache(maxsize=8)
def _selections(folder: Path, stamp: tuple) -> dict[str, tuple[RowSelection | None, ...]]:
    found: dict[str, list[RowSelection | None]] = {}
    for path in sorted(folder.glob("test_*.py")):
        for claim, tests in _module_selections(path, f"{folder.name}/{path.name}").items():
            found.setdefault(claim, []).extend(tests)
    return {claim: tuple(tests) for claim, tests in found.items()}


def row_selections(folder: Path | None) -> dict[str, tuple[RowSelection | None, ...]]:
    """Claim id -> the row selections of its tests over registry rows in the claim test modules
    (``test_*.py``) of ``folder``; None for a test whose ``models`` mark is not literal. Empty for no folder."""
    if folder is None:
        return {}
    try:
        stamp = tuple((p.name, p.stat().st_mtime_ns) for p in sorted(folder.glob("test_*.py")))
    except OSError:
        return {}
    return _selections(folder, stamp)


def _takes_the_claim_fixture(item) -> bool:
    """Whether the test ``item`` takes the plugin's ``claim`` fixture: not a parameter of its own named ``claim``
    (``@pytest.mark.parametrize("claim", ...)``), nor a fixture of that name a conftest defines."""
    if "claim" not in getattr(item, "fixturenames", ()):
        return False
    if "claim" in getattr(getattr(item, "callspec", None), "params", {}):
        return False
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get("claim")
    if not defs:
        return True
    return getattr(getattr(defs[-1], "func", None), "__module__", "") == "aniso.pytest_plugin"


def marks_problem(item, known_tags) -> str | None:
    """The one line refusing the ``claim`` and ``models`` marks of the test ``item`` (a pytest item), naming its file::test; None when
    they are well formed. Refused: two ``claim`` marks (only the nearer would be measured), a ``claim`` mark whose id
    is not its one positional argument (``claim(id="G.x")``), a test taking the ``claim`` fixture without a ``claim``
    mark, a claim test taking ``entry`` without a ``models``
    mark, two ``models`` marks, and
    a ``models`` mark that does not select the rows it says (:func:`models_marker_problem`:
    a positional argument, an unknown keyword, a lone str, a tag no registry row has)."""
    name = getattr(item, "originalname", None) or item.name
    where = f"{item.path}::{name}"
    claims = list(item.iter_markers("claim"))
    if len(claims) > 1:
        ids = " and ".join(repr(m.args[0]) if m.args else "(no id)" for m in claims)
        return (f"{where}: the test is marked @pytest.mark.claim twice, {ids}; a claim test measures one claim: "
                "write one test per claim")
    if claims and (len(claims[0].args) != 1 or claims[0].kwargs):
        given = ", ".join([*map(repr, claims[0].args), *(f"{k}={v!r}" for k, v in claims[0].kwargs.items())])
        example = claims[0].args[0] if claims[0].args else claims[0].kwargs.get("id", "<claim id>")
        return (f"{where}: the test is marked @pytest.mark.claim({given}); the claim id is given positionally and "
                f"alone: @pytest.mark.claim({example!r}) (aniso list claims)")
    if not claims and _takes_the_claim_fixture(item):
        return (f"{where}: the test takes the 'claim' fixture but has no @pytest.mark.claim; mark it with the claim "
                "it measures, e.g. @pytest.mark.claim(\"G.token-nlp-anisotropic\") (aniso list claims)")
    models = list(item.iter_markers("models"))
    if claims and not models and "entry" in getattr(item, "fixturenames", ()):
        return (f"{where}: the claim test takes an 'entry' argument but has no @pytest.mark.models selecting its "
                "registry rows; add one, e.g. @pytest.mark.models(all_of=(\"pretrained\", \"text\"))")
    if len(models) > 1:
        return (f"{where}: the test is marked @pytest.mark.models {len(models)} times; give one mark "
                "(all_of, any_of and none_of together select its rows)")
    if models and (claims or "entry" in getattr(item, "fixturenames", ())):
        problem = models_marker_problem(models[0].args, models[0].kwargs, known_tags)
        if problem is not None:
            return f"{where}: {problem}"
    return None


def k_claim_pointer(expression: str) -> str | None:
    """The one line for a ``-k`` ``expression`` that selected no test and names a claim id or a prefix of one
    (``G.``, ``G.token``): claims are selected with ``--aniso-claims``; None when it names none."""
    import re

    from .catalog import CLAIMS

    named = [w for w in re.split(r"[\s()]+", expression) if "." in w and w not in ("and", "or", "not")
             and any(cid.startswith(w.rstrip("*")) for cid in CLAIMS)]
    if not named:
        return None
    return (f"aniso: -k {expression!r} selected no test: -k matches test names, which hold no claim ids; select "
            f"claims with --aniso-claims {','.join(named)} (aniso list claims)")


def claim_test_files(folders, selects, start: Path | None = None) -> list[str]:
    """The claim test modules (``test_*.py``, read as source, never imported) in ``folders`` (paths of folders,
    each read once) holding a test marked ``@pytest.mark.claim(ID)`` for an ID that ``selects(ID)`` takes; sorted
    paths, relative to the folder ``start`` where they are inside it."""
    found: set[str] = set()
    for folder in dict.fromkeys(Path(f) for f in folders):
        try:
            modules = sorted(folder.glob("test_*.py"))
        except OSError:
            continue
        for path in modules:
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                        m is not None and m.args and isinstance(m.args[0], ast.Constant)
                        and isinstance(m.args[0].value, str) and selects(m.args[0].value)
                        for m in (_mark(d, "claim") for d in node.decorator_list)):
                    inside = start is not None and path.resolve().is_relative_to(Path(start).resolve())
                    found.add(str(path.resolve().relative_to(Path(start).resolve()) if inside else path))
                    break
    return sorted(found)


def claims_filter_pointer(claims: str, files: list[str]) -> str:
    """The one line for a setting ``claims`` (``--aniso-claims``) that left none of the tests collected: their files
    hold no test of those claims (``pytest claims/test_controlled_vision.py --aniso-claims G.token-nlp-anisotropic``);
    ``files``: the claim test modules that do (:func:`claim_test_files`)."""
    where = (f"the tests of {claims} are in {', '.join(files)}: name those files, or the claims folder"
             if files else f"no claim test file beside them tests {claims} (aniso list claims)")
    return f"aniso: --aniso-claims {claims} selected none of the tests collected, which test other claims; {where}"


def unknown_claim(item, claim_id) -> str:
    """The one line of a claim test ``item`` (a pytest item) marked with ``claim_id``, an id not in the catalogue
    (:data:`aniso.registry.catalog.CLAIMS`): its file, its test and the id, with the closest known id if one is close."""
    import difflib

    from .catalog import CLAIMS

    close = difflib.get_close_matches(str(claim_id), list(CLAIMS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    name = getattr(item, "originalname", None) or item.name
    return (f"{item.path}: the test {name} is marked @pytest.mark.claim({claim_id!r}), an id not in the claims "
            f"catalogue{hint}; a claim test takes one of its ids (aniso list claims)")


def never_concluded(test: str) -> str:
    """The one line of a claim test ``test`` (its node id) that ended without calling ``claim.conclude``."""
    return f"the claim test {test} never concluded: call claim.conclude(...)"
