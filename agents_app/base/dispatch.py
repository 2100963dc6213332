"""The one seam between services, which decide that a session should run, and the
orchestration (``agents_app.orchestration.executor``), which runs it.

Services call ``session_should_run(session_id)`` inside their transaction; after the commit the
seam hands the id to the starter that ``AgentsAppConfig.ready`` installed (``executor.dispatch``:
a Celery task, or the in-process loop). Services therefore never import the executor, the
runner or the engine (an import-linter contract in ``pyproject.toml`` keeps it so).

A starter that fails (the broker is down, a full queue) is logged and swallowed: the session
row is already committed, so the write succeeded and the client must hear so. Nothing is lost:
the periodic sweep (``services.sessions.lifecycle.sessions_sweep``) dispatches every queued session
whose task never arrived, after ``STUDIO_SESSION_REDISPATCH_SECONDS``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

logger = logging.getLogger("agents_app.base.dispatch")

SessionStarter = Callable[[str], None]

_starter: SessionStarter | None = None


def install(starter: SessionStarter) -> None:
    """Set what starts a session (``AgentsAppConfig.ready`` installs ``executor.dispatch``)."""
    global _starter
    _starter = starter


def session_should_run(session_id: Any) -> None:
    """After the current transaction commits, start (or resume) the session ``session_id``."""
    key = str(session_id)
    transaction.on_commit(lambda: start_session(key))


def start_session(session_id: str) -> bool:
    """Start the session now; ``False`` (logged) when the starter failed or none is installed."""
    if _starter is None:
        logger.error("no session starter installed; session %s waits for the sweep", session_id)
        return False
    try:
        _starter(session_id)
    except Exception as exc:
        # Never raise into the request: its write is committed (see the module docstring).
        logger.warning(
            "session %s not dispatched now (%s: %s); the sweep will dispatch it",
            session_id,
            type(exc).__name__,
            exc,
        )
        return False
    return True
