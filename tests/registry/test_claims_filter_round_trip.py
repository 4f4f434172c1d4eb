"""A prefix written with its star (``G.token*``) was accepted by ``pytest --aniso-claims`` but refused by
``aniso run --claims``, ``aniso.check`` and ``aniso.run_claims`` ("'G.token' is no claim id"): those doors write the
parsed filter back as text for pytest, and the star was lost. A filter written as text reads back equal; ``*`` alone
takes every claim."""

from __future__ import annotations

from hypothesis import given, strategies as st

from aniso.cli import main
from aniso.registry.catalog import CLAIMS
from aniso.registry.selection import ClaimsFilter, parse_claims

PREFIXES = sorted({cid[:n] for cid in CLAIMS for n in range(2, len(cid))})


@given(st.lists(st.sampled_from(sorted(CLAIMS)), max_size=3), st.lists(st.sampled_from(PREFIXES), max_size=3))
def test_a_filter_written_as_text_reads_back_equal(ids, prefixes):
    text = ",".join([*ids, *(p if p.endswith(".") else p + "*" for p in prefixes)])
    if not text:  # the empty filter: every claim (its own test elsewhere)
        return
    parsed = parse_claims(text)
    assert parse_claims(str(parsed)) == parsed
    assert {c for c in CLAIMS if parsed.selects(c)} == {c for c in CLAIMS if c in ids or c.startswith(tuple(prefixes))}


def test_a_star_alone_takes_every_claim():
    assert parse_claims("*") == ClaimsFilter() and parse_claims("G.token-nlp-anisotropic, *").everything
    assert str(parse_claims("G.token*")) == "G.token*" and str(parse_claims("G.")) == "G."


def test_aniso_run_measures_the_claims_a_starred_prefix_names(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("ANISO_CORPUS", str(clean_env / "corpus.txt"))
    (clean_env / "corpus.txt").write_text("".join(f"paragraph {i} of a small corpus, with words {i * 7} and "
                                                   f"{i * 13}.\n" for i in range(64)))
    code = main(["run", "all-MiniLM-L6-v2", "--claims", "G.token*", "--", "--aniso-n-sequences", "16", "-p",
                 "no:randomly"])
    out = capsys.readouterr()
    assert "is no claim id" not in out.out + out.err, out.err[-2000:]
    assert code in (0, 1) and "G.token-nlp-anisotropic" in out.out, out.out[-3000:] + out.err[-2000:]
