"""A folder name of which nothing is left in an id (``🤗``, ``-.-``) got the id ``model``, the id of any folder named
``model`` and of every other such name: it gets ``model`` and its name's digest, as a name of letters with no ASCII
form does."""

from __future__ import annotations

import re

from aniso.registry.entries import ID_PATTERN
from aniso.sources.detect import detected_id


def test_a_name_of_which_nothing_is_left_gets_its_digest():
    names = ["🤗", "-.-", "🤗🤗", "model"]
    ids = [detected_id(n) for n in names]
    assert len(set(ids)) == len(ids), ids
    assert detected_id("model") == "model"
    for ident in ids:
        assert re.match(ID_PATTERN, ident), ident
    assert re.fullmatch(r"model-[0-9a-f]{8}", detected_id("🤗"))
