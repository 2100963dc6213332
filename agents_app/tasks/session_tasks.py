"""Celery tasks: thin wrappers that hand work to the session runner.

A worker process runs every session on one event loop in a background thread
(sessions wait on LLM streams; a loop holds hundreds of them); each task waits
for its session so that ``acks_late`` keeps its meaning. Every task may be
delivered twice: ``run_session`` claims the session row first and exits when it
is owned by a live worker.
"""

from __future__ import annotations

import asyncio
from typing import Any

from celery import shared_task
from celery.signals import worker_process_init, worker_ready, worker_shutdown

from agents_app.base.task_names import RUN_SESSION
from agents_app.orchestration.executor import inprocess, run_detached
from runtime.core import tracing


def worker_loop() -> asyncio.AbstractEventLoop:
    """This process's session loop: the in-process executor's own (started lazily, after any
    fork), so a worker and an embedded server run sessions on the same kind of loop."""
    return inprocess.loop()


def run_on_worker_loop(coro: Any) -> Any:
    return run_detached(coro, worker_loop()).result()


@worker_ready.connect
@worker_process_init.connect
def warm_up(**_: Any) -> None:
    """What this worker's first session would import, done before it takes any
    (agents_app/orchestration/warm_up.py); then freeze it with the rest of start-up."""
    from agents_app.orchestration.warm_up import warm_worker
    from studio.process_tuning import settle

    warm_worker()
    settle()


@worker_shutdown.connect
def close_mcp_connections(**_: Any) -> None:
    """Close this worker's MCP connections on their loop (a stdio server is a child process)."""
    loop = inprocess.running_loop()
    if loop is not None:
        from runtime.mcp.client import POOL

        asyncio.run_coroutine_threadsafe(POOL.aclose(), loop).result(timeout=20)


@shared_task(name=RUN_SESSION, acks_late=True, ignore_result=True)
def run_session(session_id: str) -> None:
    """Claim and run a session (then the thread's next queued messages)."""
    from agents_app.orchestration.runner import run_session_job

    # The session runs on the worker's loop thread: the task's trace context goes with it.
    carrier = tracing.current_carrier()
    run_on_worker_loop(run_session_job(session_id, trace_carrier=carrier))


_sweep_outage_log: Any = None


def _sweep_outage() -> Any:
    global _sweep_outage_log
    if _sweep_outage_log is None:
        import logging

        from agents_app.orchestration.db_retry import OutageLog

        _sweep_outage_log = OutageLog(logging.getLogger("agents_app.sessions"), "session sweep")
    return _sweep_outage_log


@shared_task(name="agents_app.sweep_sessions", ignore_result=True)
def sweep_sessions() -> int:
    """Re-dispatch sessions whose worker died and queued sessions whose task was lost."""
    from agents_app.orchestration.db_retry import CONNECTION_ERRORS
    from agents_app.orchestration.periodic import sessions_tick

    try:
        ids = sessions_tick()  # tool waits that ran out too: the model gets a timeout result
    except CONNECTION_ERRORS as exc:
        # Beat sends this every second: during an outage one warning, not a traceback a tick.
        _sweep_outage().failed(exc)
        return 0
    _sweep_outage().succeeded()
    for session_id in ids:
        run_session.delay(session_id)
    return len(ids)


@shared_task(name="agents_app.purge_expired", ignore_result=True)
def purge_expired() -> dict[str, int]:
    """Expired WebSocket tickets and idempotency keys (``services.operations.housekeeping``)."""
    from agents_app.orchestration.periodic import AUTOMATION

    return AUTOMATION["agents_app.purge_expired"]()  # type: ignore[no-any-return]


@shared_task(name="agents_app.expire_uploads", ignore_result=True)
def expire_uploads() -> int:
    """Resumable uploads left unfinished past their expiry (``services.threads.uploads``)."""
    from agents_app.orchestration.periodic import AUTOMATION

    return AUTOMATION["agents_app.expire_uploads"]()  # type: ignore[no-any-return]


@shared_task(name="agents_app.evals_tick", ignore_result=True)
def evals_tick() -> int:
    """Advance the running eval runs (agents_app/orchestration/eval_runs.py): score finished cases, start
    pending ones. Any worker may take a tick; the database decides who does what."""
    from agents_app.orchestration.periodic import SESSIONS

    return SESSIONS["agents_app.evals_tick"]()  # type: ignore[no-any-return]
