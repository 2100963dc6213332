"""Which asyncio event loop the long-lived processes run on (``STUDIO_EVENT_LOOP``).

``uvloop`` (libuv, the loop behind uvicorn's "standard" install) runs the loop's own
work in C: timers, callbacks, futures and socket readiness. A worker streaming hundreds
of sessions wakes its loop once per token per session, and a Daphne process once per
frame per socket, so that work is a large share of both (issue #21). ``asyncio`` keeps
the standard library's loop. Read from the environment, not Django's settings: Daphne
builds its loop before Django is set up. An unknown name, or ``uvloop`` without uvloop
installed, stops the process at start (a setting is never silently ignored).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable

logger = logging.getLogger("studio.event_loop")

CHOICES = ("uvloop", "asyncio")


def loop_name() -> str:
    """The configured loop (``uvloop`` unless ``STUDIO_EVENT_LOOP`` says otherwise)."""
    name = os.environ.get("STUDIO_EVENT_LOOP", "").strip().lower() or "uvloop"
    if name not in CHOICES:
        raise ValueError(f"STUDIO_EVENT_LOOP must be one of {', '.join(CHOICES)}, not {name!r}")
    return name


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """A function that makes a new loop of the configured kind."""
    if loop_name() == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as exc:  # pragma: no cover - uvloop is a dependency
        raise RuntimeError("STUDIO_EVENT_LOOP=uvloop but uvloop is not installed") from exc
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the configured kind (a process makes one for its sessions)."""
    loop = loop_factory()()
    logger.info("Sessions run on a new %s event loop", kind_of(loop))
    return loop


def install_policy() -> None:
    """Make ``asyncio.new_event_loop`` build the configured kind (before Daphne's import)."""
    if loop_name() == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def kind_of(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: which implementation ``loop`` is."""
    return "uvloop" if type(loop).__module__.split(".")[0] == "uvloop" else "asyncio"


def check_server_loop() -> str | None:
    """The loop Daphne's reactor runs on (None outside Daphne), logged once at start.

    Plain ``daphne`` builds its loop before our code runs, so it always gets asyncio's:
    with ``STUDIO_EVENT_LOOP`` set explicitly to anything else that is refused here (a
    setting is never ignored); with the default, it is logged.
    """
    reactor = sys.modules.get("twisted.internet.reactor")
    loop = getattr(reactor, "_asyncioEventloop", None)
    if loop is None:
        return None
    kind, wanted = kind_of(loop), loop_name()
    if kind != wanted:
        message = (
            f"Daphne runs the {kind} event loop, not {wanted}: start it with "
            "`python -m studio.serve` (the same arguments as `daphne`)"
        )
        if os.environ.get("STUDIO_EVENT_LOOP", "").strip():
            raise RuntimeError(f"STUDIO_EVENT_LOOP={wanted} is set, but {message}")
        logger.warning("%s", message)
    else:
        logger.info("Daphne runs the %s event loop", kind)
    return kind
