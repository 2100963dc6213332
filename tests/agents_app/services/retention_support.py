"""Data and probes for the retention tests: threads of known ages, and a statement recorder.

Rows are made with ``bulk_create`` (Django fills every default, so the builder keeps
working when columns are added), ages set explicitly: ``days_ago`` everywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.db import connection
from django.utils import timezone

from agents_app.models import (
    Agent,
    LanguageModel,
    Log,
    Message,
    Prompt,
    ScheduledEffect,
    Thread,
    ThreadValue,
)

NOW = timezone.now()


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def us_ago(days: float) -> int:
    return int(ago(days).timestamp() * 1_000_000)


def make_agent() -> Agent:
    model = LanguageModel.objects.create(name="m", provider="test", model="x")
    prompt = Prompt.objects.create(name="p", model=model)
    return Agent.objects.create(name="support", side_a_prompt=prompt)


def make_threads(
    agent: Agent, n: int, *, idle_days: float, parent: Thread | None = None
) -> list[Thread]:
    rows = [
        Thread(
            agent=agent,
            origin_agent=agent,
            parent=parent,
            created_at=ago(idle_days + 1),
            last_activity_at=ago(idle_days),
        )
        for _ in range(n)
    ]
    Thread.objects.bulk_create(rows, batch_size=2000)
    # auto_now_add overrides the given times on insert: set them afterwards.
    Thread.objects.filter(pk__in=[t.pk for t in rows]).update(
        created_at=ago(idle_days + 1), last_activity_at=ago(idle_days)
    )
    return rows


def fill(threads: list[Thread], *, messages: int, logs: dict[float, int], values: int) -> None:
    """Per thread: ``messages`` messages, ``logs`` {days ago: count}, ``values`` KV values."""
    msgs: list[Message] = []
    log_rows: list[Log] = []
    vals: list[ThreadValue] = []
    for t in threads:
        base = us_ago(200)
        msgs += [
            Message(thread=t, role="user", content=f"m{i}", created_at=base + i)
            for i in range(messages)
        ]
        for days, count in logs.items():
            start = us_ago(days)
            log_rows += [
                Log(
                    thread=t,
                    created_at=start + i,
                    request_body={"messages": [{"role": "user", "content": "x" * 40}]},
                    response_body={"content": "y" * 40},
                    system_prompt="be brief",
                    input_tokens=10,
                    output_tokens=5,
                    total_tokens=15,
                    cost_total="0.001",
                    latency_ms=120,
                )
                for i in range(count)
            ]
        vals += [ThreadValue(thread=t, key=f"k{i}", value={"i": i}) for i in range(values)]
    Message.objects.bulk_create(msgs, batch_size=5000)
    Log.objects.bulk_create(log_rows, batch_size=5000)
    ThreadValue.objects.bulk_create(vals, batch_size=5000)


def make_effects(threads: list[Thread], *, each: int, status: str, done_days: float) -> None:
    rows = [
        ScheduledEffect(
            thread=t,
            name="note",
            due_at=ago(done_days + 1),
            status=status,
            completed_at=ago(done_days) if status != "pending" else None,
        )
        for t in threads
        for _ in range(each)
    ]
    ScheduledEffect.objects.bulk_create(rows, batch_size=5000)


@dataclass
class Statements:
    """Every DELETE/UPDATE this connection ran, with the rows it touched."""

    writes: list[tuple[str, int]] = field(default_factory=list)
    on_first: Callable[[str], None] | None = None
    _seen: set[str] = field(default_factory=set)

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        verb = sql.lstrip().split(" ", 1)[0].upper()
        if verb in ("DELETE", "UPDATE"):
            table = sql.split('"')[1] if '"' in sql else "?"
            key = f"{verb} {table}"
            self.writes.append((key, context["cursor"].rowcount))
            if self.on_first is not None and key not in self._seen:
                self._seen.add(key)
                self.on_first(key)
        return result

    @property
    def largest(self) -> int:
        return max((n for _, n in self.writes), default=0)


@contextmanager
def recording(statements: Statements) -> Iterator[Statements]:
    with connection.execute_wrapper(statements):
        yield statements


class Background:
    """Work running on its own thread and database connection."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self._error: str | None = "did not finish"
        self._thread = threading.Thread(target=self._run, args=(work,))
        self._thread.start()

    def _run(self, work: Callable[[], Any]) -> None:
        try:
            work()
            self._error = None
        except Exception as exc:  # reported to the test, which fails on it
            self._error = repr(exc)
        finally:
            connection.close()

    def result(self, timeout: float = 60) -> str | None:
        """None when it completed, else what went wrong (or that it is still running)."""
        self._thread.join(timeout)
        return self._error


def in_background(work: Callable[[], Any]) -> Background:
    return Background(work)


def in_other_connection(work: Callable[[], None], *, timeout: float = 60) -> str | None:
    """Run ``work`` on its own connection and wait for it: None when it completed.

    A writer blocked by a lock the caller holds would still be waiting when the
    (generous) timeout ends.
    """
    return in_background(work).result(timeout)


def backends_waiting_for_a_lock() -> int:
    db = connection.settings_dict
    params = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"], "port": db["PORT"]}
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            [db["NAME"]],
        ).fetchone()
    return int(row[0]) if row else 0
