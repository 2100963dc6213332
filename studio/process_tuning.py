"""Interpreter settings for long-lived server processes (Daphne, Celery workers).

**Garbage collection.** A full (generation 2) collection walks every tracked object of
the process: tens of thousands after Django, the models, ninja's schemas and Celery are
imported. Streaming allocates fast (deltas, frames), so full collections come every
few seconds, and each one stops the whole process (every session and socket on it) for
tens of milliseconds. Objects that exist once start-up is over live as long as the
process, so ``settle()`` collects once and then freezes them (``gc.freeze``): later
collections skip them. ``STUDIO_GC_FREEZE=false`` leaves the collector as it is.

**GIL switch interval.** One event loop thread streams every session of a worker (or
relays every socket of a Daphne process) while other threads do database work. A
thread that wants the GIL waits up to the switch interval (Python's default: 5 ms)
for the running one to let go, and the loop asks again after every ``select``: with a
busy database thread, each turn of the loop could wait 5 ms, and tokens queue behind
it. ``STUDIO_GIL_SWITCH_MS`` (default 1) shortens that wait.
"""

from __future__ import annotations

import gc
import os
import sys


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    return default if not raw else raw not in ("0", "false", "no", "off")


def settle() -> None:
    """Apply both settings; call once, after start-up imports."""
    switch_ms = float(os.environ.get("STUDIO_GIL_SWITCH_MS", "1") or 1)
    if switch_ms > 0:
        sys.setswitchinterval(switch_ms / 1000)
    if _flag("STUDIO_GC_FREEZE", True):
        gc.collect()
        gc.freeze()
