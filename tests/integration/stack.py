"""A real stack for integration tests: PostgreSQL database, Redis, Daphne, Celery workers.

Each run creates its own database (``studio_it_<random>``), uses its own Redis
database number (from its xdist worker's share, ``tests/parallel.py``), Celery queue and
channel-layer prefix, so runs never share state.
The database is a copy of a template (``CREATE DATABASE ... TEMPLATE``): migrating from
zero and seeding took most of a stack's start-up, so both happen once, in templates named
for a hash of what they hold (``template_database``), and every stack copies the result.
Processes run from the repository with the virtualenv's executables; their output
goes to log files that ``Stack.tails()`` prints when a test fails.
"""

from __future__ import annotations

import base64
import ctypes
import functools
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg

from tests.integration.snippets import Snippets
from tests.parallel import redis_database
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Daphne as production starts it: on the configured event loop (studio/serve.py).
DAPHNE = [str(BIN / "python"), "-m", "studio.serve"]
PG_ADMIN_URL = os.environ.get("TEST_PG_ADMIN_URL", "postgresql://root@127.0.0.1:5432/postgres")
# Templates: migrated (named for the migrations) and migrated + seeded (named for the
# migrations, the seed and the code it runs). The newest few of each kind are kept, so
# sessions of other checkouts running at the same time keep theirs; older ones are dropped.
MIGRATED_PREFIX = "studio_it_tpl_migrated_"
SEEDED_PREFIX = "studio_it_tpl_seeded_"
KEEP_TEMPLATES = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _digest(paths: list[Path], *extra: str) -> str:
    h = hashlib.sha256("\0".join(extra).encode())
    for path in sorted(paths):
        h.update(f"\0{path.relative_to(ROOT)}\0".encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in (ROOT / folder).rglob("*.py")]


@functools.cache
def migrations_digest() -> str:
    """A hash of every migration file (and Django's version, whose apps migrate too)."""
    import django

    migrations = [p for p in _python_files("agents_app", "studio") if p.parent.name == "migrations"]
    return _digest(migrations, django.get_version())


@functools.cache
def seed_digest() -> str:
    """A hash of the migrations, the seed and the code that stores what it seeds."""
    files = _python_files("agents_app", "runtime", "studio") + [ROOT / "tests/integration/seed.py"]
    return _digest(files, migrations_digest())


def _admin() -> psycopg.Connection[Any]:
    return psycopg.connect(PG_ADMIN_URL, autocommit=True)


def _database_url(name: str) -> str:
    return f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}".replace("postgresql://", "postgres://", 1)


def _comment(name: str) -> str | None:
    with _admin() as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (name,),
        ).fetchone()
    return None if row is None else (row[0] or "")


def ensure_template(name: str, prefix: str, build: Callable[[str], str]) -> str:
    """The template ``name``, built once if missing: ``build(db)`` fills the empty database
    ``db`` and returns a note kept as the template's comment (the seed's keys); the note.

    One builder at a time (an advisory lock: sessions of other checkouts may run at the same
    time); the template appears under its name only when complete (built under another
    name, then renamed), and takes no connections, so ``CREATE DATABASE ... TEMPLATE`` never
    finds anyone on it.
    """
    note = _comment(name)
    if note is not None:
        return note
    with _admin() as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (prefix,))
        try:
            note = _comment(name)
            if note is not None:
                return note
            building = f"{prefix}build_{uuid.uuid4().hex[:8]}"
            try:
                note = build(building)
                # The note first: the template is complete the moment its name appears.
                conn.execute(f'COMMENT ON DATABASE "{building}" IS {_literal(note)}')
                conn.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')
            finally:
                conn.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
            conn.execute(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
            _drop_stale(conn, prefix)
            return note
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (prefix,))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _drop_stale(conn: psycopg.Connection[Any], prefix: str) -> None:
    """Drop all but the ``KEEP_TEMPLATES`` newest complete templates of ``prefix``."""
    rows = conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname NOT LIKE %s"
        " ORDER BY oid DESC",
        (f"{prefix}%", f"{prefix}build%"),
    ).fetchall()
    for (stale,) in rows[KEEP_TEMPLATES:]:
        conn.execute(f'ALTER DATABASE "{stale}" WITH IS_TEMPLATE false')
        conn.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')


def _run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# The templates' migrate skips the system checks (the URL check imports the whole API):
# tests/agents_app/process/test_migrations.py runs a checked migrate on both databases.
MIGRATE = [str(BIN / "python"), "manage.py", "migrate", "--noinput", "-v", "0", "--skip-checks"]


def migrated_template(env: dict[str, str]) -> str:
    """The migrated template's name, built with ``env`` if missing. The stacks' seeded
    template starts from it, and so does each unit-test database (``tests/db_template.py``)."""
    migrated = f"{MIGRATED_PREFIX}{migrations_digest()}"

    def migrate(db: str) -> str:
        with _admin() as conn:
            conn.execute(f'CREATE DATABASE "{db}"')
        migrate_env = {**env, "DATABASE_URL": _database_url(db)}
        _run(MIGRATE, migrate_env)
        return "migrated"

    ensure_template(migrated, MIGRATED_PREFIX, migrate)
    return migrated


def template_database(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The migrated and seeded template (built with ``env`` if missing) and the seed's keys."""
    seeded = f"{SEEDED_PREFIX}{seed_digest()}"

    def seed(db: str) -> str:
        migrated = migrated_template(env)
        with _admin() as conn:
            conn.execute(f'CREATE DATABASE "{db}" TEMPLATE "{migrated}"')
        out = _run(
            [str(BIN / "python"), "-m", "tests.integration.seed"],
            {**env, "DATABASE_URL": _database_url(db)},
        )
        return out.strip().splitlines()[-1]

    note = ensure_template(seeded, SEEDED_PREFIX, seed)
    return seeded, json.loads(note)["keys"]


SQLITE_TEMPLATES = Path(tempfile.gettempdir()) / "studio-it-templates"


def sqlite_database(dest: Path, env: dict[str, str], *, seeded: bool) -> dict[str, str]:
    """Fill the SQLite file ``dest`` with a copy of the migrated (``seeded``: and seeded)
    template, built with ``env`` if missing (embedded and production-mode tests run on
    SQLite); the seed's keys, or ``{}``.

    Built under a name of its own, then renamed: a file of that name is complete. The
    newest few of each kind are kept, as for the PostgreSQL templates."""
    kind = "seeded" if seeded else "migrated"
    template = SQLITE_TEMPLATES / f"{kind}-{seed_digest() if seeded else migrations_digest()}"
    database, keys = template.with_suffix(".sqlite3"), template.with_suffix(".json")
    if not database.exists():
        SQLITE_TEMPLATES.mkdir(exist_ok=True)
        building = template.with_name(f"build-{uuid.uuid4().hex[:8]}.sqlite3")
        build_env = {**env, "DATABASE_URL": f"sqlite:///{building}"}
        try:
            _run(MIGRATE, build_env)
            note: dict[str, Any] = {"keys": {}}
            if seeded:
                out = _run([str(BIN / "python"), "-m", "tests.integration.seed"], build_env)
                note = json.loads(out.strip().splitlines()[-1])
            building.with_suffix(".json").write_text(json.dumps(note))
            os.replace(building.with_suffix(".json"), keys)
            os.replace(building, database)
        finally:
            for leftover in SQLITE_TEMPLATES.glob(f"{building.stem}*"):
                leftover.unlink()
        done = sorted(SQLITE_TEMPLATES.glob(f"{kind}-*.sqlite3"), key=lambda p: -p.stat().st_mtime)
        for stale in done[KEEP_TEMPLATES:]:
            stale.unlink(missing_ok=True)
            stale.with_suffix(".json").unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    source, target = sqlite3.connect(database), sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return dict(json.loads(keys.read_text())["keys"])


# The stack's role owns every table, sequence and function, as if it had migrated itself
# (the template's objects belong to the superuser that built it).
_GIVE_OBJECTS = """
DO $$
DECLARE r record;
BEGIN
  FOR r IN
    SELECT c.oid::regclass AS name,
           CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                          WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
      AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.objid = c.oid AND d.classid = 'pg_class'::regclass
                        AND d.deptype IN ('a', 'i'))
  LOOP
    EXECUTE format('ALTER %s %s OWNER TO %I', r.kind, r.name, '{role}');
  END LOOP;
  FOR r IN
    SELECT p.oid::regprocedure AS name FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
  LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO %I', r.name, '{role}');
  END LOOP;
END $$
"""


def die_with_parent() -> None:
    """In the child, before it runs: the kernel kills it when the test process ends, however
    it ends. pytest-timeout ends a hung worker with ``os._exit`` (no fixture teardown), and the
    stack's Daphne and Celery processes then lived on, each holding database connections,
    until a later run on the machine met "too many clients". The spawning thread must outlive
    the child (``PR_SET_PDEATHSIG`` follows the thread): stacks start in fixtures, on the
    test's main thread."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_PR_SET_PDEATHSIG = 1


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def kill_hard(self) -> None:
        """``kill -9`` the whole process group (the worker and everything it started)."""
        os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)


class RedisServer:
    """A redis-server of the test's own on a free port, which a test may kill and restart.

    No persistence: a restart comes back empty, as after a crash without AOF (the worst
    case for a broker: every queued task is gone, only the database knows the work).
    """

    def __init__(self, tmp: Path, port: int | None = None) -> None:
        self.tmp = tmp
        self.port = port or free_port()
        self.log = tmp / f"redis-{self.port}.log"
        self.popen: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        handle = self.log.open("ab")
        self.popen = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.tmp),
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(self.ping, f"redis-server on port {self.port} to answer")
        return self

    def ping(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")

    def kill_hard(self) -> None:
        """``kill -9`` the server: every client connection breaks at once."""
        assert self.popen is not None
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)


@dataclass
class Stack:
    tmp: Path
    db_name: str = field(default_factory=lambda: f"studio_it_{uuid.uuid4().hex[:10]}")
    port: int = field(default_factory=free_port)
    processes: list[Process] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    # Extra ``manage.py`` commands run after migrate and seed, before Daphne starts
    # (collectstatic must precede the server: WhiteNoise indexes files at start-up).
    setup: list[list[str]] = field(default_factory=list)
    # An existing non-superuser role that owns the database and that the processes log in as
    # (PostgreSQL's connection limits do not apply to superusers; tests/integration/flood.py).
    db_owner: str = ""
    # A Redis of the test's own (``RedisServer.url``) instead of the shared one.
    redis_base: str | None = None
    # Extra environment for every process of the stack (settings under test).
    extra_env: dict[str, str] = field(default_factory=dict)
    # A pooler's URL (PgBouncer) for every process but ``migrate``, which goes to PostgreSQL
    # directly, like compose's migrate service (tests/integration/test_pgbouncer.py).
    pooler_url: str = ""
    # The ASGI server: "daphne" (production's) or "uvicorn" (the bench's alternative).
    server: str = "daphne"
    snippets: Snippets | None = None

    def __post_init__(self) -> None:
        redis_base = self.redis_base or os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
        parts = urlsplit(redis_base)
        self.redis_url = f"{parts.scheme}://{parts.netloc}/{redis_database()}"
        admin = urlsplit(PG_ADMIN_URL)
        netloc = (
            f"{self.db_owner}@{admin.hostname}:{admin.port or 5432}"
            if self.db_owner
            else admin.netloc
        )
        self.database_url = f"postgres://{netloc}/{self.db_name}"
        self.queue = f"it-{uuid.uuid4().hex[:8]}"
        key = base64.urlsafe_b64encode(os.urandom(32)).decode()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            # Production's settings with a fast password hasher (tests/stack_settings.py).
            "DJANGO_SETTINGS_MODULE": "tests.stack_settings",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "CELERY_QUEUE": self.queue,
            "CHANNEL_PREFIX": f"asgi-{self.queue}",
            "CACHE_KEY_PREFIX": f"cache-{self.queue}",
            "STUDIO_VAR_DIR": str(self.tmp / "var"),
            "SECRET_KEY": "integration-" + uuid.uuid4().hex,
            "STUDIO_ENCRYPTION_KEYS": f"it:{key}",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # The recorded vendors, MCP servers and webhook receivers listen on loopback
            # (egress policy).
            "STUDIO_EGRESS_ALLOW": "127.0.0.0/8,::1,localhost",
            "STUDIO_EXECUTOR": "celery",
            "STUDIO_SESSION_HEARTBEAT_SECONDS": "1",
            "STUDIO_SESSION_STALE_SECONDS": "4",
            "STUDIO_SESSION_SWEEP_SECONDS": "1",
            "STUDIO_STOP_POLL_MS": "200",
            "CELERY_WORKER_CONCURRENCY": "8",
            "LOG_LEVEL": "INFO",
            **self.extra_env,
        }
        self.env.pop("TEST_DB_NAME", None)
        # As in production: on in the ASGI server (studio/asgi.py), off in workers, whatever
        # this process (which may have imported studio.asgi) has in its environment.
        self.env.pop("DB_POOL", None)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> Stack:
        self.started_at = time.monotonic()
        self.create_database()
        if self.pooler_url:
            self.env["DATABASE_URL"] = self.pooler_url
        for command in self.setup:
            self.run([str(BIN / "python"), "manage.py", *command])
        if self.server == "uvicorn":
            command = [
                str(BIN / "uvicorn"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--lifespan",
                "off",
                "--no-access-log",
                "studio.asgi:application",
            ]
        else:
            command = [
                *DAPHNE,
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "studio.asgi:application",
            ]
        # Named "daphne" whichever server it is: tests and the bench read ``stack.daphne``.
        self.daphne = self.spawn("daphne", command)
        # Start-up imports Django, the registry and the ASGI stack: on a loaded 2-core box
        # that alone can outlast the default wait, so this deadline is generous.
        wait_until(
            lambda: httpx.get(f"{self.http}/api/auth/csrf", timeout=5).status_code == 200,
            "Daphne to answer",
            timeout=float(os.environ.get("TEST_STACK_START_SECONDS", "120")),
        )
        self.start_seconds = time.monotonic() - self.started_at
        return self

    def create_database(self) -> None:
        """The stack's database: a copy of the migrated and seeded template (the seed's keys
        in ``keys``), owned by ``db_owner`` if set."""
        for attempt in range(3):
            template, self.keys = template_database(self.env)
            try:
                with _admin() as conn:
                    owner = f' OWNER "{self.db_owner}"' if self.db_owner else ""
                    conn.execute(f'CREATE DATABASE "{self.db_name}" TEMPLATE "{template}"{owner}')
                break
            except psycopg.errors.InvalidCatalogName:
                # Dropped as stale by a session of a newer checkout: built again next round.
                if attempt == 2:
                    raise
        if self.db_owner:
            with psycopg.connect(_database_url(self.db_name), autocommit=True) as conn:
                conn.execute(_GIVE_OBJECTS.replace("{role}", self.db_owner))  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.snippets is not None:
            self.snippets.close()
        for process in reversed(self.processes):
            process.stop()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')

    def python(self, code: str) -> str:
        """Run Python with Django set up against the stack, as ``manage.py shell -c`` does,
        in one long-lived process (``tests/integration/snippets.py``); returns its stdout."""
        if self.snippets is None:
            self.snippets = Snippets(
                ROOT, str(BIN / "python"), self.tmp / "snippets.log", die_with_parent
            )
        return self.snippets.run(code, self.env)

    def run(self, args: list[str]) -> str:
        done = subprocess.run(
            args, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=180
        )
        if done.returncode != 0:
            raise RuntimeError(f"{args} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Process:
        log = self.tmp / f"{name}.log"
        handle = log.open("ab")
        popen = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so kill -9 takes the whole worker
            preexec_fn=die_with_parent,
        )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def worker(
        self, name: str, *, beat: bool = False, env: dict[str, str] | None = None
    ) -> Process:
        args = [
            str(BIN / "celery"),
            "-A",
            "studio",
            "worker",
            "-n",
            f"{name}@%h",
            "-l",
            "INFO",
            "--without-gossip",
            "--without-mingle",
        ]
        if beat:
            args += ["-B", "-s", str(self.tmp / f"beat-{name}")]
        return self.spawn(name, args, env)

    def tails(self, lines: int = 40) -> str:
        out = []
        for process in self.processes:
            text = process.log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"----- {process.name} -----\n" + "\n".join(text))
        return "\n".join(out)

    # --- clients ---------------------------------------------------------------------------

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def client(self, user: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[user]}"} if user else {}
        return httpx.Client(base_url=self.http, headers=headers, timeout=30)

    @property
    def dsn(self) -> str:
        """The stack's database as psycopg wants it (``database_url`` is in Django's form)."""
        return self.database_url.replace("postgres://", "postgresql://", 1)

    def sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            return list(conn.execute(query, args).fetchall())
