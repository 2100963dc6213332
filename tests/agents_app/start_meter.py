"""Measuring one conversation start in work done, not time (issue #58): Python function calls
by function, on every thread that works for it, and, for ``bench/start_profile.py``, a
cProfile of the same work. Shared by ``test_start_cost.py`` and the profile bench."""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import sys
import threading
import types
from collections import Counter
from pathlib import Path
from typing import Any

# Where ``bench/start_profile.py`` asks the cost tests to write their profiles.
PROFILE_DIR_ENV = "START_PROFILE_DIR"


# Modules whose calls depend on timing, not on the work: the event loop's turns, the
# selector's polls, thread hand-offs and waits.
SCHEDULING = ("asyncio.", "selectors:", "threading:", "concurrent.", "queue:", "asgiref.")


class CallCounter:
    """Python function calls (``sys.setprofile`` ``call`` events: a coroutine's resumption
    counts as one) by ``module:qualname``, on the threads that were switched on with
    ``on_this_thread`` while counting (``sys.setprofile`` is per thread: the ORM's work of
    an async caller runs on asgiref's database thread)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._collecting = False

    def __enter__(self) -> CallCounter:
        # No garbage collection while counting: a collection runs whatever gc.callbacks
        # other libraries registered at whichever call it falls on.
        self._collecting = gc.isenabled()
        gc.disable()
        self.on_this_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        if self._collecting:
            gc.enable()

    def on_this_thread(self) -> None:
        sys.setprofile(self._event)

    def off_this_thread(self) -> None:
        sys.setprofile(None)

    def _event(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "?")
            key = f"{module}:{frame.f_code.co_qualname}"
            with self._lock:
                self.calls[key] += 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def work(self) -> Counter[str]:
        """The calls without the event loop's and the threads' own (``SCHEDULING``): how
        often the loop turns and a thread waits depends on when PostgreSQL answers, the
        work done does not."""
        return Counter({k: n for k, n in self.calls.items() if not k.startswith(SCHEDULING)})

    def by_package(self) -> Counter[str]:
        """Calls by top-level package (``django``, ``agents_app``, ``pydantic`` …)."""
        grouped: Counter[str] = Counter()
        for key, n in self.calls.items():
            grouped[key.split(":", 1)[0].split(".", 1)[0]] += n
        return grouped


class Profiles:
    """One ``cProfile.Profile`` per thread that works for the measured start, merged at the end."""

    def __init__(self) -> None:
        self._profiles: list[cProfile.Profile] = []

    def on_this_thread(self) -> None:
        profile = cProfile.Profile()
        self._profiles.append(profile)
        profile.enable()

    def off_this_thread(self) -> None:
        for profile in self._profiles:
            try:
                profile.disable()
            except Exception:  # enabled on another thread: it is disabled there
                continue

    def write(self, name: str) -> Path | None:
        """Write ``name``.prof and two top-40 texts (cumulative, own time) into the profile
        directory the bench named; nothing when no bench asked."""
        folder = os.environ.get(PROFILE_DIR_ENV)
        if not folder or not self._profiles:
            return None
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        stats = pstats.Stats(self._profiles[0])
        for extra in self._profiles[1:]:
            stats.add(extra)
        stats.dump_stats(out / f"{name}.prof")
        for order in ("cumulative", "tottime"):
            text = io.StringIO()
            pstats.Stats(str(out / f"{name}.prof"), stream=text).sort_stats(order).print_stats(40)
            (out / f"{name}.{order}.txt").write_text(_relative(text.getvalue()))
        return out


def _relative(text: str) -> str:
    """Paths inside the checkout and the virtualenv, shortened (the profiles are kept)."""
    root = str(Path(__file__).resolve().parents[2])
    return text.replace(root + "/.venv/lib/python3.11/site-packages/", "").replace(root + "/", "")


def profiling() -> bool:
    return bool(os.environ.get(PROFILE_DIR_ENV))


def over_budget(calls: Counter[str], budget: dict[str, int], top: int = 25) -> str:
    """The functions called most, for an assertion's message: what grew is named."""
    listed = ", ".join(f"{k}={n}" for k, n in calls.most_common(top))
    return f"{sum(calls.values())} calls (budget {budget}); most called: {listed}"
