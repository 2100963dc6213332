"""A tool call on ``/mcp`` whose client goes away stops the session it started, wherever the
call was when the SDK cancelled it (the end-to-end case is in
``tests/integration/test_mcp_endpoint.py``; here the moments are pinned down)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp import types

from agents_app.mcp_endpoint import server as mcp_server
from agents_app.orchestration.agent_calls import Ask

# The calls run through channels' ``database_sync_to_async``, which tidies asgiref's shared
# sync thread's database connection before and after each call; a connection an earlier test
# left there with an error flag is checked with a query. Without database access that check
# raised before the blocking call began, and the test waited for it until the suite's timeout
# killed the worker (twice in full runs). With access the check runs; and every wait is bounded.
pytestmark = pytest.mark.django_db

ENTERED_WITHIN = 30  # seconds

ASK = Ask(thread_id="t-1", message_id="m-1")
NOT_DONE = SimpleNamespace(done=False, steps=0, latest="starting")


async def _no_progress(*_: Any) -> None:
    return None


# What the SDK hands a request handler (``ServerRequestContext``), as far as the call reads it.
CTX: Any = SimpleNamespace(
    request=SimpleNamespace(scope={mcp_server.USER_KEY: "alice"}),
    session=SimpleNamespace(report_progress=_no_progress),
    meta=None,
)


@pytest.fixture
def stops(monkeypatch: pytest.MonkeyPatch) -> list[Ask]:
    stopped: list[Ask] = []
    monkeypatch.setattr(mcp_server, "_stop", lambda ask, user: stopped.append(ask))
    return stopped


class Blocking:
    """A synchronous call that waits, once entered, until the test has cancelled the call."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self, *_: Any, **__: Any) -> Any:
        self.entered.set()
        self.release.wait(10)
        return self.result


async def _cancel_inside(blocking: Blocking) -> None:
    async with anyio.create_task_group() as tg:
        params = types.CallToolRequestParams(name="sleeper", arguments={"message": "slowly"})
        tg.start_soon(mcp_server.call_tool, CTX, params)
        entered = await anyio.to_thread.run_sync(blocking.entered.wait, ENTERED_WITHIN)
        assert entered, "the call never reached the blocking step"
        tg.cancel_scope.cancel()
        blocking.release.set()


def _patch(monkeypatch: pytest.MonkeyPatch, **calls: Callable[..., Any]) -> None:
    for name, call in calls.items():
        monkeypatch.setattr(mcp_server, name, call)


async def test_a_call_cancelled_while_its_message_is_posted_stops_the_session(
    stops: list[Ask], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session can start (and the client give up) before the post returns to the loop.
    posting = Blocking(ASK)
    _patch(monkeypatch, _limited_ask=posting)
    await _cancel_inside(posting)
    assert stops == [ASK]


async def test_a_call_cancelled_while_it_waits_for_the_answer_stops_the_session(
    stops: list[Ask], monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = Blocking(NOT_DONE)
    _patch(monkeypatch, _limited_ask=lambda **_: ASK, ask_progress=waiting)
    await _cancel_inside(waiting)
    assert stops == [ASK]


async def test_a_stop_that_fails_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_stop(ask: Ask, user: Any) -> None:
        raise RuntimeError("the database went away")

    waiting = Blocking(NOT_DONE)
    _patch(monkeypatch, _limited_ask=lambda **_: ASK, ask_progress=waiting, _stop=broken_stop)
    await _cancel_inside(waiting)
    assert "could not stop the session of thread t-1" in caplog.text
