"""Settings, all from the environment. See docs/operating.md for every variable.

Embedded mode (no ``REDIS_URL``): SQLite, the in-memory channel layer and an
in-process executor, so the app runs with no services. With ``REDIS_URL`` set:
the Redis channel layer and Celery workers.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from agents_app.base.periodic_jobs import beat_schedule
from studio import event_loop as _event_loop
from studio import process_tuning as _process_tuning
from studio.db_options import prepared_options
from studio.devsecrets import load_or_create
from studio.envparse import envbool, envdecimal, envheader, envint, envlist, envrate, envstr

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(envstr("STUDIO_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", False)
_dev = (
    load_or_create(VAR_DIR / "dev-secrets.json")
    if not (envstr("SECRET_KEY") and envstr("STUDIO_ENCRYPTION_KEYS"))
    else {}
)
SECRET_KEY = envstr("SECRET_KEY") or _dev["SECRET_KEY"]
# Keyring for env values, independent of SECRET_KEY: "id:base64key,id:base64key", newest first.
STUDIO_ENCRYPTION_KEYS = envstr("STUDIO_ENCRYPTION_KEYS") or _dev["STUDIO_ENCRYPTION_KEYS"]

# Password of the "admin" user that load_demo creates (generated and printed when unset).
STUDIO_ADMIN_PASSWORD = envstr("STUDIO_ADMIN_PASSWORD")

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# Not "daphne": its app only replaces ``runserver`` (we serve with ``python -m studio.serve``)
# and imports Twisted into every process, 0.25 s of CPU for each worker and command.
INSTALLED_APPS = [
    "studio.apps.StudioAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "agents_app",
]

MIDDLEWARE = [
    # First: bounds the requests running at once per ASGI process (agents_app/web/view_gate.py).
    "agents_app.web.view_gate.ViewGate",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Outages (database, broker) raised by a view: 503 + Retry-After; JSON for API clients.
    "agents_app.base.overload.OverloadMiddleware",
]

ROOT_URLCONF = "studio.urls"
WSGI_APPLICATION = "studio.wsgi.application"
ASGI_APPLICATION = "studio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        envstr("DATABASE_URL", f"sqlite:///{VAR_DIR / 'studio.sqlite3'}"),
        conn_max_age=envint("DB_CONN_MAX_AGE", 0),
    )
}
# --- DB_POOL (PostgreSQL connection pool per process) ---
# Daphne runs every synchronous request on a thread of its own, so CONN_MAX_AGE never
# reuses a connection there: each request paid a new PostgreSQL connection (a few ms of
# the messages page's time). psycopg's pool (Django's OPTIONS["pool"]) hands a request an
# open, checked connection instead and takes it back at the end of the request.
# On in the web process (studio/asgi.py sets the default before Django starts). A worker
# keeps its connections for as long as it runs (one thread does a worker's database
# work), so a pool would only add its own timeouts to an outage's errors there.
if (
    DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    and envbool("DB_POOL", False)
    and not DATABASES["default"].get("CONN_MAX_AGE")
):
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": envint("DB_POOL_MIN_SIZE", 2),
        "max_size": envint("DB_POOL_MAX_SIZE", 20),
        "timeout": envint("DB_POOL_TIMEOUT", 10),
        # A connection the server dropped while it sat in the pool is replaced, not
        # handed out (restarts, PgBouncer's idle timeouts).
        "max_idle": envint("DB_POOL_MAX_IDLE", 300),
    }
    # Checks each connection as it leaves the pool (one round trip, no reconnect storms).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# --- end DB_POOL ---
# Behind PgBouncer in transaction pooling (docker/compose.yaml): a server-side cursor would
# outlive the transaction's server connection. Our prepared statements are protocol-level,
# which PgBouncer >= 1.21 carries across server connections (docs/operating.md).
if envbool("DB_TRANSACTION_POOLING", False):
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
# --- DB_SERVER_PREPARE (PgBouncer without max_prepared_statements) ---
# The engine's commit statement is prepared on the server (protocol level). A pooler that
# cannot carry such statements across server connections (PgBouncer < 1.21, or
# max_prepared_statements = 0, in transaction pooling) needs false: same SQL, unprepared.
DB_SERVER_PREPARE = envbool("DB_SERVER_PREPARE", True)
# --- end DB_SERVER_PREPARE ---
# --- prepared statements (DB_PREPARE_THRESHOLD) ---
# psycopg prepares the start path's statements after a few runs (studio/db_options.py).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    try:
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            prepared_options(
                server_prepare=DB_SERVER_PREPARE,
                threshold=envint("DB_PREPARE_THRESHOLD", 5),
            )
        )
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None
# --- end prepared statements ---
if envstr("TEST_DB_NAME"):
    # Lets several test runs share one PostgreSQL server without clobbering each other.
    DATABASES["default"]["TEST"] = {"NAME": envstr("TEST_DB_NAME")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the server read while a session writes; IMMEDIATE avoids
    # "database is locked" upgrades from read to write transactions.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
MEDIA_ROOT = Path(envstr("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
# Thread files (and their chunks and thumbnails) go through the default storage: local disk
# under MEDIA_ROOT, or any Django storage backend, e.g. S3-compatible object stores with
# django-storages: STUDIO_FILE_STORAGE_BACKEND=storages.backends.s3.S3Storage and
# STUDIO_FILE_STORAGE_OPTIONS='{"bucket_name": "...", "endpoint_url": "..."}' (docs/files.md).
STORAGES = {
    "default": {
        "BACKEND": envstr(
            "STUDIO_FILE_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": json.loads(envstr("STUDIO_FILE_STORAGE_OPTIONS") or "{}"),
    },
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Files above the chunk size are stored and streamed in pieces of that size (the reference's
# 1.75 MiB); writes above the maximum are refused.
STUDIO_FILE_CHUNK_SIZE = envint("STUDIO_FILE_CHUNK_SIZE", 1_835_008)
STUDIO_FILE_MAX_SIZE = envint("STUDIO_FILE_MAX_SIZE", 1024 * 1024 * 1024)
# Resumable uploads (…/fs/<path>/upload/start): an unfinished one is removed after this long,
# by the expire-uploads job every STUDIO_UPLOAD_SWEEP_SECONDS.
STUDIO_UPLOAD_EXPIRE_SECONDS = envint("STUDIO_UPLOAD_EXPIRE_SECONDS", 24 * 3600)
STUDIO_UPLOAD_SWEEP_SECONDS = envint("STUDIO_UPLOAD_SWEEP_SECONDS", 600)
# POST /api/threads/{id}/rpc, the reference's dev and test passthrough: off (404) unless set,
# and loopback clients only even then (docs/api.md).
STUDIO_THREAD_RPC = envbool("STUDIO_THREAD_RPC", False)

# --- MCP (docs/mcp.md) ------------------------------------------------------------
# stdio MCP servers run a command on the worker: off unless the operator allows it.
MCP_ALLOW_STDIO = envbool("MCP_ALLOW_STDIO", False)
# How long a tool call to /mcp waits for the agent's session before answering with an error.
MCP_SERVER_CALL_TIMEOUT = envint("MCP_SERVER_CALL_TIMEOUT", 900)
# How long a turn of the OpenAI-compatible API (/v1) waits for the agent's session.
STUDIO_OPENAI_WAIT_SECONDS = envint("STUDIO_OPENAI_WAIT_SECONDS", 900)

LOGIN_URL = "/admin/login/"
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 25 * 1024 * 1024)

# --- services -----------------------------------------------------------------
REDIS_URL = envstr("REDIS_URL")
EMBEDDED = not REDIS_URL

CHANNEL_LAYERS: dict[str, dict[str, Any]]
if EMBEDDED:
    # channels' in-memory layer, minus a task per member at each group_send
    # (agents_app/broadcast/memory_layer.py).
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "agents_app.broadcast.memory_layer.EmbeddedChannelLayer"}
    }
else:
    _redis_host = {
        "address": REDIS_URL,
        # redis-py's asyncio pool refuses (does not wait for) a connection past
        # max_connections, 100 by default: one process with hundreds of sockets and
        # sessions needs a higher cap, or sends fail under load.
        "max_connections": envint("CHANNEL_REDIS_MAX_CONNECTIONS", 1000),
        # redis-py 8 reads with a 5 s socket timeout by default, the same as the core
        # layer's blocking BZPOPMIN: an idle receive then fails with "Timeout reading"
        # and the consumer dies. Keep the read timeout above 5 s.
        "socket_timeout": envint("CHANNEL_REDIS_SOCKET_TIMEOUT", 30),
        "socket_connect_timeout": 5,
    }
    # Live frames are at-most-once and clients reload over HTTP after a gap, so the
    # Pub/Sub layer fits: one PUBLISH per group send and pushed receives, where the core
    # layer pays four Redis round trips per received message and drops past a per-process
    # capacity (docs/api.md, "Live updates under load"). CHANNEL_LAYER=core selects it.
    if envstr("CHANNEL_LAYER", "pubsub") == "core":
        CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {
                    "hosts": [_redis_host],
                    "capacity": envint("CHANNEL_CAPACITY", 1000),
                    # Lets several deployments (or test runs) share one Redis.
                    "prefix": envstr("CHANNEL_PREFIX", "asgi"),
                },
            }
        }
    else:
        CHANNEL_LAYERS = {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [_redis_host], "prefix": envstr("CHANNEL_PREFIX", "asgi")},
            }
        }

# "inprocess" runs sessions and effects on a thread pool inside the web process.
STUDIO_EXECUTOR = envstr("STUDIO_EXECUTOR", "inprocess" if EMBEDDED else "celery")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
# No results are kept (the session row is the record), and the disabled backend holds no
# connection, so all threads may share it. Otherwise Celery builds one per thread, and
# Daphne runs each request's view in a thread of its own: every dispatch built it again,
# scanning every installed package's entry points, a tenth of Daphne's CPU while hundreds
# of sessions started (issue #21).
CELERY_RESULT_BACKEND_THREAD_SAFE = True
CELERY_TASK_ACKS_LATE = True
# Late ack alone does not survive a killed worker process; reject on loss so the
# broker redelivers. The database (not the broker) decides who owns a session.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
# Sessions wait on LLM streams: a worker runs them as asyncio tasks on one loop, and each
# pool thread only waits for its session (see docs/api.md, "Sessions on Celery").
CELERY_WORKER_POOL = envstr("CELERY_WORKER_POOL", "threads")
CELERY_WORKER_CONCURRENCY = envint("CELERY_WORKER_CONCURRENCY", 64)
# No copy of a delivered task in Redis (kombu's "ack emulation" off): the database, not the
# broker, recovers lost work. Every task's row is swept (sessions, effects, webhooks,
# knowledge documents), so the copy only ever came back after its hour-long visibility
# timeout, and it cost each delivery and each ack a Redis transaction (a tenth of the
# worker's CPU per conversation start, bench/history.md "twentieth round"). A worker that
# closes its connection still pushes back what it received and did not finish.
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {"ack_emulation": False}
# --- broker faults (docs/operating.md, "Fault recovery") ---------------------------------
# A worker must outlive a Redis restart: retry the broker forever, at start-up too (the
# default gives up after 100 attempts, about 50 minutes, and the process exits).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# On a lost broker connection keep running sessions: ownership is the session row, not the
# broker, so nothing is lost by finishing them (and a thread-pool task cannot be killed).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_TRANSPORT_OPTIONS.update(
    {
        # A broker that vanished without closing the TCP connection (failover, NAT, a
        # paused VM): a read gives up after socket_timeout, keepalive probes the idle
        # sockets, and redis-py PINGs a connection idle longer than health_check_interval
        # before using it. socket_timeout must stay above kombu's 1 s BRPOP timeout.
        "socket_timeout": envint("CELERY_BROKER_SOCKET_TIMEOUT", 30),
        "socket_connect_timeout": envint("CELERY_BROKER_CONNECT_TIMEOUT", 5),
        "socket_keepalive": True,
        "health_check_interval": envint("CELERY_BROKER_HEALTH_CHECK_SECONDS", 25),
        "retry_on_timeout": True,
    }
)
# --- end broker faults ------------------------------------------------------------------
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = envstr("CELERY_QUEUE", "celery")

# --- posting under faults and overload (agents_app/base/overload.py, docs/operating.md) ---------
# Seconds a client is told to wait (Retry-After) when the database or the broker is down
# or out of connections; and how long an Idempotency-Key is remembered.
STUDIO_OVERLOAD_RETRY_AFTER_SECONDS = envint("STUDIO_OVERLOAD_RETRY_AFTER_SECONDS", 2)
STUDIO_IDEMPOTENCY_KEY_HOURS = envint("STUDIO_IDEMPOTENCY_KEY_HOURS", 24)

# --- sessions (agents_app.services.sessions.lifecycle, agents_app.orchestration.runner) -------------------------
# The owner of a running session refreshes its heartbeat this often; a session whose
# heartbeat is older than STALE is resumed by the sweep (every SWEEP seconds).
STUDIO_SESSION_HEARTBEAT_SECONDS = envint("STUDIO_SESSION_HEARTBEAT_SECONDS", 5)
STUDIO_SESSION_STALE_SECONDS = envint("STUDIO_SESSION_STALE_SECONDS", 30)
STUDIO_SESSION_SWEEP_SECONDS = envint("STUDIO_SESSION_SWEEP_SECONDS", 10)
# How long a tool call waiting for approval or the client waits before the model gets a
# timeout result (a tool entry's waitTimeoutSeconds overrides it; the sweep expires them).
STUDIO_TOOL_WAIT_SECONDS = envint("STUDIO_TOOL_WAIT_SECONDS", 1800)
# A 2025-era MCP server's question in the middle of a tool call holds the call (and a
# worker's slot) open for the person's answer at most this long; then the server gets
# "cancel" (docs/mcp.md). Far shorter than a parked wait, which holds nothing.
STUDIO_MCP_LIVE_QUESTION_SECONDS = envint("STUDIO_MCP_LIVE_QUESTION_SECONDS", 300)
if not 1 <= STUDIO_MCP_LIVE_QUESTION_SECONDS <= 3600:
    # An MCP connection's stream read times out after an hour of silence (runtime.mcp.client).
    raise ImproperlyConfigured("STUDIO_MCP_LIVE_QUESTION_SECONDS must be from 1 to 3600")
# Client bridge (WS /api/threads/{id}/bridge), the reference's defaults: a socket that a
# call was delivered to is closed when it sends nothing (not even a ping) for LIVENESS
# seconds, or gives no result within CLIENT_TOOL_TIMEOUT; the call stays parked and is
# delivered again when a client connects (until STUDIO_TOOL_WAIT_SECONDS expire it).
STUDIO_BRIDGE_LIVENESS_SECONDS = envint("STUDIO_BRIDGE_LIVENESS_SECONDS", 20)
STUDIO_CLIENT_TOOL_TIMEOUT_SECONDS = envint("STUDIO_CLIENT_TOOL_TIMEOUT_SECONDS", 300)
# A queued session nobody claimed (its task was lost) is dispatched again after this.
STUDIO_SESSION_REDISPATCH_SECONDS = envint("STUDIO_SESSION_REDISPATCH_SECONDS", 120)
# Tests only: named points where the database connection is broken on purpose
# ("name" or "name:count"; agents_app/base/faults.py). Empty in production.
STUDIO_FAULT_POINTS: dict[str, int] = {}
for _point in envlist("STUDIO_FAULT_POINTS"):
    _name, _, _count = _point.partition(":")
    if _count and not _count.isdigit():
        raise ImproperlyConfigured(f"STUDIO_FAULT_POINTS: {_point!r} is not NAME or NAME:COUNT")
    STUDIO_FAULT_POINTS[_name.strip()] = int(_count or 1)
# Token chunk frames per second one process sends, all streams together: with many
# messages streaming, each one's chunks are batched so the total stays near this.
STUDIO_LIVE_CHUNK_FRAMES_PER_SECOND = envint("STUDIO_LIVE_CHUNK_FRAMES_PER_SECOND", 4000)
# Requests running their synchronous part at once per ASGI process, and how long one waits
# for its turn before running anyway (agents_app/web/view_gate.py; 0: no bound).
STUDIO_WEB_VIEW_CONCURRENCY = envint("STUDIO_WEB_VIEW_CONCURRENCY", 2)
STUDIO_WEB_VIEW_WAIT_MS = envint("STUDIO_WEB_VIEW_WAIT_MS", 5000)
# A thread's token chunks merge into one frame per this many milliseconds (0: off);
# clients receive the same text in the same order (docs/scaling.md, "Streaming at scale").
STUDIO_STREAM_COALESCE_MS = envint("STUDIO_STREAM_COALESCE_MS", 40)
if STUDIO_STREAM_COALESCE_MS < 0:
    raise ImproperlyConfigured("STUDIO_STREAM_COALESCE_MS must be 0 (off) or more")
# Sessions one worker loop starts at once (claim to first LLM request; 0: no limit). Fewer
# starts at a time finish sooner one by one than all at once (agents_app/orchestration/start_gate.py).
STUDIO_SESSION_STARTS_AT_ONCE = envint("STUDIO_SESSION_STARTS_AT_ONCE", 8)
if STUDIO_SESSION_STARTS_AT_ONCE < 0:
    raise ImproperlyConfigured("STUDIO_SESSION_STARTS_AT_ONCE must be 0 (no limit) or more")
# The event loop of Daphne and the workers (studio/event_loop.py reads the environment
# itself: Daphne builds its loop before Django). Checked here so a bad value stops every
# process at start, not a worker at its first session.
try:
    STUDIO_EVENT_LOOP = _event_loop.loop_name()
    _event_loop.loop_factory()  # uvloop importable when it is the one asked for
except (ValueError, RuntimeError) as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# The interpreter settings Daphne and the workers apply after start-up
# (studio/process_tuning.py), checked the same way.
try:
    _process_tuning.gc_thresholds()
    _process_tuning.switch_interval_ms()
except ValueError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# Long-lived threads per ASGI process that HTTP requests take turns on (0: a thread per
# request, Django's default; agents_app/web/request_threads.py).
STUDIO_WEB_REQUEST_THREADS = envint("STUDIO_WEB_REQUEST_THREADS", 4)
if STUDIO_WEB_REQUEST_THREADS < 0:
    raise ImproperlyConfigured(
        "STUDIO_WEB_REQUEST_THREADS must be 0 (a thread per request) or more"
    )
# Threads (hence at most database connections) per process for WebSocket consumers'
# database work: authentication, the thread check, redactor loads (agents_app/sockets/socket_db.py).
STUDIO_SOCKET_DB_THREADS = envint("STUDIO_SOCKET_DB_THREADS", 4)
if STUDIO_SOCKET_DB_THREADS < 1:
    raise ImproperlyConfigured("STUDIO_SOCKET_DB_THREADS must be 1 or more")
# How often a worker looks for stop requests of the sessions it runs.
STUDIO_STOP_POLL_MS = envint("STUDIO_STOP_POLL_MS", 500)
# Extra provider factories, "name=dotted.path,…" (the bench's clocked test provider).
STUDIO_PROVIDER_FACTORIES = dict(
    item.split("=", 1) for item in envlist("STUDIO_PROVIDER_FACTORIES") if "=" in item
)

# --- effects (agents_app.services.sessions.effects, agents_app.orchestration.effect_runner; docs/effects.md) -------
# Beat sends a sweep tick this often; each tick claims due effects (SELECT … FOR UPDATE
# SKIP LOCKED) and runs them, polling every POLL ms for about one interval. No task is
# ever sent with a countdown/eta: the database row is the schedule.
STUDIO_EFFECT_SWEEP_MS = envint("STUDIO_EFFECT_SWEEP_MS", 1000)
STUDIO_EFFECT_POLL_MS = envint("STUDIO_EFFECT_POLL_MS", 200)
# Rows per claim, and runs in flight per sweeper.
STUDIO_EFFECT_BATCH = envint("STUDIO_EFFECT_BATCH", 50)
STUDIO_EFFECT_CONCURRENCY = envint("STUDIO_EFFECT_CONCURRENCY", 50)
# A worker refreshes the heartbeat of the runs it holds every HEARTBEAT seconds; a run whose
# heartbeat is older than STALE is taken back (checked every RECOVER seconds per sweeper).
STUDIO_EFFECT_HEARTBEAT_SECONDS = envint("STUDIO_EFFECT_HEARTBEAT_SECONDS", 5)
STUDIO_EFFECT_STALE_SECONDS = envint("STUDIO_EFFECT_STALE_SECONDS", 60)
STUDIO_EFFECT_RECOVER_SECONDS = envint("STUDIO_EFFECT_RECOVER_SECONDS", 10)
# Attempts per run (failures and lost workers count), and the backoff between them.
STUDIO_EFFECT_MAX_ATTEMPTS = envint("STUDIO_EFFECT_MAX_ATTEMPTS", 3)
STUDIO_EFFECT_RETRY_BASE_MS = envint("STUDIO_EFFECT_RETRY_BASE_MS", 5000)
STUDIO_EFFECT_RETRY_MAX_MS = envint("STUDIO_EFFECT_RETRY_MAX_MS", 300_000)
# A handler running longer than this is cancelled and counts as a failed attempt.
STUDIO_EFFECT_TIMEOUT_SECONDS = envint("STUDIO_EFFECT_TIMEOUT_SECONDS", 300)
CELERY_IMPORTS = ["agents_app.tasks.effect_tasks"]
# --- evals (agents_app/orchestration/eval_runs.py; docs/observability.md) ----------------------------------
# How often beat asks a worker to advance the running eval runs.
STUDIO_EVAL_TICK_SECONDS = envint("STUDIO_EVAL_TICK_SECONDS", 2)
# Expired WebSocket tickets and idempotency keys (agents_app.services.operations.housekeeping).
STUDIO_PURGE_SECONDS = envint("STUDIO_PURGE_SECONDS", 60)

# --- recurring schedules (agents_app.orchestration.schedule_runner; docs/automation.md) ------------------
STUDIO_SCHEDULE_SWEEP_MS = envint("STUDIO_SCHEDULE_SWEEP_MS", 1000)
STUDIO_SCHEDULE_POLL_MS = envint("STUDIO_SCHEDULE_POLL_MS", 200)
STUDIO_SCHEDULE_BATCH = envint("STUDIO_SCHEDULE_BATCH", 50)
# A run claimed this long ago and not started (its claimer died) is claimed again.
STUDIO_SCHEDULE_STALE_SECONDS = envint("STUDIO_SCHEDULE_STALE_SECONDS", 60)
# The shortest time between two runs of one schedule (an interval, or any two cron times):
# a schedule every second would start 86,400 threads a day.
STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS = envint("STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS", 60)

# --- egress policy (runtime/core/egress.py; docs/security.md, Egress policy) --------------------
# Hosts or CIDRs that model base URLs, discovery, MCP servers and webhook receivers may reach
# although they are loopback, private, link-local or metadata addresses (self-hosted vendors,
# MCP servers or receivers on a private network). Empty: only public addresses.
STUDIO_EGRESS_ALLOW = envlist("STUDIO_EGRESS_ALLOW")

# --- outbound webhooks (agents_app.orchestration.webhook_runner; docs/automation.md) ---------------------
STUDIO_WEBHOOK_TIMEOUT_SECONDS = envint("STUDIO_WEBHOOK_TIMEOUT_SECONDS", 10)
STUDIO_WEBHOOK_RETRY_BASE_SECONDS = envint("STUDIO_WEBHOOK_RETRY_BASE_SECONDS", 10)
STUDIO_WEBHOOK_RETRY_MAX_SECONDS = envint("STUDIO_WEBHOOK_RETRY_MAX_SECONDS", 3600)
STUDIO_WEBHOOK_GIVE_UP_SECONDS = envint("STUDIO_WEBHOOK_GIVE_UP_SECONDS", 86400)
# Receivers obey the egress policy (STUDIO_EGRESS_ALLOW above); the old switch is refused
# rather than silently ignored.
if envstr("STUDIO_WEBHOOK_ALLOW_PRIVATE", ""):
    raise ImproperlyConfigured(
        "STUDIO_WEBHOOK_ALLOW_PRIVATE is gone: list a private webhook receiver's host or CIDR "
        "in STUDIO_EGRESS_ALLOW instead (docs/security.md, Egress policy)"
    )
# How often due retries are sent (beat's webhooks_tick; the embedded sweep in embedded mode).
STUDIO_WEBHOOK_SWEEP_SECONDS = envint("STUDIO_WEBHOOK_SWEEP_SECONDS", 5)

# --- limits, quotas and budgets (agents_app.services.access.limits; docs/security.md, Security) ----
# Counters live in the shared cache, so every web process sees the same counts: Redis (the
# broker's server, its own key prefix) with REDIS_URL, else this process's memory (embedded).
CACHES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    if EMBEDDED
    else {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": envstr("CACHE_KEY_PREFIX", "studio"),
        # A hung Redis must not hang requests: the limits then pass uncounted (logged).
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
}
# The client address comes from REMOTE_ADDR unless a proxy you run sets this header (e.g.
# X-Forwarded-For); COUNT is how many of your proxies append to it (the client is that many
# entries from the right). Never set it without such a proxy: clients could forge the header.
STUDIO_TRUSTED_PROXY_HEADER = envstr("STUDIO_TRUSTED_PROXY_HEADER")
STUDIO_TRUSTED_PROXY_COUNT = envint("STUDIO_TRUSTED_PROXY_COUNT", 1)
if STUDIO_TRUSTED_PROXY_COUNT < 1:
    raise ImproperlyConfigured("STUDIO_TRUSTED_PROXY_COUNT must be 1 or more")
# Failed sign-ins (API and both HTML forms together), per client address and per account.
STUDIO_LOGIN_RATE_PER_ADDRESS = envrate("STUDIO_LOGIN_RATE_PER_ADDRESS", "10/5m")
STUDIO_LOGIN_RATE_PER_ACCOUNT = envrate("STUDIO_LOGIN_RATE_PER_ACCOUNT", "25/15m")
# Calls of public thread endpoints (access="public") by callers nobody signed in, per client
# address: such an endpoint runs engine code for anyone on the internet.
STUDIO_PUBLIC_ENDPOINT_RATE_PER_ADDRESS = envrate("STUDIO_PUBLIC_ENDPOINT_RATE_PER_ADDRESS", "60/m")
# Bearer tokens from the JSON login (agents_app/services/access/login_tokens.py): how long they live.
STUDIO_LOGIN_TOKEN_SECONDS = envint("STUDIO_LOGIN_TOKEN_SECONDS", 12 * 3600)
# Requests per user (all credentials together) and per API key; the studio's "Usage limits"
# override them per user or per key. "N/<k><s|m|h|d>", or "off".
_RATES = {
    "thread_create": "60/m",
    "message_post": "120/m",
    "ws_ticket": "120/m",
    "api_key_create": "20/h",
}
STUDIO_RATE_LIMITS = {a: envrate(f"STUDIO_RATE_{a.upper()}", r) for a, r in _RATES.items()}
STUDIO_RATE_LIMITS_PER_KEY = {a: envrate(f"STUDIO_RATE_{a.upper()}_PER_KEY", "off") for a in _RATES}
# Monthly spend (USD, from the logs' costs) after which new sessions are refused; unset means
# no budget. The studio's "Spend budgets" override them per user or per agent.
STUDIO_BUDGET_USER_MONTHLY_USD = envdecimal("STUDIO_BUDGET_USER_MONTHLY_USD")
STUDIO_BUDGET_AGENT_MONTHLY_USD = envdecimal("STUDIO_BUDGET_AGENT_MONTHLY_USD")
# What a session that is still running is assumed to cost on top of what it has spent: a new
# session starts only while spend + running sessions x this stays under the budget, so
# concurrent starts overspend by at most one session's estimate (docs/operating.md).
_SESSION_ESTIMATE = envdecimal("STUDIO_BUDGET_SESSION_ESTIMATE_USD")
STUDIO_BUDGET_SESSION_ESTIMATE_USD = (
    Decimal("1") if _SESSION_ESTIMATE is None else _SESSION_ESTIMATE
)
# --- end limits -------------------------------------------------------------------------------

# --- retention (agents_app.services.operations.retention; docs/operating.md, "Retention") -------------
# Days to keep each kind of activity; 0 keeps it forever (the default: nothing is deleted
# unless an operator asks). The studio's retention page overrides each one.
STUDIO_RETENTION_THREAD_DAYS = envint("STUDIO_RETENTION_THREAD_DAYS", 0)
STUDIO_RETENTION_LOG_DAYS = envint("STUDIO_RETENTION_LOG_DAYS", 0)
STUDIO_RETENTION_LOG_BODY_DAYS = envint("STUDIO_RETENTION_LOG_BODY_DAYS", 0)
STUDIO_RETENTION_EFFECT_DAYS = envint("STUDIO_RETENTION_EFFECT_DAYS", 0)
# Memories agents keep about a person (docs/knowledge.md "Memory"): 0 keeps them until forgotten.
STUDIO_RETENTION_MEMORY_DAYS = envint("STUDIO_RETENTION_MEMORY_DAYS", 0)
# Rows per statement (and per short transaction), how often beat runs retention, and how
# long one run may work before it leaves the rest to the next run.
STUDIO_RETENTION_BATCH = envint("STUDIO_RETENTION_BATCH", 1000)
STUDIO_RETENTION_INTERVAL_SECONDS = envint("STUDIO_RETENTION_INTERVAL_SECONDS", 3600)
STUDIO_RETENTION_MAX_SECONDS = envint("STUDIO_RETENTION_MAX_SECONDS", 600)
CELERY_IMPORTS.append("agents_app.tasks.retention_tasks")
# --- end retention ----------------------------------------------------------------------

# --- knowledge bases (docs/knowledge.md) ------------------------------------------------
# How often the sweep hands waiting documents to the workers; how long a queued document
# waits before its task counts as lost; how old an ingesting worker's heartbeat may grow
# before its document is taken up again (a batch of chunks takes seconds, so minutes is dead).
STUDIO_KNOWLEDGE_SWEEP_SECONDS = envint("STUDIO_KNOWLEDGE_SWEEP_SECONDS", 30)
STUDIO_KNOWLEDGE_REQUEUE_SECONDS = envint("STUDIO_KNOWLEDGE_REQUEUE_SECONDS", 120)
STUDIO_KNOWLEDGE_STALE_SECONDS = envint("STUDIO_KNOWLEDGE_STALE_SECONDS", 300)
CELERY_IMPORTS.append("agents_app.tasks.knowledge_tasks")
# --- end knowledge bases ----------------------------------------------------------------

# Where code-defined tools, hooks, effects and thread endpoints are discovered
# (besides ``agents/`` packages inside installed apps).
STUDIO_AGENTS_DIRS = envlist("STUDIO_AGENTS_DIRS", str(BASE_DIR / "agents"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
}

# --- security: HTTPS, cookies, HSTS, CSP, URL length (docs/security.md, "Security") -----
# STUDIO_HTTPS=true: the site is reached over HTTPS only (directly or through a TLS proxy).
# It turns on the defaults below (the ones `manage.py check --deploy` asks for); each can
# still be set on its own.
STUDIO_HTTPS = envbool("STUDIO_HTTPS", False)
# Reply texts on the model spans of traces (agents_app/base/telemetry.py), redacted as logs are.
STUDIO_TRACE_CONTENT = envbool("STUDIO_TRACE_CONTENT", False)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", STUDIO_HTTPS)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", STUDIO_HTTPS)
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", STUDIO_HTTPS)
# Path regexes (no leading slash) still answered over plain HTTP, e.g. an in-network probe.
SECURE_REDIRECT_EXEMPT = envlist("SECURE_REDIRECT_EXEMPT")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 31_536_000 if STUDIO_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", STUDIO_HTTPS)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", STUDIO_HTTPS)
# Name of the header a TLS-terminating proxy sets to "https" (X-Forwarded-Proto). Only set
# it when that proxy also overwrites the client's copy, or a client could claim HTTPS.
_proxy_ssl_header = envheader("SECURE_PROXY_SSL_HEADER")
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None
# The pages' Content-Security-Policy (agents_app.web.csp); empty turns it off.
STUDIO_CSP = envstr(
    "STUDIO_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; form-action 'self'; "
    "base-uri 'self'; object-src 'none'",
)
STUDIO_CSP_REPORT_ONLY = envbool("STUDIO_CSP_REPORT_ONLY", False)
# The site's public origin (https://studio.example.com): agent icons given as absolute
# paths are returned as full URLs against it (agents-spec §8.2). Unset: the origin of
# each HTTP request; WebSocket frames then keep the path (agents_app.base.icons).
STUDIO_PUBLIC_URL = envstr("STUDIO_PUBLIC_URL", "")
# Longer URLs get a JSON 414 (agents_app.web.url_length); Daphne cuts at 16 KB anyway.
STUDIO_MAX_URL_BYTES = envint("STUDIO_MAX_URL_BYTES", 8192)
_after_security = MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1
MIDDLEWARE[_after_security:_after_security] = [
    "agents_app.web.url_length.UrlLengthMiddleware",
    "agents_app.web.csp.ContentSecurityPolicyMiddleware",
    "agents_app.api.json_errors.ApiJsonErrorsMiddleware",
]
# --- end security ------------------------------------------------------------------------

# --- sign-in with the organisation's identity provider (docs/identity.md) ---------------
# OpenID Connect, on when an issuer is set: discovery from <issuer>/.well-known/
# openid-configuration, authorization code flow with PKCE, state and nonce checked, ID
# tokens verified against the provider's keys. The client secret also reads from
# STUDIO_OIDC_CLIENT_SECRET_FILE and is never shown or logged.
STUDIO_OIDC_ISSUER = envstr("STUDIO_OIDC_ISSUER").rstrip("/")
STUDIO_OIDC_CLIENT_ID = envstr("STUDIO_OIDC_CLIENT_ID")
STUDIO_OIDC_CLIENT_SECRET = envstr("STUDIO_OIDC_CLIENT_SECRET")
STUDIO_OIDC_SCOPES = envstr("STUDIO_OIDC_SCOPES", "openid email profile")
STUDIO_OIDC_PROVIDER_NAME = envstr("STUDIO_OIDC_PROVIDER_NAME", "your organisation")
# The claims that name the account and list its groups; members of the admin groups are
# staff and in the studio's "Studio administrators" group.
STUDIO_OIDC_USERNAME_CLAIM = envstr("STUDIO_OIDC_USERNAME_CLAIM", "preferred_username")
STUDIO_OIDC_GROUPS_CLAIM = envstr("STUDIO_OIDC_GROUPS_CLAIM", "groups")
STUDIO_OIDC_ADMIN_GROUPS = envlist("STUDIO_OIDC_ADMIN_GROUPS")
# Hide the password forms (the break-glass `manage.py set_admin_password` still works, and
# /admin/login/?password=1 shows the studio's form for that account).
STUDIO_OIDC_ONLY = envbool("STUDIO_OIDC_ONLY", False)
# A session signed in through the provider lasts this long; the next sign-in re-reads the
# groups, so a group removed upstream is gone here within this time (at once with SCIM).
STUDIO_OIDC_SESSION_SECONDS = envint("STUDIO_OIDC_SESSION_SECONDS", 3600)
if STUDIO_OIDC_ISSUER and not (STUDIO_OIDC_CLIENT_ID and STUDIO_OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured(
        "STUDIO_OIDC_ISSUER is set: STUDIO_OIDC_CLIENT_ID and STUDIO_OIDC_CLIENT_SECRET are needed too"
    )
if STUDIO_OIDC_ONLY and not STUDIO_OIDC_ISSUER:
    raise ImproperlyConfigured("STUDIO_OIDC_ONLY needs STUDIO_OIDC_ISSUER (nobody could sign in)")
if STUDIO_OIDC_SESSION_SECONDS < 60:
    raise ImproperlyConfigured("STUDIO_OIDC_SESSION_SECONDS must be 60 or more")
# The audit log's retention in days (0: kept forever; purged with the expired tickets).
STUDIO_AUDIT_RETENTION_DAYS = envint("STUDIO_AUDIT_RETENTION_DAYS", 0)
if STUDIO_AUDIT_RETENTION_DAYS < 0:
    raise ImproperlyConfigured("STUDIO_AUDIT_RETENTION_DAYS must be 0 (keep forever) or more")
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
    "agents_app.web.audit_context.AuditContextMiddleware",
)
TEMPLATES[0]["OPTIONS"]["context_processors"].append(  # type: ignore[index]
    "agents_app.identity.context.studio_oidc"
)
# --- end identity ------------------------------------------------------------------------

# --- periodic work (agents_app/base/periodic_jobs.py: beat's entries and the embedded loop's) ---
CELERY_BEAT_SCHEDULE = beat_schedule(globals())
