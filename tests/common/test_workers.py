"""Scheduling over pytest-xdist workers: a model's tests form one group, whatever pytest-xdist can add itself; the
tests that compare models come after every model's group."""

from __future__ import annotations

from aniso.common.workers import AFTER_MODELS, claims_of_module, compares_models, group_of, model_group_scheduler

IDS = {"gemma-3-270m", "mini-gpt2-bytes-s0"}

CLAIMS_MODULE = '''
import pytest

@pytest.mark.claim("R.encoder-flat-profile")
@pytest.mark.models(all_of=("encoder",))
def test_flat(entry, claim):
    pass

@pytest.mark.claim("R.decoder-bell-profile")
def test_bell(entry, claim):
    pass

def test_no_claim():
    pass
'''


def test_a_models_tests_share_its_registry_id_as_their_group():
    assert group_of("claims/t.py::test_a[gemma-3-270m]", IDS) == "gemma-3-270m"
    assert group_of("claims/u.py::test_b[gemma-3-270m]", IDS) == "gemma-3-270m"
    assert group_of("claims/t.py::test_a[mini-gpt2-bytes-s0]", IDS) == "mini-gpt2-bytes-s0"


def test_other_tests_are_groups_of_one_and_xdists_own_groups_are_kept():
    assert group_of("claims/t.py::test_math[1024]", IDS) == "claims/t.py::test_math[1024]"
    assert group_of("tests/test_x.py::test_y", IDS) == "tests/test_x.py::test_y"
    assert group_of("tests/test_x.py::test_y[gemma]@mine", IDS) == "mine"


def test_a_test_that_compares_models_is_a_group_of_its_own_after_the_models(tmp_path):
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "t.py").write_text(CLAIMS_MODULE)
    assert claims_of_module(tmp_path / "claims" / "t.py") == {"test_flat": "R.encoder-flat-profile",
                                                               "test_bell": "R.decoder-bell-profile"}
    after = compares_models(tmp_path, lambda claim: claim == "R.encoder-flat-profile")
    flat = "claims/t.py::test_flat[gemma-3-270m]"
    assert group_of(flat, IDS, after) == AFTER_MODELS + flat
    assert group_of("claims/t.py::test_bell[gemma-3-270m]", IDS, after) == "gemma-3-270m"
    for other in ("claims/t.py::test_no_claim", "claims/missing.py::test_flat[gemma-3-270m]", "tests/u.py"):
        assert not after(other)
    assert claims_of_module(tmp_path / "nothing.py") == {}


def _schedule(collection, root, workers=("gw0", "gw1")):
    """Run pytest-xdist's scheduler with the scopes of :func:`group_of` over ``collection`` on ``workers`` that
    finish whatever they are sent; each worker's tests in the order it was sent them."""

    class Config:
        rootpath = root

        class option:
            maxschedchunk = None
            loadscopereorder = True

        def getvalue(self, name):
            return [f"{len(workers)}*popen"] if name == "tx" else None

    class Node:
        shutting_down = False

        def __init__(self, name):
            self.name, self.sent = name, []
            self.gateway = type("Gateway", (), {"id": name})()

        def send_runtest_some(self, indices):
            self.sent.extend(indices)

        def shutdown(self):
            pass

    sched = model_group_scheduler(Config(), None, IDS, lambda claim: claim == "R.encoder-flat-profile")
    nodes = [Node(name) for name in workers]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    done = set()
    while sched.workqueue:  # the workers finish what they were sent; more comes
        for node in nodes:
            for i in [i for i in node.sent if (node.name, i) not in done]:
                done.add((node.name, i))
                sched.mark_test_complete(node, i)
    return {n.name: [collection[i] for i in n.sent] for n in nodes}


def test_the_scheduler_sends_every_test_of_a_model_to_one_worker(tmp_path):
    """pytest-xdist's own scheduler, with the scopes of :func:`group_of`, given two workers and a collection that
    interleaves two models' tests with tests of no model."""
    collection = [f"claims/t.py::test_{c}[{m}]" for c in "abc" for m in sorted(IDS)] + \
        [f"tests/u.py::test_{i}" for i in range(4)]
    sent = _schedule(collection, tmp_path)
    where = {t: name for name, tests in sent.items() for t in tests}
    for model in IDS:
        assert len({where[t] for t in collection if t.endswith(f"[{model}]")}) == 1
    assert set(where) == set(collection)


def test_the_tests_that_compare_models_are_sent_after_every_models_group(tmp_path):
    """The encoder-profile test (which reads the decoders) is collected first and sent last: on one worker after
    every other test (pytest-xdist alone would send it before the other groups of one test), on two as the last test
    of its worker."""
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "t.py").write_text(CLAIMS_MODULE)
    flat = "claims/t.py::test_flat[gemma-3-270m]"
    collection = [flat] + [f"claims/t.py::test_bell[{m}]" for m in sorted(IDS)] + \
        [f"claims/u.py::test_{c}[{m}]" for c in "ab" for m in sorted(IDS)] + [f"tests/u.py::test_{i}" for i in range(3)]
    order = _schedule(collection, tmp_path, workers=("gw0",))["gw0"]
    assert order[-1] == flat and sorted(order) == sorted(collection)
    sent = _schedule(collection, tmp_path)
    assert sorted(t for tests in sent.values() for t in tests) == sorted(collection)
    (worker,) = [tests for tests in sent.values() if flat in tests]
    assert worker[-1] == flat
