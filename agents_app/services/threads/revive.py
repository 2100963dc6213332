"""``POST /api/threads/{id}/revive``: the reference's "probe now and act", on our sessions.

The reference runs one watchdog probe; we have no watchdog but the session sweep, so revive
does for one thread, at once, what the sweep would do later: a running session whose
heartbeat stopped is dispatched again (the next worker takes it over from its stored
progress), a queued one whose task may be lost is dispatched again (a duplicate claim is
harmless: exactly one worker wins the row), and messages waiting with no session get one.
A healthy, parked or idle thread is left alone. The answer has the reference's shape.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agents_app.base.dispatch import session_should_run
from agents_app.models import Log, QueuedMessage, Thread, ThreadSession
from agents_app.services.sessions import lifecycle as sessions


@transaction.atomic
def thread_revive(thread: Thread) -> dict[str, Any]:
    locked = sessions.lock_thread(thread.pk)
    now = timezone.now()
    stale_ms = int(sessions.stale_after().total_seconds() * 1000)
    active = sessions.active_session(locked)
    beat = active.heartbeat_at if active is not None else None
    silence_ms = int((now - beat).total_seconds() * 1000) if beat else None
    verdict, action = "idle", "none"
    if locked.terminated_at is not None:
        pass  # nothing runs on a terminated thread
    elif active is not None and active.status == ThreadSession.Status.RUNNING:
        if silence_ms is None or silence_ms > stale_ms:
            verdict, action = "recovered", "aborted_takeover_resumed"
            session_should_run(active.pk)
        else:
            verdict = "healthy"
    elif active is not None:  # queued: its task may be lost
        verdict, action = "recovered", "finalized_resumed"
        session_should_run(active.pk)
    elif sessions.parked_session(locked) is not None:
        verdict = "parked"
    elif sessions.runnable_queue(locked) and sessions.session_request(locked) is not None:
        verdict, action = "recovered", "finalized_resumed"
    return {
        "verdict": verdict,
        "action": action,
        "executing": active is not None and active.status == ThreadSession.Status.RUNNING,
        "incompleteLogs": Log.objects.filter(
            thread=locked, is_complete=False, kind=Log.Kind.LLM
        ).count(),
        "queuedMessages": QueuedMessage.objects.filter(thread=locked).count(),
        "silenceMs": silence_ms,
        "ceilingMs": stale_ms,
        "strikes": 0,
        "requestRestart": False,
    }
