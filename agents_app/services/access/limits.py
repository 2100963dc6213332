"""Limits, quotas and budgets: sign-in attempts, request rates and monthly spend.

Request counts live in the shared cache (Redis in production, see ``CACHES``), so every
web process counts against the same numbers. Each limit is a sliding window approximated
from two fixed windows (the previous window's count, weighted by how much of it still
overlaps, plus the current one's): one atomic ``INCR`` and one ``GET`` per bucket, no
burst of twice the limit at a window edge. A request that is refused (or whose operation
fails) gives its count back, so hammering a closed limit does not keep it closed.

Spend budgets are read from the logs' recorded costs for the current calendar month and
stop *new* sessions only; a running session finishes.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone
from redis.exceptions import RedisError

from agents_app.base.errors import RateLimited
from agents_app.db.composed import Part
from agents_app.db.raw_sql import prepared_cursor
from agents_app.models import LimitedAction, SpendBudget, Thread, ThreadSession, UsageLimit
from agents_app.selectors import spend_since

logger = logging.getLogger("agents_app.limits")

Rate = tuple[int, int]  # (requests, period in seconds)

PERIOD_WORDS = {60: "per minute", 3600: "per hour", 86400: "per day"}
LOGIN_REFUSED = "Too many sign-in attempts. Try again in {wait}."


@dataclass(frozen=True)
class Bucket:
    """One counter: ``name`` identifies who is counted, ``rate`` how much they may do."""

    name: str
    rate: Rate
    refusal: str  # the sentence the client sees, with ``{wait}`` for the delay


@dataclass
class Hit:
    """The counts one request took; ``refund`` gives them back (refused or failed request)."""

    keys: list[str] = field(default_factory=list)

    def refund(self) -> None:
        for key in self.keys:
            # The window may have expired meanwhile (nothing to give back), or the cache
            # went away (nothing to keep either).
            with contextlib.suppress(ValueError, RedisError, OSError):
                cache.decr(key)
        self.keys = []


# --- the sliding window ------------------------------------------------------------------------


def seconds_until_allowed(rate: Rate, prev: int, curr: int, elapsed: float) -> float:
    """How long until one more request fits, given the previous window's count ``prev``,
    the current window's ``curr`` (without the refused request) and ``elapsed`` seconds
    into the current window."""
    limit, period = rate
    if limit <= 0:
        return float(period)
    rest = period - elapsed
    room = limit - 1 - curr
    if room >= 0:
        # Wait until the previous window's weight has shrunk enough.
        return max(0.0, rest - room * period / prev) if prev else 0.0
    # Only in the next window, where this window's count becomes the weighted one.
    return rest + period * (1 - (limit - 1) / curr)


def _take(bucket: Bucket, now: float, hit: Hit) -> float | None:
    """Count one request in ``bucket``; the wait in seconds if that passes its limit."""
    limit, period = bucket.rate
    window = int(now // period)
    key = f"limit:{bucket.name}:{period}:{window}"
    # Kept for two periods: the next window reads this one as its weighted previous count.
    timeout = 2 * period + 60
    cache.add(key, 0, timeout=timeout)
    try:
        curr = int(cache.incr(key))
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=timeout)
        curr = 1
    hit.keys.append(key)
    prev = int(cache.get(f"limit:{bucket.name}:{period}:{window - 1}") or 0)
    elapsed = now - window * period
    if prev * (period - elapsed) / period + curr <= limit:
        return None
    return seconds_until_allowed(bucket.rate, prev, curr - 1, elapsed)


def hit(buckets: list[Bucket], *, now: float | None = None) -> Hit:
    """Count one request in every bucket, or raise ``RateLimited`` (counting nothing).

    With the cache unreachable the request passes uncounted (logged): a Redis outage must
    not turn every write and sign-in into an error."""
    now = time.time() if now is None else now
    taken = Hit()
    refused: list[tuple[float, Bucket]] = []
    try:
        for bucket in buckets:
            wait = _take(bucket, now, taken)
            if wait is not None:
                refused.append((wait, bucket))
    except (RedisError, OSError) as exc:
        logger.warning("Limits not counted, the cache is unreachable: %s", exc)
        return Hit()
    if refused:
        taken.refund()
        wait, bucket = max(refused, key=lambda item: item[0])
        seconds = max(1, math.ceil(wait))
        raise RateLimited(bucket.refusal.format(wait=wait_words(seconds)), retry_after=seconds)
    return taken


def wait_words(seconds: int) -> str:
    """A wait as a person says it: exact under a minute, then "about" whole minutes or
    hours (the sliding window's estimate is not to the second: "1 per minute … try again in
    87 seconds" read as a contradiction)."""
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return "about a minute" if minutes == 1 else f"about {minutes} minutes"
    hours = max(1, round(seconds / 3600))
    return "about an hour" if hours == 1 else f"about {hours} hours"


def _hashed(text: str) -> str:
    # Usernames and addresses stay out of cache keys (and the Redis keyspace).
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- client address and sign-in ---------------------------------------------------------------


def client_address(request: HttpRequest) -> str:
    """The client's address: from ``STUDIO_TRUSTED_PROXY_HEADER`` when configured (the entry
    ``STUDIO_TRUSTED_PROXY_COUNT`` from the right, the one your outermost proxy appended),
    else ``REMOTE_ADDR``. IPv6 clients are grouped by /64 (one host usually holds one)."""
    header = settings.STUDIO_TRUSTED_PROXY_HEADER
    candidate = ""
    if header:
        raw = str(request.META.get("HTTP_" + header.upper().replace("-", "_"), ""))
        hops = [hop.strip() for hop in raw.split(",") if hop.strip()]
        if len(hops) >= settings.STUDIO_TRUSTED_PROXY_COUNT:
            candidate = hops[-settings.STUDIO_TRUSTED_PROXY_COUNT]
    # A request that did not come through all the proxies is counted by its socket.
    return _network(candidate) or _network(str(request.META.get("REMOTE_ADDR", ""))) or "unknown"


def _network(text: str) -> str:
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return ""
    if address.version == 6 and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(getattr(address, "ipv4_mapped", None) or address)


def login_attempt(request: HttpRequest, username: str) -> Hit:
    """Count a sign-in attempt per client address and per account (API and HTML forms share
    these counters). Raises ``RateLimited``; call ``refund()`` on the result when it
    succeeds, so only failures count."""
    buckets = [
        Bucket("login:address:" + _hashed(client_address(request)), rate, LOGIN_REFUSED)
        for rate in [settings.STUDIO_LOGIN_RATE_PER_ADDRESS]
        if rate is not None
    ] + [
        Bucket("login:account:" + _hashed(username.strip().lower()), rate, LOGIN_REFUSED)
        for rate in [settings.STUDIO_LOGIN_RATE_PER_ACCOUNT]
        if rate is not None
    ]
    return hit(buckets)


def public_endpoint_call(request: HttpRequest) -> Hit:
    """Count one call of a public thread endpoint by a caller nobody signed in, per client
    address (IPv6 per /64). Raises ``RateLimited``; signed-in callers are counted by nothing
    here (a public endpoint is no heavier for them than any other)."""
    rate = settings.STUDIO_PUBLIC_ENDPOINT_RATE_PER_ADDRESS
    if rate is None:
        return hit([])
    per = PERIOD_WORDS.get(rate[1], f"per {rate[1]} seconds")
    words = (
        f"Too many requests to public endpoints from your address: the limit is {rate[0]} "
        f"{per}. Try again in {{wait}}."
    )
    address = _hashed(client_address(request))
    return hit([Bucket("public-endpoint:address:" + address, rate, words)])


# --- request rates per user and per API key ----------------------------------------------------


# What the client is told it sent too many of.
TOO_MANY = {
    LimitedAction.THREAD_CREATE: "new threads",
    LimitedAction.MESSAGE_POST: "messages",
    LimitedAction.WS_TICKET: "WebSocket tickets",
    LimitedAction.API_KEY_CREATE: "new API keys",
}


def _refusal(action: str, rate: Rate, who: str) -> str:
    per = PERIOD_WORDS.get(rate[1], f"per {rate[1]} seconds")
    return f"Too many {TOO_MANY[LimitedAction(action)]}: the limit for {who} is {rate[0]} {per}. Try again in {{wait}}."


# A fixed statement: every limited request reads it (issue #21). A NULL key matches no row
# with a key.
_LIMITS_SQL = (
    f'SELECT api_key_id, "limit", period FROM {UsageLimit._meta.db_table} '
    "WHERE user_id = %s AND action = %s AND (api_key_id IS NULL OR api_key_id = %s)"
)


def action_buckets(action: str, *, user: Any, api_key_id: int | None = None) -> list[Bucket]:
    """The limits that apply to ``user`` doing ``action`` (with one of their API keys, when
    ``api_key_id`` is given): settings defaults, replaced by the studio's usage limits."""
    user_rate = settings.STUDIO_RATE_LIMITS.get(action)
    key_rate = settings.STUDIO_RATE_LIMITS_PER_KEY.get(action) if api_key_id else None
    with prepared_cursor() as cursor:
        cursor.execute(_LIMITS_SQL, [user.pk, action, api_key_id])
        rows = cursor.fetchall()
    for row_key, limit, period in rows:
        rate = None if limit is None else (int(limit), int(period))
        if row_key is None:
            user_rate = rate
        else:
            key_rate = rate
    buckets = []
    if user_rate is not None:
        who = "your account"
        buckets.append(
            Bucket(f"{action}:user:{user.pk}", user_rate, _refusal(action, user_rate, who))
        )
    if key_rate is not None:
        who = "this API key"
        buckets.append(
            Bucket(f"{action}:key:{api_key_id}", key_rate, _refusal(action, key_rate, who))
        )
    return buckets


def action_hit(action: str, *, user: Any, api_key_id: int | None = None) -> Hit:
    """Count one ``action`` for the user (and key); ``RateLimited`` when a limit is used up."""
    return hit(action_buckets(action, user=user, api_key_id=api_key_id))


# --- monthly spend budgets ---------------------------------------------------------------------


def month_start(now: datetime | None = None) -> datetime:
    now = timezone.localtime(now or timezone.now())
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def day(when: datetime) -> str:
    """A date as people write it in a refusal: "1 December 2026" (never ISO)."""
    return f"{when.day} {when:%B %Y}"


def next_month_start(now: datetime | None = None) -> datetime:
    start = month_start(now)
    return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)


# A fixed statement: every post to an idle thread reads both budgets (issue #21). A NULL
# owner matches no row.
_BUDGETS_SQL = (
    f"SELECT agent_id, monthly_limit_usd FROM {SpendBudget._meta.db_table} "
    "WHERE agent_id = %s OR user_id = %s"
)
_CENTS = Decimal("0.01")


def _usd(value: Any) -> Decimal | None:
    """A ``monthly_limit_usd`` as the cursor gave it (SQLite: a number), as the field's
    ``Decimal``."""
    if value is None or isinstance(value, Decimal):
        return value
    return Decimal(str(value)).quantize(_CENTS)


Budgets = tuple[Decimal | None, Decimal | None]


def budgets(owner_id: Any, agent_id: Any) -> Budgets:
    """(the owner's, the agent's) monthly limit; the settings' defaults where a row is
    missing. One query: every post to an idle thread reads both."""
    user_limit = settings.STUDIO_BUDGET_USER_MONTHLY_USD
    agent_limit = settings.STUDIO_BUDGET_AGENT_MONTHLY_USD
    with connection.cursor() as cursor:
        cursor.execute(_BUDGETS_SQL, [agent_id, owner_id])
        rows = cursor.fetchall()
    for row_agent, limit in rows:
        if row_agent is None:  # a user's row (each row is a user's or an agent's)
            user_limit = _usd(limit)
        else:
            agent_limit = _usd(limit)
    return user_limit, agent_limit


# ``budgets`` as columns of a statement that reads the thread as ``t``: a post reads them in
# the statement that locks its thread (``sessions.lock_for_post``), not in one of their own.
def budget_part(thread_alias: str) -> Part:
    """The budgets of a thread's owner and agent, as a part of a composed SELECT over the
    threads table aliased ``thread_alias`` (``budgets_from`` reads it back)."""
    table = SpendBudget._meta.db_table
    return Part(
        columns=(
            ("user_row", "budget_user.id"),
            ("user_limit", "budget_user.monthly_limit_usd"),
            ("agent_row", "budget_agent.id"),
            ("agent_limit", "budget_agent.monthly_limit_usd"),
        ),
        joins=(
            f"LEFT JOIN {table} budget_user ON budget_user.user_id = {thread_alias}.owner_id",
            f"LEFT JOIN {table} budget_agent ON budget_agent.agent_id = {thread_alias}.agent_id",
        ),
    )


def budgets_from(values: Mapping[str, Any]) -> Budgets:
    """``budgets`` from ``budget_part``'s values: a missing row is the setting."""
    return (
        settings.STUDIO_BUDGET_USER_MONTHLY_USD
        if values["user_row"] is None
        else _usd(values["user_limit"]),
        settings.STUDIO_BUDGET_AGENT_MONTHLY_USD
        if values["agent_row"] is None
        else _usd(values["agent_limit"]),
    )


def user_spend(user_id: Any, now: datetime | None = None) -> Decimal:
    """This month's spend on the user's threads (their subagents' threads included)."""
    return spend_since(month_start(now), threads_of=Q(owner_id=user_id))


def agent_spend(agent_id: Any, now: datetime | None = None) -> Decimal:
    """This month's spend on the threads the agent runs (a handoff moves a thread's spend)."""
    return spend_since(month_start(now), threads_of=Q(agent_id=agent_id))


@dataclass(frozen=True)
class _Scope:
    """One budget that applies to a new session: the owner's or the agent's."""

    kind: str  # "user" or "agent"
    pk: Any
    limit: Decimal
    who: Callable[[], str]  # read only for a refusal (issue #21: names cost queries)
    spend: Callable[[], Decimal]


def budget_check(
    thread: Thread, now: datetime | None = None, *, limits: Budgets | None = None
) -> None:
    """Raise ``RateLimited`` when the owner's or the agent's monthly budget is used up.

    Called where a new session would start (a post to an idle thread, continue), inside
    the transaction that queues the session. Each budget is a reservation: a lock per user
    and per agent serializes these checks until that transaction ends, and the sessions of
    the scope still running count ``STUDIO_BUDGET_SESSION_ESTIMATE_USD`` each on top of
    the spend. So concurrent starts overspend by at most one session's estimate (issue #36
    item 7; docs/security.md, "Budgets"). ``limits``: ``budgets`` of the thread, when the
    caller read them already."""
    user_limit, agent_limit = (
        budgets(thread.owner_id, thread.agent_id) if limits is None else limits
    )
    scopes: list[_Scope] = []
    if thread.owner_id is not None and user_limit is not None:
        owner_id = thread.owner_id
        scopes.append(
            _Scope(
                "user",
                owner_id,
                user_limit,
                lambda: f"the account {thread.owner.get_username()}",  # type: ignore[union-attr]
                lambda: user_spend(owner_id, now),
            )
        )
    if agent_limit is not None:
        agent_id = thread.agent_id
        scopes.append(
            _Scope(
                "agent",
                agent_id,
                agent_limit,
                lambda: f"the agent “{thread.agent.title or thread.agent.name}”",
                lambda: agent_spend(agent_id, now),
            )
        )
    if not scopes:
        return
    with transaction.atomic():  # the locks last as long as the caller's transaction
        for scope in scopes:  # always the user's first: two checks never wait on each other
            _lock_scope(scope)
        for scope in scopes:
            spent = scope.spend()
            running = _running_sessions(scope, exclude_thread=thread.pk)
            if spent + running * settings.STUDIO_BUDGET_SESSION_ESTIMATE_USD >= scope.limit:
                raise _budget_refusal(scope, spent, running, now)


def _lock_scope(scope: _Scope) -> None:
    """Hold the scope's budget lock until the transaction ends (PostgreSQL: an advisory
    transaction lock; SQLite runs every write transaction alone, ``IMMEDIATE``)."""
    if connection.vendor != "postgresql":
        return
    digest = hashlib.sha256(f"studio-budget:{scope.kind}:{scope.pk}".encode()).digest()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s)", [int.from_bytes(digest[:8], "big", signed=True)]
        )


def _running_sessions(scope: _Scope, *, exclude_thread: Any) -> int:
    """The scope's sessions that may still spend: queued, running, or parked on a tool call."""
    threads = Q(thread__owner_id=scope.pk) if scope.kind == "user" else Q(thread__agent_id=scope.pk)
    return (
        ThreadSession.objects.filter(threads, status__in=_SPENDING)
        .exclude(thread_id=exclude_thread)
        .count()
    )


_SPENDING = (
    ThreadSession.Status.QUEUED,
    ThreadSession.Status.RUNNING,
    ThreadSession.Status.PARKED,
)


def _budget_refusal(
    scope: _Scope, spent: Decimal, running: int, now: datetime | None
) -> RateLimited:
    since = month_start(now)
    if spent < scope.limit:
        # Taken by sessions still running: worth trying again once they have finished.
        sessions = "session" if running == 1 else "sessions"
        return RateLimited(
            f"The monthly spend budget of ${scope.limit:.2f} for {scope.who()} is taken: "
            f"${spent:.2f} spent since {day(since)}, and {running} {sessions} still "
            "running may spend the rest. Try again when they have finished.",
            retry_after=RUNNING_RETRY_SECONDS,
        )
    resume = next_month_start(now)
    wait = (resume - (now or timezone.now())).total_seconds()
    return RateLimited(
        f"The monthly spend budget of ${scope.limit:.2f} for {scope.who()} is used up "
        f"(${spent:.2f} spent since {day(since)}). New sessions start again on "
        f"{day(resume)} at midnight ({resume.tzname()}), or when an operator raises the budget.",
        retry_after=math.ceil(wait),
    )


# The Retry-After of a budget held by running sessions (they usually end within a minute).
RUNNING_RETRY_SECONDS = 60
