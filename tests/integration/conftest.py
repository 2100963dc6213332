"""Integration fixtures: one real stack per test session (PostgreSQL, Redis, Daphne, Celery)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.stack import Stack


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


@pytest.fixture
def worker(stack: Stack) -> Iterator[Any]:
    """Start Celery workers for one test (``worker("w1")``); all are stopped after it."""
    started = []

    def start(name: str, **kw: Any) -> Any:
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
