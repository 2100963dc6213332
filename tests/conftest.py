"""Shared fixtures. Named personas make authorization tests read like sentences:
alice owns, bob collaborates, charlie is an outsider; ops is staff (the operator)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

# The suite serves recorded vendor transcripts and MCP servers on loopback: the egress
# policy lets them through (in this process and in the processes the stacks start).
LOOPBACK_EGRESS = "127.0.0.0/8,::1,localhost"
os.environ.setdefault("STUDIO_EGRESS_ALLOW", LOOPBACK_EGRESS)

_DB_FIXTURES = ("db", "transactional_db", "live_server", "django_db_reset_sequences")


def pytest_configure(config: pytest.Config) -> None:
    """The static files' collected directory exists before any test module is imported, as
    ``scripts/run.sh`` and the image make it with ``collectstatic``: on a clean clone
    WhiteNoise warned "No directory at" wherever a module built the ASGI application (the
    tests serve static files from the finders; pyproject turns that warning into an error)."""
    from pathlib import Path

    from django.conf import settings

    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (scripts/test.sh): a test file per unit of work, ``xdist_group``
    marks honoured, slow folders handed out first (``tests/parallel.py``)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from tests.parallel import FileScheduling

    return FileScheduling(config, log)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The integration and browser folders are not even imported when ``-m`` leaves out
    every test they hold (the fast loop, ``-m "not integration"``): each of their tests is
    marked ``integration`` and ``browser`` tests both (their conftests), and importing them
    (the SCIM client, Playwright, the stacks' helpers) took 7 of the 29 s of CPU each worker
    spent collecting, for tests deselected right after (``tests/test_collection.py``)."""
    if collection_path.name not in _PROCESS_FOLDERS or collection_path.parent != _TESTS:
        return None
    return _leaves_out(config.option.markexpr, marks=_PROCESS_FOLDERS[collection_path.name])


# Each folder whose every test its conftest marks, with the marks it gives them.
_PROCESS_FOLDERS = {"integration": {"integration"}, "browser": {"integration", "browser"}}
_TESTS = Path(__file__).resolve().parent


def _leaves_out(markexpr: str, *, marks: set[str]) -> bool | None:
    """True when the ``-m`` expression is false for a test with ``marks``, whatever other
    marks it has (every combination of the other names the expression mentions); None
    (collect as usual) otherwise."""
    from itertools import product

    from _pytest.mark.expression import Expression

    if not markexpr:
        return None
    try:
        expression = Expression.compile(markexpr)
    except SyntaxError:
        return None  # pytest reports it with its own message
    others = sorted(expression.idents() - marks)
    if len(others) > 8:
        return None
    for values in product((False, True), repeat=len(others)):
        present = marks | {name for name, on in zip(others, values, strict=True) if on}
        if expression.evaluate(_MarksPresent(present, others)):
            return None
    return True


class _MarksPresent:
    """A ``-m`` matcher for a test with the marks ``present``; a mark called with arguments
    (``-m 'foo(x=1)'``) counts as present when it is one of the free ``others``."""

    def __init__(self, present: set[str], others: list[str]) -> None:
        self.present, self.others = present, others

    def __call__(self, name: str, /, **kwargs: object) -> bool:
        return name in self.present and (not kwargs or name in self.others)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A sweep (``@pytest.mark.sweep``: every API operation, every field of every studio form,
    100k rows) counts as ``integration``: the full suite runs it, the fast loop leaves it out
    (docs/testing.md)."""
    if item.get_closest_marker("sweep") and not item.get_closest_marker("integration"):
        item.add_marker(pytest.mark.integration)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test has a node id of its own. pytest-xdist hands work out by node id, so tests
    that share one run once between them: schemathesis 4 gives each API operation's test the
    function's id (the operation is only in the item's name), and on two cores 127 of its 128
    operations were never run. Such a test takes the id its name says."""
    seen = Counter(item.nodeid for item in items)
    for item in items:
        if seen[item.nodeid] > 1 and item.parent is not None:
            # pytest 9 keeps a node's id in ``_id`` (schemathesis still sets the old
            # ``_nodeid``); tests/test_parallel.py fails if either changes under us.
            item._id = item.parent.id.child(item.name)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.postgresql("why")``: a test of something only PostgreSQL has (row locks
    between connections, ``SKIP LOCKED``, its index kinds, its error codes) is skipped with
    that reason when the suite runs on SQLite (``DATABASE_URL=sqlite:///…``), not failed."""
    marker = item.get_closest_marker("postgresql")
    if marker is None:
        return
    from django.conf import settings

    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        reason = marker.args[0] if marker.args else "needs PostgreSQL"
        pytest.skip(f"PostgreSQL only: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """After every test that touched the database, the kept message counts still equal
    fresh counts (``agents_app.db.message_counts``): whatever the test wrote, through
    whichever path, the triggers must have followed."""
    result = yield
    names = getattr(item, "fixturenames", ())
    if item.get_closest_marker("django_db") or any(name in names for name in _DB_FIXTURES):
        wrong = _message_count_differences()
        assert not wrong, f"kept message counts differ from fresh ones: {wrong}"
    return result


def _message_count_differences() -> list[Any]:
    from django.db import InterfaceError, InternalError, OperationalError
    from django.db.transaction import TransactionManagementError

    from agents_app.db import message_counts

    try:
        return message_counts.differences()
    except (InterfaceError, InternalError, OperationalError, TransactionManagementError):
        return []  # the test broke its own connection or transaction on purpose


@pytest.fixture(autouse=True, scope="session")
def quick_password_hashing() -> Any:
    """Django's own advice for test suites: a fast password hasher. The production hasher
    (PBKDF2, 1,000,000 iterations) takes 1.1 s a password on this machine, and most tests
    make a persona; no test here is about the stored hash's strength. The processes the
    stacks of ``tests/integration`` and ``tests/browser`` start do the same
    (``tests/stack_settings.py``)."""
    from django.test import override_settings

    from tests.stack_settings import FAST_HASHER

    with override_settings(PASSWORD_HASHERS=[FAST_HASHER]):
        yield


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings: None, request: pytest.FixtureRequest
) -> Any:
    """pytest-django's (the ``_gw<N>`` suffix), then the test database as a copy of the
    migrated template (``tests/db_template.py``: instead of 14 s of migrations per process);
    dropped after pytest-django's teardown, which keeps it (``django_db_keepdb``). Yields
    the copy's name, or None where pytest-django creates the database itself."""
    from django.db import connection

    from tests.db_template import clone_test_database, drop_test_database

    options = request.config.option
    reuse = getattr(options, "reuse_db", False) or getattr(options, "create_db", False)
    cloned = None if reuse else clone_test_database(connection)
    yield cloned
    if cloned is not None:
        drop_test_database(cloned)


@pytest.fixture(scope="session")
def django_db_keepdb(django_db_keepdb: bool, django_db_modify_db_settings: str | None) -> bool:
    """A test database copied from the template is there already: pytest-django keeps it."""
    return django_db_keepdb or django_db_modify_db_settings is not None


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """pytest-django's, then, before it drops the test database, the end of every other
    session on it: threads of ``sync_to_async`` executors keep their connections to the end,
    so PostgreSQL refused the drop ("is being accessed by other users") and every run
    printed that warning and left the database for the next run to recreate."""
    yield
    from django.db import connection

    from agents_app.orchestration.executor import inprocess

    # The in-process executor's sweep would otherwise wake after the drop and log its
    # failure to a stream pytest has closed ("--- Logging error ---" after the summary).
    inprocess.close()
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(autouse=True, scope="session")
def flush_by_delete() -> Any:
    """Transactional tests end with a flush of ``DELETE``s, not Django's ``TRUNCATE``: over a
    second saved per test on PostgreSQL (``tests/fast_flush.py`` has the figures); and a
    clean connection is kept for the next test, not closed (``tests/kept_connections.py``)."""
    from tests.fast_flush import deletes_instead_of_truncate
    from tests.kept_connections import kept_between_tests

    with deletes_instead_of_truncate(), kept_between_tests():
        yield


@pytest.fixture(autouse=True)
def loopback_egress() -> Any:
    """Each test starts with the suite's egress policy (loopback allowed); a test that
    narrows it gets it back afterwards."""
    from runtime.core import egress

    egress.configure(LOOPBACK_EGRESS.split(","))
    yield


@pytest.fixture(autouse=True)
def fresh_limit_counters() -> Any:
    """Request and sign-in counters start at zero in every test (the in-memory cache only;
    a shared Redis is never flushed)."""
    from django.conf import settings
    from django.core.cache import cache

    if settings.CACHES["default"]["BACKEND"].endswith("LocMemCache"):
        cache.clear()
    yield


@pytest.fixture(autouse=True)
def no_lingering_effect_sweeper() -> Any:
    """A test that drives the ASGI app in this process starts the embedded effect sweeper
    (``executor.LoopCapture``); stopped afterwards, so it never runs other tests' due
    effects behind their backs."""
    yield
    from agents_app.orchestration import effect_runner, embedded_automation

    effect_runner.stop_embedded_sweeper()
    embedded_automation.stop()


@pytest.fixture(autouse=True)
def no_lingering_webhook_delivery() -> Any:
    """A webhook delivery in embedded mode runs on a thread of its own after the commit; the
    test that started it waits for it, so it never touches the database during a later test
    (where pytest-django refuses it, and the delivery is lost)."""
    yield
    import threading

    for thread in threading.enumerate():
        if thread.name == "webhook-delivery":
            thread.join(timeout=30)


@pytest.fixture(autouse=True)
def fresh_pin_cache() -> Any:
    """Each test starts with no cached session pins: ids and timestamps of rolled-back
    rows may repeat between tests, so a stamp from another test could match."""
    from agents_app.services.definitions import versions as definition_versions

    definition_versions.clear_pin_cache()
    yield


@pytest.fixture
def make_user(db: Any) -> Any:
    from django.contrib.auth import get_user_model

    def _make(username: str, *, staff: bool = False, password: str = "pw-for-tests-1") -> Any:
        User = get_user_model()
        return User.objects.create_user(
            username=username, password=password, is_staff=staff, is_superuser=staff
        )

    return _make


@pytest.fixture
def alice(make_user: Any) -> Any:
    return make_user("alice")


@pytest.fixture
def bob(make_user: Any) -> Any:
    return make_user("bob")


@pytest.fixture
def charlie(make_user: Any) -> Any:
    return make_user("charlie")


@pytest.fixture
def ops(make_user: Any) -> Any:
    return make_user("ops", staff=True)


@pytest.fixture
async def close_thread_connections() -> Any:
    """Settle the DB connection that ``sync_to_async`` opened in its worker thread.

    Async tests reach the ORM from asgiref's executor thread. Its connection is kept for the
    next test when clean and closed otherwise (``tests/kept_connections.py``); the session's
    end closes what is left before the test database is dropped (``django_db_setup``).
    """
    yield
    from asgiref.sync import sync_to_async

    from agents_app.bridge import async_commit
    from tests.kept_connections import settle_all

    await sync_to_async(settle_all)()
    await async_commit.close()  # the engine's commits on this test's event loop
