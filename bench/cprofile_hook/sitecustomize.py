"""cProfile in every thread of a process of the bench's stack (``service_bench.py --cprofile``).

On the ``PYTHONPATH`` of Daphne and the Celery worker, Python imports this at start-up. With
``START_CPROFILE_DIR`` set, every thread is profiled from its birth (Daphne runs each view
in a thread of asgiref's pool; the worker runs sessions on its loop thread and the ORM on
the database thread), timed by each thread's CPU clock (``time.thread_time``: a thread
waiting for PostgreSQL, a socket or the GIL is not charged), and a control thread watches the directory: ``reset-<label>`` there
clears what was recorded so far, ``dump-<label>`` writes the merged profile of all threads
since the reset as ``<label>-<process>-<pid>.prof`` with its top-40 texts (by cumulative and
by own time). Files, not signals: Celery keeps SIGUSR1 and SIGUSR2 for itself. Without the
variable this does nothing (and no process outside the bench has this folder on its path).
"""

from __future__ import annotations

import os

_FOLDER = os.environ.get("START_CPROFILE_DIR", "")


def _role() -> str:
    """ "server" (``python -m studio.serve``), "worker" (``celery … worker``), or "" for the
    stack's other processes (migrations, the seed), which are not profiled."""
    import sys

    command = list(getattr(sys, "orig_argv", sys.argv))
    if "studio.serve" in command:
        return "server"
    if "worker" in command and any(part.endswith("celery") for part in command):
        return "worker"
    return ""


def _install(folder: str, name: str) -> None:
    import cProfile
    import io
    import pstats
    import sys
    import threading
    import time
    from pathlib import Path

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()
    out = Path(folder)

    class _Taken:
        """What ``pstats.Stats`` loads: a running profile's stats, taken without stopping it."""

        def __init__(self, stats: dict) -> None:  # type: ignore[type-arg]
            self.stats = stats

        def create_stats(self) -> None:
            return None

    def dump(label: str) -> None:
        with lock:
            taken = []
            for profile in profiles:
                profile.snapshot_stats()
                if profile.stats:  # type: ignore[attr-defined]
                    taken.append(_Taken(dict(profile.stats)))  # type: ignore[attr-defined]
        if not taken:
            return
        stats = pstats.Stats(taken[0])  # type: ignore[arg-type]
        for extra in taken[1:]:
            stats.add(extra)  # type: ignore[arg-type]
        base = out / f"{label}-{name}-{os.getpid()}"
        stats.dump_stats(f"{base}.prof")
        root = str(Path(__file__).resolve().parents[2])
        for order in ("cumulative", "tottime"):
            text = io.StringIO()
            pstats.Stats(f"{base}.prof", stream=text).sort_stats(order).print_stats(40)
            shown = text.getvalue().replace(root + "/.venv/lib/python3.11/site-packages/", "")
            Path(f"{base}.{order}.txt").write_text(shown.replace(root + "/", ""))

    def watch() -> None:
        seen: set[str] = set()
        while True:
            time.sleep(0.1)
            try:
                names = sorted(os.listdir(out))
            except OSError:
                continue
            for entry in names:
                if entry in seen or not entry.startswith(("reset-", "dump-")):
                    continue
                seen.add(entry)
                if entry.startswith("reset-"):
                    with lock:
                        for profile in profiles:
                            profile.clear()  # type: ignore[attr-defined]
                else:
                    try:
                        dump(entry.removeprefix("dump-"))
                    except Exception as exc:  # a profile is a diagnostic: say so, keep going
                        print(f"cprofile dump failed: {exc!r}", file=sys.stderr)

    # The control thread starts before the hook: it is not profiled itself.
    threading.Thread(target=watch, name="cprofile-control", daemon=True).start()

    def start(frame: object, event: str, arg: object) -> None:
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        profile.enable()  # replaces this hook on this thread

    threading.setprofile(start)
    main = cProfile.Profile(time.thread_time)
    profiles.append(main)
    main.enable()


if _FOLDER and _role():
    _install(_FOLDER, _role())
