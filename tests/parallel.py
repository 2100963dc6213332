"""The suite on several cores (pytest-xdist, ``-n 2 --dist loadgroup``): what each worker
process may call its own, and the order work is handed out in.

Each xdist worker is a process of its own: pytest-django gives it its own test database
(``test_<name>_gw0``, ``_gw1``…) and pytest its own ``tmp_path`` root. What the workers would
otherwise share is derived here from ``PYTEST_XDIST_WORKER`` (``gw0``…), so fixtures and
helpers never hard-code it: a stack's Redis database number (``redis_database``). TCP ports
come from the kernel (``bind(("127.0.0.1", 0))``), database, role, queue, channel-layer and
cache-key names carry a random part, and nothing else is fixed per run.

Scheduling (``FileScheduling``, chosen by ``--dist loadgroup``): a test file is the unit of
work, as with ``--dist loadfile``, so a file's module-scoped stack is built once; files
marked ``xdist_group("name")`` travel together to one worker. The slow units (the
integration and browser folders, where each file starts processes) are handed out first and
the unit files fill in behind them: the last unit to finish is then a short one instead of a
five-minute integration module started when the other worker had nothing left.
"""

from __future__ import annotations

import os
import random
from typing import Any

from xdist.scheduler import LoadScopeScheduling

# Folders whose files start real processes (Daphne, Celery, chromium): each file takes tens
# of seconds to minutes, the unit files a few seconds.
SLOW_FOLDERS = ("tests/browser/", "tests/integration/")
# Unit files that each take a minute or more on one worker (a single test posting hundreds of
# forms, every admin page twice, a hundred generated API requests): handed out right after the
# slow folders, so none of them is the last unit left while the other worker has finished.
HEAVY_FILES = (
    "tests/agents_app/admin/test_admin_input_robustness.py",
    "tests/agents_app/admin/test_admin_secrets.py",
    "tests/agents_app/api/test_api_schemathesis.py",
    # starts a PostgreSQL with pgvector and migrates a database on it (30 to 90 s)
    "tests/agents_app/services/knowledge/test_search_pgvector.py",
)
# Redis's default ``databases 16``; 0 is TEST_REDIS_URL's (unit tests, with key prefixes).
REDIS_DATABASES = range(1, 16)


def worker_index() -> int:
    """This process's xdist worker number (``gw1`` -> 1); 0 when the suite runs alone."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name.removeprefix("gw") or 0)


def worker_count() -> int:
    """How many xdist workers run the suite (1 when it runs alone)."""
    return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def redis_database() -> int:
    """A Redis database number for a stack of this worker: drawn from this worker's share
    of 1..15, so two workers' stacks never meet in one database (Celery's queue and binding
    keys have no prefix). Random within the share: stacks of one worker, and runs of
    other checkouts on the same Redis, rarely pick the same one."""
    count = min(worker_count(), len(REDIS_DATABASES))
    share = [n for n in REDIS_DATABASES if n % count == worker_index() % count]
    return random.choice(share)


def is_slow(nodeid: str) -> bool:
    return nodeid.startswith(SLOW_FOLDERS)


def _rank(nodeids: dict[str, bool]) -> int:
    """0 for a unit of the slow folders, 1 for a heavy unit file, 2 for the others."""
    if any(is_slow(nodeid) for nodeid in nodeids):
        return 0
    return 1 if any(nodeid.startswith(HEAVY_FILES) for nodeid in nodeids) else 2


class FileScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """``--dist loadfile`` that honours ``xdist_group`` marks and hands out slow files first."""

    def _split_scope(self, nodeid: str) -> str:
        # loadgroup's nodeids end in "@<group>" (after any parametrize id's "]").
        if nodeid.rfind("@") > nodeid.rfind("]"):
            return "@" + nodeid.rsplit("@", 1)[-1]
        return nodeid.split("::", 1)[0]

    def _assign_work_unit(self, node: Any) -> None:
        if not getattr(self, "_slow_moved_first", False):
            self._slow_moved_first = True
            self._slow_first()
        super()._assign_work_unit(node)

    def _slow_first(self) -> None:
        """Before the first unit is handed out: slow units to the front in collection order
        (a package's files stay together, so its package-scoped fixtures start once), the
        heavy unit files next, then the others in the base class's order (most tests first,
        with its default ``--loadscope-reorder``)."""
        order = {
            scope: n
            for n, scope in enumerate(dict.fromkeys(map(self._split_scope, self.collection)))
        }
        units = list(self.workqueue.items())
        first = sorted(
            (u for u in units if _rank(u[1]) < 2), key=lambda u: (_rank(u[1]), order[u[0]])
        )
        self.workqueue.clear()
        self.workqueue.update(first + [u for u in units if _rank(u[1]) == 2])

    def remove_node(self, node: Any) -> str | None:
        """A worker that died (pytest-timeout's ``thread`` method ends the process on a hang):
        its test is reported once as the crash, and the rest of its units go back to the
        queue. The base class puts the dead test back too, so a hanging test ran again on the
        replacement worker, hung again, and so on until xdist ran out of restarts."""
        workload = self.assigned_work.pop(node)
        pending = [
            nodeid for unit in workload.values() for nodeid, done in unit.items() if not done
        ]
        if not pending:
            return None
        crashed = pending[0]
        for scope, unit in workload.items():
            unit.pop(crashed, None)
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed
