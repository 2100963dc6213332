"""A database error at any point of a claimed session leaves no thread stuck.

Each fault is real: at the named point (``agents_app/base/faults.py``) the connection's server
process is terminated with ``pg_terminate_backend``, so the next statement fails with
psycopg's own error, as after a database restart. The runner must then release or hand
back the claim, stop the heartbeat, and the session must still be answered (by the job's
retry or by the sweep); stop and continue must keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.base import faults
from agents_app.models import Message, ThreadSession
from agents_app.orchestration import runner
from agents_app.orchestration.runner import run_session_job
from agents_app.services.sessions import lifecycle as sessions
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401
from tests.agents_app.api.test_api_sessions import (
    _active_session,
    _pending_assistant,
    _post,
    _setup,
    _transcript,
    wait_for,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]

# The database work of a claimed session, in order. A start reads its progress with its claim
# (no ``load_progress`` statement), and the release reads what the end's announcement says
# (``announce`` is a read of its own only when the release could not: not on this path).
CLAIM_PATH = ["claim", "plan", "engine_commit", "release", "heartbeat"]


@pytest.fixture
def fault(settings: Any) -> Iterator[Any]:
    """Arm fault points for one test: ``fault("plan")`` or ``fault("plan:2", "release")``."""
    settings.STUDIO_SESSION_HEARTBEAT_SECONDS = 0  # beat on every supervisor tick
    settings.STUDIO_STOP_POLL_MS = 50
    faults._fired.clear()

    def arm(*points: str) -> None:
        settings.STUDIO_FAULT_POINTS = {
            name: int(count or 1) for name, _, count in (p.partition(":") for p in points)
        }

    yield arm
    faults._fired.clear()


@sync_to_async
def _sessions(thread: Any) -> list[tuple[str, str]]:
    rows = ThreadSession.objects.filter(thread=thread).order_by("created_at")
    return [(r.status, r.error) for r in rows]


@sync_to_async
def _failure_messages(thread: Any) -> int:
    return Message.objects.filter(thread=thread, status="failed").count()


@pytest.mark.parametrize("point", CLAIM_PATH)
async def test_a_database_error_at_any_point_of_the_claim_path_still_answers(
    alice: Any, fault: Any, point: str
) -> None:
    script = [{"content": "first answer", "delayMs": 300}, {"content": "second answer"}]
    thread = await _setup(alice, script)
    await _post(thread, "hello")
    fault(point)
    await asyncio.wait_for(run_session_job(await _active_session(thread)), 60)
    assert faults._fired == {point: 1}  # the fault really hit this point
    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "first answer"),
    ]
    assert await _sessions(thread) == [("completed", "")]
    assert runner.supervisor().entries == {}  # nothing keeps a heartbeat
    # The thread is not stuck: the next message runs as a new session.
    await _post(thread, "again")
    await asyncio.wait_for(run_session_job(await _active_session(thread)), 30)
    assert (await _transcript(thread))[2:] == [
        ("user", "completed", "again"),
        ("assistant", "completed", "second answer"),
    ]


async def test_every_point_of_the_claim_path_failing_in_turn_still_answers(
    alice: Any, fault: Any, settings: Any
) -> None:
    settings.STUDIO_SESSION_STALE_SECONDS = 1
    thread = await _setup(alice, [{"content": "made it", "delayMs": 300}])
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    fault(*CLAIM_PATH)
    await asyncio.wait_for(run_session_job(session_id), 60)
    assert set(faults._fired) == set(CLAIM_PATH)
    if await _sessions(thread) == [("running", "")]:
        # About as many faults as one job's retries: when they ran out, the sweep takes it.
        async def swept() -> bool:
            return session_id in await sync_to_async(sessions.sessions_sweep)()

        await wait_for(swept, "the sweep to take the session", timeout=15)
        await asyncio.wait_for(run_session_job(session_id, owner="another-worker"), 30)
    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "made it"),
    ]
    assert await _sessions(thread) == [("completed", "")]


async def test_a_database_error_while_tidying_a_stop_still_stops_and_continue_answers(
    alice: Any, fault: Any
) -> None:
    thread = await _setup(alice, [{"content": "slow", "delayMs": 3000}])
    await _post(thread, "long one")
    fault("stop_cleanup")
    job = asyncio.create_task(run_session_job(await _active_session(thread)))
    await wait_for(lambda: _pending_assistant(thread), "the request to be sent")
    await _post(thread, "parked")
    await sync_to_async(sessions.thread_stop)(thread=thread)
    await asyncio.wait_for(job, 30)
    assert faults._fired == {"stop_cleanup": 1}
    assert await _transcript(thread) == [
        ("user", "completed", "long one"),
        ("assistant", "failed", None),
        ("system", "completed", "Execution stopped by user"),
    ]
    assert await _sessions(thread) == [("stopped", "")]
    continued = await sync_to_async(sessions.thread_continue)(thread=thread, side="a")
    await asyncio.wait_for(run_session_job(str(continued.pk)), 30)
    assert (await _transcript(thread))[3:] == [
        ("user", "completed", "parked"),
        ("assistant", "completed", "slow"),
    ]


async def test_when_retries_run_out_the_sweep_resumes_the_handed_back_session(
    alice: Any, fault: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(runner, "RETRY_DELAYS", ())
    thread = await _setup(alice, [{"content": "picked up by the sweep"}])
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    fault("plan")
    await asyncio.wait_for(run_session_job(session_id), 30)
    assert faults._fired == {"plan": 1}
    assert await _sessions(thread) == [("running", "")]  # handed back, not failed
    assert await _failure_messages(thread) == 0
    # Handed back as stale: the very next sweep dispatches it, no waiting for the limit.
    assert await sync_to_async(sessions.sessions_sweep)() == [session_id]
    await asyncio.wait_for(run_session_job(session_id, owner="another-worker"), 30)
    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "picked up by the sweep"),
    ]


async def test_a_session_whose_job_is_gone_gets_no_heartbeat_and_the_sweep_resumes_it(
    alice: Any, fault: Any, settings: Any
) -> None:
    settings.STUDIO_SESSION_STALE_SECONDS = 1
    thread = await _setup(alice, [{"content": "resumed"}])
    await _post(thread, "hello")
    session_id = await _active_session(thread)
    claim = await sync_to_async(sessions.session_claim)(session_id, "worker-1")

    async def job_that_vanishes() -> None:  # registered, then gone without cleaning up
        runner.supervisor().add(claim)

    await asyncio.create_task(job_that_vanishes())
    keeper = asyncio.create_task(asyncio.sleep(30))  # another live session keeps ticking
    other = sessions.Claim("other", "other", "worker-1", "a", None, {})
    runner.supervisor().entries["other"] = runner.Entry(other, job=keeper)

    async def swept() -> bool:
        return session_id in await sync_to_async(sessions.sessions_sweep)()

    try:
        await wait_for(swept, "the sweep to see the session nobody runs", timeout=15)
        assert session_id not in runner.supervisor().entries
    finally:
        keeper.cancel()
        runner.supervisor().entries.pop("other", None)
    await asyncio.wait_for(run_session_job(session_id, owner="worker-2"), 30)
    assert await _transcript(thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", "resumed"),
    ]
