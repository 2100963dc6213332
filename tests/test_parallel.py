"""How the suite's work is handed to xdist workers (``tests/parallel.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.parallel import HEAVY_FILES, FileScheduling, redis_database


class Node:
    """A worker as the scheduler sees it: the tests it was sent, by index."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "tests/agents_app/test_a.py::test_1",
    "tests/agents_app/test_a.py::test_2",
    "tests/agents_app/test_a.py::test_3",
    "tests/agents_app/test_b.py::test_1",
    "tests/browser/test_c.py::test_1@browser",
    "tests/browser/test_d.py::test_1@browser",
    "tests/integration/test_e.py::test_1",
    "tests/integration/test_e.py::test_2",
    "tests/integration/test_e.py::test_3",
    "tests/integration/test_f.py::test_1",
]


def scheduler(*nodes: Node) -> FileScheduling:
    config: Any = SimpleNamespace(
        getvalue=lambda name: ["popen"] * len(nodes) if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=True),
    )
    sched = FileScheduling(config)
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, COLLECTION)
    return sched


def sent(node: Node) -> list[str]:
    return [COLLECTION[i] for i in node.sent]


def test_a_file_is_one_unit_and_a_group_one_unit_across_files() -> None:
    sched = scheduler(Node("gw0"))
    scopes = [sched._split_scope(nodeid) for nodeid in COLLECTION]
    assert scopes[:4] == ["tests/agents_app/test_a.py"] * 3 + ["tests/agents_app/test_b.py"]
    assert scopes[4:6] == ["@browser", "@browser"]
    assert sched._split_scope("tests/x.py::test[a@b]") == "tests/x.py"  # an id with an @


def test_slow_folders_are_handed_out_first_in_collection_order() -> None:
    gw0, gw1 = Node("gw0"), Node("gw1")
    scheduler(gw0, gw1).schedule()
    # Each worker starts with a slow unit: the browser group, then the first integration file.
    assert sent(gw0)[:2] == COLLECTION[4:6]
    assert sent(gw1)[:3] == COLLECTION[6:9]


def test_a_test_that_crashed_its_worker_is_reported_once_and_not_run_again() -> None:
    gw0, gw1 = Node("gw0"), Node("gw1")
    sched = scheduler(gw0, gw1)
    sched.schedule()
    sched.mark_test_complete(gw1, COLLECTION.index("tests/integration/test_e.py::test_1"))
    # gw1 dies in test_2 (a hang ended by pytest-timeout): test_2 is the crash, test_3 is
    # run by someone else, test_2 by no one.
    assert sched.remove_node(gw1) == "tests/integration/test_e.py::test_2"
    queued = [nodeid for unit in sched.workqueue.values() for nodeid in unit]
    handed = sent(gw0) + queued
    assert "tests/integration/test_e.py::test_3" in handed
    assert "tests/integration/test_e.py::test_2" not in handed


def test_each_worker_draws_redis_databases_from_a_share_of_its_own(monkeypatch: Any) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    drawn = {}
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        drawn[worker] = {redis_database() for _ in range(200)}
    assert not drawn["gw0"] & drawn["gw1"]
    assert drawn["gw0"] | drawn["gw1"] <= set(range(1, 16))
    assert 0 not in drawn["gw0"] | drawn["gw1"]  # TEST_REDIS_URL's, the unit tests'


@pytest.mark.integration  # a pytest process of its own
def test_every_collected_test_has_a_node_id_of_its_own() -> None:
    # xdist schedules by node id: two tests with one id run once between them.
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/agents_app/api/test_api_schemathesis.py",
        ],  # fmt: skip
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids = [line for line in listed.splitlines() if "::" in line]
    assert len(ids) > 100 and len(set(ids)) == len(ids), ids[:3]


def test_heavy_unit_files_follow_the_slow_folders_before_the_other_unit_files() -> None:
    heavy = f"{HEAVY_FILES[0]}::test_1"
    collection = [
        "tests/agents_app/test_a.py::test_1",
        "tests/agents_app/test_a.py::test_2",
        heavy,
        "tests/integration/test_e.py::test_1",
    ]
    gw0 = Node("gw0")
    config: Any = SimpleNamespace(
        getvalue=lambda name: ["popen"] if name == "tx" else None,
        option=SimpleNamespace(loadscopereorder=True),
    )
    sched = FileScheduling(config)
    sched.add_node(gw0)
    sched.add_node_collection(gw0, collection)
    sched.schedule()
    for index in list(gw0.sent):
        sched.mark_test_complete(gw0, index)
    # The integration file, then the heavy one, then the unit file with the most tests.
    assert [collection[i] for i in gw0.sent] == [collection[3], heavy, *collection[:2]]
