"""What one step of the engine costs on the Django store, in work done (issue #39): the SQL
statements a step runs and the bytes of their parameters, on PostgreSQL (one statement
per commit, on the loop's own connection) and on SQLite (the ORM's upserts), plus the
store calls and commit sizes of tests/runtime/test_step_cost.py run over this store.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from django.db import connection
from django.db.backends.utils import CursorWrapper

from agents_app.bridge import async_commit, fast_commit
from agents_app.orchestration.executor import inprocess
from tests.runtime.conftest import World
from tests.runtime.test_step_cost import (  # noqa: F401  (the same tests, over this store)
    STEPS,
    Meter,
    no_background_opening,
    run_loop,
    test_a_middle_step_makes_two_commits_and_no_other_store_call,
    test_step_200_makes_the_same_store_calls_as_step_20,
    test_the_bytes_a_step_writes_do_not_grow_with_the_session_except_the_request_log,
    tool_loop,
)


class Statements:
    """Every SQL statement any path runs (the ORM's cursors, the commit's one statement on
    Django's connection or on the loop's own), by first word, and its parameters' bytes,
    into the meter's current step."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.by_step: dict[int, Counter[str]] = {}
        self.bytes_by_step: Counter[int] = Counter()
        self.sql: list[str] = []

    def record(self, sql: Any, params: Any) -> None:
        step = len(self.meter.steps) - 1
        text = sql.decode() if isinstance(sql, bytes) else str(sql)
        self.sql.append(text)
        self.by_step.setdefault(step, Counter())[text.split(None, 1)[0].upper()] += 1
        self.bytes_by_step[step] += _size(params)


def _size(params: Any) -> int:
    if params is None:
        return 0
    if isinstance(params, bytes):
        return len(params)
    if isinstance(params, str):
        return len(params.encode("utf-8", "surrogatepass"))
    if isinstance(params, dict):
        return sum(_size(v) for v in params.values())
    if isinstance(params, list | tuple):
        return sum(_size(v) for v in params)
    wrapped = getattr(params, "obj", None)  # psycopg's Json/Jsonb
    if wrapped is not None:
        return len(orjson.dumps(wrapped, option=orjson.OPT_NON_STR_KEYS))
    return len(str(params))


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    # Statements are recorded from every thread of this process: an in-process executor an
    # earlier test of this worker started would sweep now and then, and a sweep during a
    # measured step counted as that step's (three SELECTs at step 199 on a loaded machine).
    inprocess.close()
    made: list[Statements] = []

    def watch(meter: Meter) -> Statements:
        made.append(Statements(meter))
        return made[-1]

    def current() -> Statements | None:
        return made[-1] if made else None

    real_execute = getattr(CursorWrapper, "_execute")  # noqa: B009  (private: not in the stubs)
    real_many = getattr(CursorWrapper, "_executemany")  # noqa: B009

    def execute(self: CursorWrapper, sql: str, params: Any, *rest: Any) -> Any:
        if (s := current()) is not None:
            s.record(sql, params)
        return real_execute(self, sql, params, *rest)

    def executemany(self: CursorWrapper, sql: str, param_list: Any, *rest: Any) -> Any:
        if (s := current()) is not None:
            s.record(sql, list(param_list))
        return real_many(self, sql, param_list, *rest)

    real_loop_run, real_run = async_commit.run, fast_commit._run

    async def loop_run(query: str, params: list[Any]) -> Any:
        if (s := current()) is not None:
            s.record(query, params)
        return await real_loop_run(query, params)

    def run(query: str, params: list[Any]) -> Any:
        if (s := current()) is not None:
            s.record(query, params)
        return real_run(query, params)

    monkeypatch.setattr(CursorWrapper, "_execute", execute)
    monkeypatch.setattr(CursorWrapper, "_executemany", executemany)
    monkeypatch.setattr(async_commit, "run", loop_run)
    monkeypatch.setattr(fast_commit, "_run", run)
    yield watch


# A middle step (the model's tool call and its result): two commits.
MIDDLE_STEP_STATEMENTS = {
    # Each commit is one statement (upserts, progress, thread, stop flag in CTEs).
    "postgresql": {"WITH": 2},
    # The ORM, per commit in its transaction: the upserts (logs, messages, progress), the
    # thread's stop flag.
    "sqlite": {"BEGIN": 2, "INSERT": 6, "SELECT": 3},
}


# The request body as the statement carries it, against orjson's compact JSON: the ORM's
# JSONField writes the standard library's ", " and ": ".
JSON_SPACING = {"postgresql": 1.05, "sqlite": 1.15}

# Parameter bytes of step 199 besides its request log's body in compact JSON (measured:
# 4557 on PostgreSQL; 6957 on SQLite, where the body's spacing counts here too), with room
# for ids and timestamps of other lengths.
MIDDLE_STEP_OTHER_BYTES = {"postgresql": 5500, "sqlite": 8000}


def _assert_middle_steps(seen: Statements) -> None:
    expected = MIDDLE_STEP_STATEMENTS[connection.vendor]
    for step in range(1, STEPS - 1):
        assert dict(seen.by_step[step]) == expected, f"step {step + 1}: {seen.by_step[step]}"


async def test_a_middle_step_runs_a_fixed_set_of_statements(world: World, statements: Any) -> None:
    meter = tool_loop(world)
    seen = statements(meter)
    await run_loop(world, meter, STEPS)
    _assert_middle_steps(seen)


async def test_step_200_runs_the_statements_of_step_20_and_writes_only_its_longer_request(
    world: World, statements: Any
) -> None:
    meter = tool_loop(world, 200)
    seen = statements(meter)
    await run_loop(world, meter, 200)
    assert seen.by_step[19] == seen.by_step[198]
    # What grows is the request log (the whole history, by design); the rest of the
    # parameters are the same size, so the difference is the request bodies' difference.
    request_growth = (
        meter.steps[198].written["logs.request_body"] - meter.steps[19].written["logs.request_body"]
    )
    growth = seen.bytes_by_step[198] - seen.bytes_by_step[19]
    assert 0 < growth <= request_growth * JSON_SPACING[connection.vendor] + 64, (
        growth,
        request_growth,
    )
    # The rest: two messages (pending, then complete), the log's other fields, the progress
    # and the thread's row, a few KB whatever the session's length.
    rest = seen.bytes_by_step[198] - meter.steps[198].written["logs.request_body"]
    assert 0 < rest <= MIDDLE_STEP_OTHER_BYTES[connection.vendor], rest


@pytest.fixture
def sweeping(settings: Any) -> Iterator[None]:
    """An in-process executor sweeping every 20 ms, as an earlier test of this worker may
    have left one (its sweep reads the sessions table from a thread of its own)."""
    settings.STUDIO_SESSION_SWEEP_SECONDS = 0.02

    async def nothing() -> None:
        return None

    inprocess.submit(nothing()).result(timeout=10)
    yield
    inprocess.close()


async def test_a_sweep_left_running_by_an_earlier_test_is_not_counted_as_a_step_s(
    sweeping: None, world: World, statements: Any
) -> None:
    meter = tool_loop(world)
    seen = statements(meter)
    await run_loop(world, meter, STEPS)
    _assert_middle_steps(seen)
