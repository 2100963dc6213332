"""The stack behind a real PgBouncer in transaction pooling, as ``docker/compose.yaml`` runs it.

A pgbouncer process of the test's own (``pool_mode = transaction``, a pool of
``POOL_SIZE`` server connections) sits between Daphne/the Celery worker and PostgreSQL;
``migrate`` goes to PostgreSQL directly, like compose's migrate service. A streamed answer
goes through it, and a flood of concurrent posts is answered 202 or JSON 503 with every
accepted post stored once and answered, while PgBouncer's admin console and
``pg_stat_activity`` show the server connections stayed within the pool although the
clients exceeded it.

Debian bookworm ships PgBouncer 1.18, which cannot carry protocol-level prepared
statements across server connections (``max_prepared_statements`` came in 1.21): the
stack runs with ``DB_SERVER_PREPARE=false``, the setting for such poolers.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.integration.flood import Flood, Post, send_all
from tests.integration.stack import PG_ADMIN_URL, Stack, free_port, wait_until
from tests.integration.test_live_sessions import Watch, kind, messages, new_thread, post

pytestmark = pytest.mark.integration

PGBOUNCER = os.environ.get("PGBOUNCER_PATH", "/usr/sbin/pgbouncer")
POOL_SIZE, POSTS = 5, 100
DIRECT = "test-pgbouncer-direct"
GREETING = "Hello Alice! How can I help you today?"


class PgBouncer:
    """``pgbouncer`` in the foreground on a free port, in front of the test's PostgreSQL."""

    def __init__(self) -> None:
        self.port = free_port()
        # pgbouncer refuses to run as root: it switches to ``postgres`` (``-u``), which must
        # read its files; pytest's tmp_path is private to root, so a directory of its own.
        self.dir = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
        self.log = self.dir / "pgbouncer.log"
        self.user = urlsplit(PG_ADMIN_URL).username or "root"
        self.popen: subprocess.Popen[bytes] | None = None

    def url(self, database: str) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{database}"

    def start(self) -> PgBouncer:
        server = urlsplit(PG_ADMIN_URL)
        (self.dir / "userlist.txt").write_text(f'"{self.user}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={server.hostname} port={server.port or 5432}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'userlist.txt'}\n"
            f"admin_users = {self.user}\n"
            f"pool_mode = transaction\ndefault_pool_size = {POOL_SIZE}\n"
            "min_pool_size = 0\nreserve_pool_size = 0\nmax_client_conn = 500\n"
            # Clients wait for a server connection rather than fail while the flood lasts.
            "query_wait_timeout = 120\n"
        )
        shutil.chown(self.dir, "postgres")
        for path in self.dir.iterdir():
            shutil.chown(path, "postgres")
        handle = self.log.open("ab")
        self.popen = subprocess.Popen(
            [PGBOUNCER, "-u", "postgres", str(self.dir / "pgbouncer.ini")],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(lambda: self.show("VERSION"), f"pgbouncer on port {self.port} to answer")
        return self

    def show(self, what: str) -> list[dict[str, str]]:
        """``SHOW <what>`` on the admin console, as rows of column -> value."""
        done = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "-d", "pgbouncer"]
            + ["-A", "-F", "\t", "-c", f"SHOW {what}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        lines = [line for line in done.stdout.splitlines() if line and not line.startswith("(")]
        header, *rows = (line.split("\t") for line in lines)
        return [dict(zip(header, row, strict=True)) for row in rows]

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(15)
        shutil.rmtree(self.dir, ignore_errors=True)


def direct_sql(stack: Stack, query: str, *args: Any) -> list[tuple[Any, ...]]:
    """``query`` on PostgreSQL directly, marked so that the backend counts leave it out."""
    url = stack.dsn
    with psycopg.connect(url, application_name=DIRECT) as conn:
        return list(conn.execute(query, args).fetchall())


class Connections:
    """Samples, while running, PgBouncer's pool for ``database`` and its server backends."""

    SERVER = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")

    def __init__(self, bouncer: PgBouncer, stack: Stack) -> None:
        self.bouncer, self.stack = bouncer, stack
        self.max_clients = self.max_servers = self.max_backends = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.is_set():
            for pool in self.bouncer.show("POOLS"):
                if pool["database"] != self.stack.db_name:
                    continue
                servers = sum(int(pool[c]) for c in self.SERVER)
                self.max_servers = max(self.max_servers, servers)
                clients = int(pool["cl_active"]) + int(pool["cl_waiting"])
                self.max_clients = max(self.max_clients, clients)
            # PostgreSQL's side: every backend of the stack's database but the test's own.
            (count,) = direct_sql(
                self.stack,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name IS DISTINCT FROM %s",
                DIRECT,
            )[0]
            self.max_backends = max(self.max_backends, int(count))
            self.done.wait(0.05)

    def __enter__(self) -> Connections:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done.set()
        self.thread.join(30)


@pytest.fixture
def bouncer() -> Iterator[PgBouncer]:
    server = PgBouncer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pooled(tmp_path: Path, bouncer: PgBouncer) -> Iterator[Stack]:
    db_name = f"studio_it_{uuid.uuid4().hex[:10]}"
    stack = Stack(
        tmp_path,
        db_name=db_name,
        pooler_url=bouncer.url(db_name),
        extra_env={
            "DB_TRANSACTION_POOLING": "true",
            # PgBouncer 1.18 (Debian bookworm) has no max_prepared_statements.
            "DB_SERVER_PREPARE": "false",
            # The flood measures the pool, not the per-user request rates.
            "STUDIO_RATE_MESSAGE_POST": "off",
            "STUDIO_RATE_THREAD_CREATE": "off",
            # ... and every post's database work at once: the view gate would queue them on
            # the loop, two at a time, so PgBouncer would never see more clients than servers.
            "STUDIO_WEB_VIEW_CONCURRENCY": "0",
        },
    ).start()
    try:
        yield stack
    finally:
        stack.stop()


def test_the_stack_streams_answers_and_takes_a_flood_through_pgbouncer_in_transaction_pooling(
    pooled: Stack, bouncer: PgBouncer
) -> None:
    stack = pooled
    stack.worker("w1")

    thread = new_thread(stack, "greeter")
    with Watch(stack, f"/api/threads/{thread}/stream") as stream:
        post(stack, thread, "hello")
        stream.until(lambda f: f["type"] == "stopped", "the session's stopped frame", 60)
    assert ("message_data", "assistant", "completed") in [kind(f) for f in stream.frames]
    assert messages(stack, thread) == [
        ("user", "completed", "hello"),
        ("assistant", "completed", GREETING),
    ]

    # One post per thread, all at once: each thread's answer is the greeter's first line.
    threads = [new_thread(stack, "greeter") for _ in range(POSTS)]
    marker = f"flood-{uuid.uuid4().hex[:8]}-"
    flood = Flood(posts=[Post(t, f"{marker}{i}", str(uuid.uuid4())) for i, t in enumerate(threads)])
    with Connections(bouncer, stack) as seen:
        asyncio.run(send_all(stack, "alice", flood.posts))
        accepted = [p for p in flood.posts if p.status == 202]

        def answered() -> bool:
            rows = direct_sql(
                stack,
                "SELECT t.id::text, count(*) FILTER (WHERE m.role = 'assistant' "
                "AND m.status = 'completed' AND m.content = %s) FROM agents_app_thread t "
                "JOIN agents_app_message m ON m.thread_id = t.id "
                "WHERE t.id::text = ANY(%s) GROUP BY t.id",
                GREETING,
                [p.thread_id for p in accepted],
            )
            return len(rows) == len(accepted) and all(n == 1 for _, n in rows)

        wait_until(answered, "the worker to answer every accepted post", timeout=300)
    flood.stored = Counter(
        content
        for (content,) in stack.sql(
            "SELECT content FROM agents_app_queuedmessage WHERE content LIKE %s "
            "UNION ALL SELECT content FROM agents_app_message WHERE content LIKE %s",
            f"{marker}%",
            f"{marker}%",
        )
    )
    figures = {
        **flood.figures(),
        "pool size": POOL_SIZE,
        "server connections max (SHOW POOLS)": seen.max_servers,
        "backends max (pg_stat_activity)": seen.max_backends,
        "clients max (cl_active + cl_waiting)": seen.max_clients,
    }
    print("pgbouncer flood figures:", figures)
    assert set(flood.statuses()) <= {"202", "503"}, figures
    assert all(p.status == 202 or p.json_503 for p in flood.posts), figures
    assert accepted, figures
    assert figures["accepted stored once"] == len(accepted), figures
    assert figures["refused but stored"] == 0, figures
    assert figures["stored more than once"] == 0, figures
    assert 0 < seen.max_servers <= POOL_SIZE, figures
    assert 0 < seen.max_backends <= POOL_SIZE, figures
    assert seen.max_clients > POOL_SIZE, figures
