"""Interpreter settings for long-lived server processes (Daphne, Celery workers).

**Garbage collection.** A full (generation 2) collection walks every tracked object of
the process: tens of thousands after Django, the models, ninja's schemas and Celery are
imported. Streaming allocates fast (deltas, frames), so full collections come every
few seconds, and each one stops the whole process (every session and socket on it) for
tens of milliseconds. Objects that exist once start-up is over live as long as the
process, so ``settle()`` collects once and then freezes them (``gc.freeze``): later
collections skip them. ``STUDIO_GC_FREEZE=false`` leaves the collector as it is.

**Collection thresholds.** ``STUDIO_GC_THRESHOLDS`` (one to three positive integers, as
``gc.set_threshold`` takes them; empty: Python's 700, 10, 10) sets how often the collector
runs. A full collection comes after ``threshold2`` collections of the middle generation, and
only once the objects that survived since the last one are a quarter of those it kept: while
a process grows (hundreds of sessions or sockets starting), that is every few hundred
milliseconds, each a pause of the whole process.

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


def gc_thresholds() -> tuple[int, ...] | None:
    """``STUDIO_GC_THRESHOLDS`` as ``gc.set_threshold`` takes it (``None``: Python's own)."""
    raw = os.environ.get("STUDIO_GC_THRESHOLDS", "").strip()
    if not raw:
        return None
    try:
        values = tuple(int(part) for part in raw.split(","))
    except ValueError:
        values = ()
    if not 1 <= len(values) <= 3 or min(values) < 1:
        raise ValueError(
            "STUDIO_GC_THRESHOLDS must be one to three positive whole numbers separated by "
            f"commas, like 700,10,10 (Python's own), not {raw!r}"
        )
    return values


def switch_interval_ms() -> float:
    """``STUDIO_GIL_SWITCH_MS`` (default 1; 0 leaves Python's 5 ms)."""
    raw = os.environ.get("STUDIO_GIL_SWITCH_MS", "").strip()
    try:
        value = float(raw) if raw else 1.0
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses nan
        raise ValueError(
            f"STUDIO_GIL_SWITCH_MS must be a number of milliseconds, 0 or more, not {raw!r}"
        )
    return value


def settle() -> None:
    """Apply the settings; call once, after start-up imports."""
    switch_ms = switch_interval_ms()
    if switch_ms > 0:
        sys.setswitchinterval(switch_ms / 1000)
    thresholds = gc_thresholds()
    if thresholds is not None:
        gc.set_threshold(*thresholds)
    if _flag("STUDIO_GC_FREEZE", True):
        gc.collect()
        gc.freeze()
