"""aniso.registry.selection given a value of the wrong type: one line naming the parameter, never a str read
character by character or a sequence's text parsed as one claim id."""

import pytest

from aniso.registry.selection import ClaimsFilter, parse_claims


def test_a_claims_filter_built_with_a_str_names_ids():
    """ClaimsFilter(ids='XG.token-nlp-anisotropicX') selected G.token-nlp-anisotropic (``in`` as a substring test)
    and printed as G,.,t,o,k,..."""
    with pytest.raises(TypeError, match=r"^ids: 'XG\.token-nlp-anisotropicX' \(str\); give a tuple of claim ids, "
                                        r"e\.g\. \('G\.token-nlp-anisotropic',\), or use parse_claims for a "
                                        r"comma-separated text$"):
        ClaimsFilter(ids="XG.token-nlp-anisotropicX")
    with pytest.raises(TypeError, match=r"^prefixes: 'G\.' \(str\); give a tuple of claim id prefixes"):
        ClaimsFilter(prefixes="G.")
    with pytest.raises(TypeError, match=r"^ids: \(5,\) \(tuple\); give a tuple of claim ids"):
        ClaimsFilter(ids=(5,))
    one = ClaimsFilter(ids=["G.token-nlp-anisotropic"])
    assert one == ClaimsFilter(ids=("G.token-nlp-anisotropic",)) and one.ids == ("G.token-nlp-anisotropic",)
    assert one.selected() == ["G.token-nlp-anisotropic"] and str(one) == "G.token-nlp-anisotropic"


def test_parse_claims_given_a_list_tuple_or_bytes_names_claims():
    """parse_claims(['G.token-nlp-anisotropic']) parsed "['G.token-nlp-anisotropic']" and answered "did you mean
    'G.token-nlp-anisotropic'?"; ('G.', 'R.') gave "('G.'" is no claim id."""
    for value, shown in ((["G.token-nlp-anisotropic"], r"\['G\.token-nlp-anisotropic'\] \(list\)"),
                         (("G.", "R."), r"\('G\.', 'R\.'\) \(tuple\)"), (b"G.", r"b'G\.' \(bytes\)"),
                         (5, r"5 \(int\)")):
        with pytest.raises(TypeError, match=rf"^claims: {shown}; give claim ids or prefixes as one comma-separated "
                                            r"str, e\.g\. 'G\.,R\.decoder\*' \(a list of ids: ','\.join\(ids\)\), "
                                            r"or None for every claim$"):
            parse_claims(value)
    assert parse_claims("G.,R.") == ClaimsFilter((), ("G.", "R."))
    assert parse_claims(None).everything
