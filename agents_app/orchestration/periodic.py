"""What each periodic job does (``agents_app/base/periodic_jobs.py`` declares them), for the
Celery tasks and the embedded mode alike: both call these functions, so a job cannot do one
thing on beat and another on the embedded loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents_app.orchestration import eval_runs, knowledge_ingest, schedule_runner, webhook_runner
from agents_app.services.operations.housekeeping import expired_purge
from agents_app.services.operations.retention import retention_apply
from agents_app.services.sessions.lifecycle import owner_id, sessions_sweep
from agents_app.services.sessions.tool_waits import expire_due
from agents_app.services.threads.uploads import uploads_expire


def sessions_tick() -> list[str]:
    """Tool calls whose wait ran out get their "timed out" result, then the sessions to run
    again (a dead worker's, a lost task's): their ids, for the caller's executor."""
    expire_due()
    return sessions_sweep()


def retention_tick() -> str:
    return "; ".join(retention_apply().lines())


# The embedded loop's jobs (``embedded == "automation"``), by task name; the Celery tasks of
# the same names call the same functions (schedules sweep for one interval there).
AUTOMATION: dict[str, Callable[[], Any]] = {
    "agents_app.schedules_tick": lambda: schedule_runner.sweep_once(owner_id()),
    "agents_app.webhooks_tick": webhook_runner.sweep,
    "agents_app.purge_expired": expired_purge,
    "agents_app.expire_uploads": uploads_expire,
    "agents_app.apply_retention": retention_tick,
    "agents_app.knowledge_tick": knowledge_ingest.knowledge_tick,
}
# The in-process executor's sweep runs these (``embedded == "sessions"``).
SESSIONS: dict[str, Callable[[], Any]] = {
    "agents_app.sweep_sessions": sessions_tick,
    "agents_app.evals_tick": eval_runs.advance_all,
}
# ``embedded == "effects"``: ``effect_runner.EmbeddedSweeper`` claims continuously.
EFFECTS = ("agents_app.effects_tick",)
