"""The start gate: a worker loop starts at most ``STUDIO_SESSION_STARTS_AT_ONCE`` sessions at
once, each holding its place from before its claim until its first LLM request
(``agents_app/orchestration/start_gate.py``, issue #21).

Sessions run through ``run_session_job`` on the test's loop (executor off, in-memory layer),
as in ``test_api_sessions.py``.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.broadcast.events import LiveSink
from agents_app.models import Thread, ThreadSession
from agents_app.orchestration import start_gate as gate_module
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.start_gate import StartGate, start_gate
from agents_app.orchestration.thread_creation import thread_create
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401
from tests.agents_app.api.test_api_sessions import (
    _active_session,
    _pending_assistant,
    _post,
    _transcript,
    wait_for,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


@pytest.fixture
def one_slot(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.STUDIO_SESSION_STARTS_AT_ONCE = 1
    monkeypatch.setattr(gate_module, "_gates", weakref.WeakKeyDictionary())


@sync_to_async
def _thread(user: Any, agent: str, script: list[dict[str, Any]]) -> Thread:
    define_agent(agent, script)
    return thread_create(user=user, agent_name=agent)


@sync_to_async
def _status(session_id: str) -> str:
    return str(ThreadSession.objects.get(pk=session_id).status)


async def test_a_start_waits_for_a_free_slot_before_its_claim(alice: Any, one_slot: None) -> None:
    thread = await _thread(alice, "quick", [{"content": "done"}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    assert session_id is not None
    held = await start_gate().enter()  # the only slot
    job = asyncio.create_task(run_session_job(session_id))
    await asyncio.sleep(0.5)  # time enough to claim and finish, were it not gated
    assert await _status(session_id) == "queued"
    held.release()
    await asyncio.wait_for(job, 15)
    assert await _status(session_id) == "completed"
    assert await _transcript(thread) == [
        ("user", "completed", "Hello"),
        ("assistant", "completed", "done"),
    ]


async def test_a_session_gives_up_its_slot_at_its_first_request(
    alice: Any, one_slot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "HOLD_LIMIT", 120.0)  # only the request can free it
    slow = await _thread(alice, "slow", [{"content": "slow reply", "delayMs": 6000}])
    quick = await _thread(alice, "quick", [{"content": "quick reply"}])
    await _post(slow, "first")
    await _post(quick, "second")
    slow_job = asyncio.create_task(run_session_job(await _active_session(slow)))
    await asyncio.sleep(0)  # the slow session takes the slot first
    quick_id = await _active_session(quick)
    await asyncio.wait_for(run_session_job(quick_id), 15)
    # The quick session ran while the slow one waited for its reply, holding no slot.
    assert not slow_job.done()
    assert await _status(quick_id) == "completed"
    await asyncio.wait_for(slow_job, 15)
    assert (await _transcript(slow))[-1] == ("assistant", "completed", "slow reply")


async def test_the_threads_next_queued_message_runs_without_waiting_for_a_place(
    alice: Any, one_slot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its claim comes with the release of the previous session: a claimed row that waited
    # in the gate would have no heartbeat.
    monkeypatch.setattr(gate_module, "HOLD_LIMIT", 120.0)
    thread = await _thread(
        alice, "helper", [{"content": "one", "delayMs": 1500}, {"content": "two"}]
    )
    await _post(thread, "first")
    job = asyncio.create_task(run_session_job(await _active_session(thread)))
    await wait_for(lambda: _pending_assistant(thread), "the first request")
    await _post(thread, "second")
    held = await asyncio.wait_for(start_gate().enter(), 5)  # free since the first request
    await asyncio.wait_for(job, 15)
    assert await _transcript(thread) == [
        ("user", "completed", "first"),
        ("assistant", "completed", "one"),
        ("user", "completed", "second"),
        ("assistant", "completed", "two"),
    ]
    held.release()


async def test_a_slot_held_too_long_is_given_up(
    alice: Any, one_slot: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "HOLD_LIMIT", 0.2)
    thread = await _thread(alice, "quick", [{"content": "done"}])
    await _post(thread, "Hello")
    session_id = await _active_session(thread)
    await start_gate().enter()  # never released by its holder
    await asyncio.wait_for(run_session_job(session_id), 15)
    assert await _status(session_id) == "completed"


async def test_no_limit_when_the_setting_is_zero() -> None:
    gate = StartGate(0)
    slots = [await gate.enter() for _ in range(100)]
    assert not any(slot.held for slot in slots)


async def test_a_released_slot_is_released_once() -> None:
    gate = StartGate(1)
    first = await gate.enter()
    first.release()
    first.release()  # a second call must not free a second place
    second = await gate.enter()
    third = asyncio.create_task(gate.enter())
    await asyncio.sleep(0.05)
    assert not third.done()
    second.release()
    assert (await asyncio.wait_for(third, 5)).held


async def test_the_sink_tells_of_the_first_request_once(one_slot: None) -> None:
    calls: list[int] = []
    sink = LiveSink(layer=None, on_request=lambda: calls.append(1))
    sink._layer = None  # no channel layer: the notice must not depend on sending
    sink.emit("t", {"type": "message_chunk", "message_id": "m", "chunk": "x"})
    assert calls == []
    sink.emit("t", {"type": "llm_request", "model": "m", "attempt": 1})
    sink.emit("t", {"type": "llm_request", "model": "m", "attempt": 2})
    assert calls == [1]
