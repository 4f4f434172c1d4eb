"""Scheduling over pytest-xdist workers: a model's tests form one group, whatever pytest-xdist can add itself."""

from __future__ import annotations

from aniso.common.workers import group_of, model_group_scheduler

IDS = {"gemma-3-270m", "mini-gpt2-bytes-s0"}


def test_a_models_tests_share_its_registry_id_as_their_group():
    assert group_of("claims/t.py::test_a[gemma-3-270m]", IDS) == "gemma-3-270m"
    assert group_of("claims/u.py::test_b[gemma-3-270m]", IDS) == "gemma-3-270m"
    assert group_of("claims/t.py::test_a[mini-gpt2-bytes-s0]", IDS) == "mini-gpt2-bytes-s0"


def test_other_tests_are_groups_of_one_and_xdists_own_groups_are_kept():
    assert group_of("claims/t.py::test_math[1024]", IDS) == "claims/t.py::test_math[1024]"
    assert group_of("tests/test_x.py::test_y", IDS) == "tests/test_x.py::test_y"
    assert group_of("tests/test_x.py::test_y[gemma]@mine", IDS) == "mine"


def test_the_scheduler_sends_every_test_of_a_model_to_one_worker():
    """pytest-xdist's own scheduler, with the scopes of :func:`group_of`, given two workers and a collection that
    interleaves two models' tests with tests of no model."""

    class Config:
        class option:
            maxschedchunk = None
            loadscopereorder = True

        def getvalue(self, name):
            return ["2*popen"] if name == "tx" else None

    class Node:
        shutting_down = False

        def __init__(self, name):
            self.name, self.sent = name, []
            self.gateway = type("Gateway", (), {"id": name})()

        def send_runtest_some(self, indices):
            self.sent.extend(indices)

        def shutdown(self):
            pass

    collection = [f"claims/t.py::test_{c}[{m}]" for c in "abc" for m in sorted(IDS)] + \
        [f"tests/u.py::test_{i}" for i in range(4)]
    sched = model_group_scheduler(Config(), None, IDS)
    nodes = [Node("gw0"), Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, collection)
    sched.schedule()
    while sched.workqueue:  # the workers finish what they were sent; more comes
        for node in nodes:
            for i in list(node.sent):
                sched.mark_test_complete(node, i)
    where = {collection[i]: n.name for n in nodes for i in n.sent}
    for model in IDS:
        assert len({where[t] for t in collection if t.endswith(f"[{model}]")}) == 1
    assert set(where) == set(collection)
