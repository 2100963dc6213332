"""Integration fixtures: one real stack per test session (PostgreSQL, Redis, Daphne, Celery)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.stack import Process, Stack


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = Stack(tmp_path_factory.mktemp("stack")).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def _quiet_http_clients(caplog: pytest.LogCaptureFixture) -> None:
    """No line per HTTP request in a failure's report: a flood's 200 of them pushed the
    assertion out of the output CI shows."""
    caplog.set_level(logging.WARNING, logger="httpx")


@pytest.fixture(scope="module")
def _shared_workers() -> Iterator[dict[str, Process]]:
    """The running shared worker of each stack (by its queue), until the module ends: the
    next module's tests may count on no worker but theirs."""
    held: dict[str, Process] = {}
    yield held
    for process in held.values():
        process.stop()


@pytest.fixture
def shared_worker(stack: Stack, _shared_workers: dict[str, Process]) -> Process:
    """One Celery worker for the tests that neither kill nor reconfigure theirs: started by
    the first of them in a module, kept for the module's next ones (each works on threads of
    its own), so they no longer pay a worker's start-up and shutdown each. Stopped when a
    test starts workers of its own (``worker``), which must be the only ones consuming the
    queue; the next test that wants it starts it again."""
    process = _shared_workers.get(stack.queue)
    if process is None or process.popen.poll() is not None:
        process = stack.worker("shared")
        _shared_workers[stack.queue] = process
    return process


@pytest.fixture
def worker(stack: Stack, _shared_workers: dict[str, Process]) -> Iterator[Any]:
    """Start Celery workers for one test (``worker("w1")``); all are stopped after it.
    The stack's shared worker, if running, stops first: a test that kills or races its
    workers counts on no other one taking the work."""
    started = []

    def start(name: str, **kw: Any) -> Any:
        shared = _shared_workers.pop(stack.queue, None)
        if shared is not None:
            shared.stop()
        process = stack.worker(name, **kw)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        for name in ("stack", "flood_stack"):
            stack = getattr(item, "funcargs", {}).get(name)
            if stack is not None:
                report.sections.append(("stack logs", stack.tails()))
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything here starts or talks to real processes: ``-m "not integration"`` (the fast
    loop, docs/architecture.md) leaves every file out, marked or not."""
    for item in items:
        if "tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
