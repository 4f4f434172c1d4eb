"""An option and its value quoted as one word (`aniso stats M '--n-sequences 8'`, `aniso run M -- '--aniso-n-sequences
8'`) was answered "did you mean --n-sequences?", the option the user thinks they typed: the answer says they were
quoted together and how to write them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_an_option_and_value_quoted_as_one_word_is_named(clean_env, refused_line):
    for args in (["stats", "all-MiniLM-L6-v2", "--n-sequences 8"], ["stats", "--n-sequences 8", "all-MiniLM-L6-v2"],
                 ["hub", "import", "--revision main", "org/x", "plain"]):  # before the positional too (tour 18)
        line = refused_line(args)
        option = next(a for a in args if " " in a)
        assert line.startswith(f"aniso {' '.join(args[:2]) if args[0] == 'hub' else 'stats'}: {option!r} is an "
                               f"option and its value quoted as one word; write them apart, {option}"), line


def test_the_same_after_the_separator(clean_env, refused_line):
    line = refused_line(["run", "all-MiniLM-L6-v2", "--registry", str(ROOT / "models.yaml"), "--claims",
                         "G.token-nlp-anisotropic", "--", "--aniso-n-sequences 8"])
    assert "'--aniso-n-sequences 8' is an option and its value quoted as one word; write them apart, " \
           "--aniso-n-sequences 8 (after --)" in line, line
