"""Progress bars: shown where asked, and never holding the item they last yielded."""

from __future__ import annotations

import weakref

from aniso.common import progress


class _Item:
    pass


def test_bar_keeps_no_reference_to_the_item_it_yielded(monkeypatch):
    """With a bar shown, an item the consumer dropped is freed before the next one is made (tqdm's own iterator
    would hold it until then: a batch of hidden states living through the next forward pass)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("ANISO_PROGRESS", raising=False)
    made = []

    def items():
        for _ in range(3):
            yield _Item()

    with progress.shown(True):
        wrapped = progress.bar(items(), desc="items", total=3)
        for item in wrapped:
            made.append(weakref.ref(item))
            del item
            assert made[-1]() is None
    assert len(made) == 3


def test_bar_is_the_iterable_itself_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "1")
    items = [1, 2, 3]
    assert progress.bar(items, desc="items") is items and not progress.enabled()
