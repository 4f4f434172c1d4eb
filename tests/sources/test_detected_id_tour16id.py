"""The id detected from a folder's name keeps its letters recognisable (``é`` as ``e``) and never loses them
silently: a name whose letters have no ASCII form gets an id with a digest of the name, so that two folders whose
names differ only there are not given one id (``my models/é plain`` was measured as ``plain``)."""

from __future__ import annotations

import re

from aniso.registry.entries import ID_MAX_LENGTH, ID_PATTERN
from aniso.sources.detect import detected_id


def test_an_accented_letter_is_kept_as_its_letter():
    assert detected_id("é plain") == "e-plain"
    assert detected_id("é plain") != detected_id("plain")
    assert detected_id("Modèle") == "Modele"


def test_letters_without_an_ascii_form_are_not_dropped_silently():
    names = ["模型", "模型二", "ß", "ø plain", "plain", "\udcff"]
    ids = [detected_id(n) for n in names]
    assert len(set(ids)) == len(ids), ids
    assert detected_id("ø plain") != "plain" and "plain" in detected_id("ø plain")
    for ident in ids:
        assert re.match(ID_PATTERN, ident) and len(ident) <= ID_MAX_LENGTH, ident


def test_ascii_names_keep_their_ids():
    assert detected_id("org/model name") == "org-model-name"
    assert detected_id("plain") == "plain"
