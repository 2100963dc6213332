"""Periodic work, declared once (issue #53): every job's name, Celery task, interval setting
and where it runs without Celery.

``studio/settings.py`` builds ``CELERY_BEAT_SCHEDULE`` from ``JOBS``; the embedded mode (no
Celery, no beat) runs the same jobs on the server's loop: the ``automation`` ones in
``orchestration/embedded_automation.py``'s loop, ``sessions`` in the in-process executor's
sweep (which also resumes sessions of a process that has no server, a management command's)
and ``effects`` in the effect sweeper, which claims continuously. A test fails when a job
has no task, no embedded runner, or a runner no job declares. This module imports nothing
of Django's: the settings read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# Where a job runs in embedded mode (see the module docstring).
EmbeddedHome = Literal["automation", "sessions", "effects"]


@dataclass(frozen=True)
class PeriodicJob:
    beat_name: str
    task: str
    interval_setting: str  # the setting that holds its interval
    embedded: EmbeddedHome
    milliseconds: bool = False  # the setting is in ms
    # A tick that waited in a queue this long is dropped (the next one does its work):
    # "interval", twice the interval (at least 2 s), or never.
    expires: Literal["interval", "double", "never"] = "double"

    def seconds(self, settings: Mapping[str, Any] | Any) -> float:
        value = (
            settings[self.interval_setting]
            if isinstance(settings, Mapping)
            else getattr(settings, self.interval_setting)
        )
        return float(value) / (1000 if self.milliseconds else 1)


JOBS: tuple[PeriodicJob, ...] = (
    # Dead workers' and lost sessions, and tool calls whose wait ran out.
    PeriodicJob(
        "sweep-sessions",
        "agents_app.sweep_sessions",
        "STUDIO_SESSION_SWEEP_SECONDS",
        "sessions",
        expires="never",
    ),
    PeriodicJob(
        "effects-tick", "agents_app.effects_tick", "STUDIO_EFFECT_SWEEP_MS", "effects", True
    ),
    PeriodicJob("evals-tick", "agents_app.evals_tick", "STUDIO_EVAL_TICK_SECONDS", "sessions"),
    PeriodicJob(
        "schedules-tick",
        "agents_app.schedules_tick",
        "STUDIO_SCHEDULE_SWEEP_MS",
        "automation",
        True,
    ),
    PeriodicJob(
        "webhooks-tick", "agents_app.webhooks_tick", "STUDIO_WEBHOOK_SWEEP_SECONDS", "automation"
    ),
    PeriodicJob(
        "purge-expired",
        "agents_app.purge_expired",
        "STUDIO_PURGE_SECONDS",
        "automation",
        expires="interval",
    ),
    # Resumable uploads left unfinished (services/threads/uploads.py).
    PeriodicJob(
        "expire-uploads",
        "agents_app.expire_uploads",
        "STUDIO_UPLOAD_SWEEP_SECONDS",
        "automation",
        expires="interval",
    ),
    PeriodicJob(
        "retention",
        "agents_app.apply_retention",
        "STUDIO_RETENTION_INTERVAL_SECONDS",
        "automation",
        expires="interval",
    ),
    # Knowledge documents whose task was lost or whose worker died (docs/knowledge.md).
    PeriodicJob(
        "knowledge-tick",
        "agents_app.knowledge_tick",
        "STUDIO_KNOWLEDGE_SWEEP_SECONDS",
        "automation",
    ),
)


def beat_schedule(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Celery beat's schedule of ``JOBS`` with the intervals ``settings`` hold."""
    schedule: dict[str, dict[str, Any]] = {}
    for job in JOBS:
        every = job.seconds(settings)
        entry: dict[str, Any] = {"task": job.task, "schedule": every}
        if job.expires == "interval":
            entry["options"] = {"expires": every}
        elif job.expires == "double":
            entry["options"] = {"expires": max(2.0, 2 * every)}
        schedule[job.beat_name] = entry
    return schedule
