"""Limits, quotas and budgets (issue 14, item 7; spec §9.3: rate-limit creation and execution).

Every refusal is a 429 whose JSON body and ``Retry-After`` header say how long to wait.
alice and bob are ordinary users; ops is staff.
"""

from __future__ import annotations

import re
import threading
import time
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection, connections
from django.test import Client, RequestFactory

from agents_app.base.errors import RateLimited
from agents_app.models import Log, QueuedMessage, SpendBudget, ThreadSession, UsageLimit
from agents_app.services.access import limits
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import ApiClient, define_agent

pytestmark = pytest.mark.django_db

TICKET = ("/api/auth/websocket-ticket", {"pathname": "/api/threads/x/stream"})


def key_client(user: Any, name: str = "k") -> tuple[ApiClient, int]:
    row, raw = api_key_create(user=user, name=name)
    return ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw}"), row.pk


def assert_429(response: Any, *words: str) -> int:
    """A JSON 429 with the same positive wait in the header and the body; returns the wait."""
    assert response.status_code == 429, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    wait = int(response["Retry-After"])
    assert wait >= 1 and body["retry_after"] == wait
    for word in words:
        assert word in body["error"], body["error"]
    return wait


def signed_in(user: Any) -> ApiClient:
    """A browser session (only a signed-in person creates API keys)."""
    client = ApiClient()
    client.force_login(user)
    return client


def no_rates(**only: tuple[int, int] | None) -> dict[str, tuple[int, int] | None]:
    base: dict[str, tuple[int, int] | None] = dict.fromkeys(
        ["thread_create", "message_post", "ws_ticket", "api_key_create"]
    )
    return {**base, **only}


# --- each limited action ------------------------------------------------------------------


@pytest.fixture
def do(as_: Any, thread_of: Any, agent: str) -> Any:
    """``do(action, user)``: one request of that action as ``user`` (API key)."""
    threads: dict[int, Any] = {}

    def run(action: str, user: Any) -> Any:
        client = as_(user)
        if action == "thread_create":
            return client.post_json("/api/threads", {"agent_id": agent})
        if action == "message_post":
            thread = threads.get(user.pk) or threads.setdefault(user.pk, thread_of(user))
            return client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"})
        if action == "ws_ticket":
            return client.post_json(*TICKET)
        return signed_in(user).post_json("/api/api-keys", {"name": "another"})

    return run


@pytest.mark.parametrize("action", ["thread_create", "message_post", "ws_ticket", "api_key_create"])
def test_spec_each_limited_action_answers_429_json_with_retry_after(
    action: str, settings: Any, do: Any, alice: Any, bob: Any
) -> None:
    settings.STUDIO_RATE_LIMITS = no_rates(**{action: (2, 60)})
    settings.STUDIO_RATE_LIMITS_PER_KEY = no_rates()
    statuses = [do(action, alice).status_code for _ in range(2)]
    assert all(status in (200, 201, 202) for status in statuses), statuses
    assert_429(do(action, alice), "Too many", "your account", "2 per minute")
    assert do(action, bob).status_code in (200, 201, 202)  # bob's count is his own


def test_refused_request_stores_nothing(
    settings: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    settings.STUDIO_RATE_LIMITS = no_rates(message_post=(1, 60))
    url = f"/api/threads/{thread.pk}/messages"
    assert as_(alice).post_json(url, {"content": "one"}).status_code == 202
    assert_429(as_(alice).post_json(url, {"content": "two"}))
    assert QueuedMessage.objects.filter(thread=thread).count() + thread.messages.count() == 1


def test_failed_operation_gives_its_count_back(
    settings: Any, as_: Any, alice: Any, agent: str
) -> None:
    settings.STUDIO_RATE_LIMITS = no_rates(thread_create=(1, 60))
    for _ in range(3):
        assert as_(alice).post_json("/api/threads", {"agent_id": "nope"}).status_code == 404
    assert as_(alice).post_json("/api/threads", {"agent_id": agent}).status_code == 200
    assert_429(as_(alice).post_json("/api/threads", {"agent_id": agent}))


# --- per key and per user -------------------------------------------------------------------


def test_per_key_limit_counts_one_key_and_user_limit_counts_every_credential(
    settings: Any, alice: Any, bob: Any
) -> None:
    settings.STUDIO_RATE_LIMITS = no_rates(ws_ticket=(5, 60))
    settings.STUDIO_RATE_LIMITS_PER_KEY = no_rates(ws_ticket=(2, 60))
    first, _ = key_client(alice, "first")
    second, _ = key_client(alice, "second")
    for client in (first, second):
        assert [client.post_json(*TICKET).status_code for _ in range(2)] == [200, 200]
        assert_429(client.post_json(*TICKET), "this API key", "2 per minute")
    browser = ApiClient()
    browser.force_login(alice)
    assert browser.post_json(*TICKET).status_code == 200  # the account's 5th
    assert_429(browser.post_json(*TICKET), "your account", "5 per minute")
    bobs, _ = key_client(bob)
    assert bobs.post_json(*TICKET).status_code == 200


def test_studio_usage_limits_override_settings_per_user_and_per_key(
    settings: Any, alice: Any, bob: Any
) -> None:
    settings.STUDIO_RATE_LIMITS = no_rates(ws_ticket=(3, 60))
    settings.STUDIO_RATE_LIMITS_PER_KEY = no_rates()
    alices, alice_key = key_client(alice)
    other, _ = key_client(alice, "other")
    UsageLimit.objects.create(user=alice, action="ws_ticket", limit=None)  # no limit for alice
    UsageLimit.objects.create(
        user=alice, api_key_id=alice_key, action="ws_ticket", limit=1, period=3600
    )
    assert alices.post_json(*TICKET).status_code == 200
    wait = assert_429(alices.post_json(*TICKET), "this API key", "1 per hour")
    assert 60 < wait <= 2 * 3600
    assert [other.post_json(*TICKET).status_code for _ in range(5)] == [200] * 5
    bobs, _ = key_client(bob)
    assert [bobs.post_json(*TICKET).status_code for _ in range(3)] == [200] * 3
    assert_429(bobs.post_json(*TICKET), "your account")


def test_limit_of_zero_refuses_the_action(settings: Any, as_: Any, alice: Any) -> None:
    UsageLimit.objects.create(user=alice, action="api_key_create", limit=0, period=86400)
    assert_429(
        signed_in(alice).post_json("/api/api-keys", {"name": "x"}), "new API keys", "0 per day"
    )


def test_limits_fail_open_when_the_cache_is_unreachable(
    settings: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    settings.STUDIO_RATE_LIMITS = no_rates(message_post=(1, 60))
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
        }
    }
    url = f"/api/threads/{thread.pk}/messages"
    assert [as_(alice).post_json(url, {"content": "hi"}).status_code for _ in range(2)] == [202] * 2
    assert _api_login(Client(), "pw-for-tests-1").status_code == 200


# --- the sliding window ---------------------------------------------------------------------


def test_sliding_window_has_no_double_burst_at_the_window_edge() -> None:
    bucket = limits.Bucket("edge-test", (2, 60), "wait {wait}")
    limits.hit([bucket], now=60 * 1000 + 59)
    limits.hit([bucket], now=60 * 1000 + 59.5)
    # A fixed window would reset here and let 2 more through at once.
    with pytest.raises(RateLimited) as refused:
        limits.hit([bucket], now=60 * 1001 + 1)
    assert refused.value.retry_after == 29  # the previous window's weight falls to 1 at +30 s
    with pytest.raises(RateLimited):
        limits.hit([bucket], now=60 * 1001 + 29.9)
    limits.hit([bucket], now=60 * 1001 + 30.5)


def test_refused_requests_do_not_extend_the_wait() -> None:
    bucket = limits.Bucket("hammer-test", (1, 60), "wait {wait}")
    limits.hit([bucket], now=6000.0)
    deadlines = set()
    for second in range(1, 100, 7):
        with pytest.raises(RateLimited) as refused:
            limits.hit([bucket], now=6000.0 + second)
        deadlines.add(6000 + second + refused.value.retry_after)
    assert deadlines == {6120}  # hammering never moves the moment it opens again
    limits.hit([bucket], now=6120.0)


@pytest.mark.parametrize(
    ("prev", "curr", "elapsed", "expected"),
    [(0, 2, 0, 90.0), (2, 0, 30, 0.0), (2, 1, 0, 60.0), (4, 0, 10, 35.0), (0, 0, 0, 0.0)],
)
def test_seconds_until_allowed(prev: int, curr: int, elapsed: float, expected: float) -> None:
    assert limits.seconds_until_allowed((2, 60), prev, curr, elapsed) == pytest.approx(expected)


# --- sign-in: API and both HTML forms, per account and per address --------------------------


def _api_login(client: Client, password: str, addr: str = "10.0.0.1") -> Any:
    return client.post(
        "/api/auth/login",
        {"username": "alice", "password": password},
        "application/json",
        REMOTE_ADDR=addr,
    )


def _form_login(client: Client, url: str, password: str, addr: str = "10.0.0.1", **kw: Any) -> Any:
    return client.post(url, {"username": "alice", "password": password}, REMOTE_ADDR=addr, **kw)


def test_html_login_forms_share_the_api_login_limit_per_account(settings: Any, alice: Any) -> None:
    settings.STUDIO_LOGIN_RATE_PER_ACCOUNT = (3, 900)
    settings.STUDIO_LOGIN_RATE_PER_ADDRESS = None
    assert _api_login(Client(), "wrong", "10.0.0.1").status_code == 401
    assert _form_login(Client(), "/login/", "wrong", "10.0.0.2").status_code == 200
    assert _form_login(Client(), "/admin/login/", "wrong", "10.0.0.3").status_code == 200
    # From a fourth address, even the right password is refused now.
    chat = _form_login(Client(), "/login/", "pw-for-tests-1", "10.0.0.4")
    assert chat.status_code == 429 and int(chat["Retry-After"]) >= 1
    assert b"Too many sign-in attempts" in chat.content
    assert "_auth_user_id" not in chat.wsgi_request.session
    studio = _form_login(Client(), "/admin/login/", "pw-for-tests-1", "10.0.0.5")
    assert studio.status_code == 429 and b"Too many sign-in attempts" in studio.content
    assert_429(_api_login(Client(), "pw-for-tests-1", "10.0.0.6"), "Too many sign-in attempts")


def test_login_limit_per_address_counts_any_account(settings: Any, alice: Any, bob: Any) -> None:
    settings.STUDIO_LOGIN_RATE_PER_ADDRESS = (2, 300)
    settings.STUDIO_LOGIN_RATE_PER_ACCOUNT = None
    client = Client()
    for name in ("alice", "bob"):
        body = {"username": name, "password": "wrong"}
        assert client.post("/login/", body, REMOTE_ADDR="10.1.1.1").status_code == 200
    assert (
        client.post(
            "/login/", {"username": "carol", "password": "x"}, REMOTE_ADDR="10.1.1.1"
        ).status_code
        == 429
    )
    assert _form_login(Client(), "/login/", "wrong", "10.1.1.2").status_code == 200


def test_successful_logins_do_not_count(settings: Any, ops: Any) -> None:
    settings.STUDIO_LOGIN_RATE_PER_ADDRESS = (2, 300)
    settings.STUDIO_LOGIN_RATE_PER_ACCOUNT = (2, 300)
    for _ in range(5):
        response = Client().post(
            "/admin/login/?next=/admin/", {"username": "ops", "password": "pw-for-tests-1"}
        )
        assert response.status_code == 302, response.content


def test_forwarded_header_is_ignored_unless_configured(settings: Any, alice: Any) -> None:
    settings.STUDIO_LOGIN_RATE_PER_ADDRESS = (2, 300)
    settings.STUDIO_LOGIN_RATE_PER_ACCOUNT = None
    settings.STUDIO_TRUSTED_PROXY_HEADER = ""
    statuses = [
        _form_login(Client(), "/login/", "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(3)
    ]
    assert statuses == [200, 200, 429]  # a forged header does not buy fresh attempts


def test_trusted_proxy_header_keys_the_limit_by_the_real_client(settings: Any, alice: Any) -> None:
    settings.STUDIO_LOGIN_RATE_PER_ADDRESS = (2, 300)
    settings.STUDIO_LOGIN_RATE_PER_ACCOUNT = None
    settings.STUDIO_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    settings.STUDIO_TRUSTED_PROXY_COUNT = 1

    def attempt(forwarded: str) -> int:
        client = Client()
        return _form_login(
            client, "/login/", "wrong", "10.9.9.9", HTTP_X_FORWARDED_FOR=forwarded
        ).status_code

    # The client forges the left part; the proxy appended the real address on the right.
    assert [attempt(f"198.51.100.{i}, 203.0.113.7") for i in range(3)] == [200, 200, 429]
    assert attempt("203.0.113.8") == 200  # another client behind the same proxy


@pytest.mark.parametrize(
    ("header", "count", "forwarded", "remote", "expected"),
    [
        ("", 1, "1.2.3.4", "10.0.0.1", "10.0.0.1"),
        ("X-Forwarded-For", 1, "6.6.6.6, 1.2.3.4", "10.0.0.1", "1.2.3.4"),
        ("X-Forwarded-For", 2, "6.6.6.6, 1.2.3.4, 172.16.0.9", "10.0.0.1", "1.2.3.4"),
        ("X-Forwarded-For", 2, "1.2.3.4", "10.0.0.1", "10.0.0.1"),  # bypassed a proxy
        ("X-Forwarded-For", 1, "not-an-ip", "10.0.0.1", "10.0.0.1"),
        ("X-Real-IP", 1, "", "10.0.0.1", "10.0.0.1"),
        ("", 1, "", "2001:db8::1", "2001:db8::/64"),
        ("", 1, "", "::ffff:10.0.0.7", "10.0.0.7"),
    ],
)
def test_client_address(
    settings: Any, header: str, count: int, forwarded: str, remote: str, expected: str
) -> None:
    settings.STUDIO_TRUSTED_PROXY_HEADER = header
    settings.STUDIO_TRUSTED_PROXY_COUNT = count
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert limits.client_address(request) == expected


# --- monthly spend budgets ------------------------------------------------------------------


def spend(thread: Any, usd: str) -> None:
    Log.objects.create(thread=thread, cost_total=Decimal(usd))


def post(client: ApiClient, thread: Any, text: str = "hello") -> Any:
    return client.post_json(f"/api/threads/{thread.pk}/messages", {"content": text})


def test_user_budget_exceeded_stops_new_sessions_while_others_continue(
    as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("1.00"))
    alices, bobs = thread_of(alice), thread_of(bob)
    spend(alices, "0.60")
    spend(bobs, "5.00")
    assert post(as_(alice), alices).status_code == 202  # $0.60 of $1.00
    ThreadSession.objects.filter(thread=alices).update(status=ThreadSession.Status.COMPLETED)
    spend(alices, "0.40")
    refused = post(as_(alice), alices, "more")
    wait = assert_429(refused, "monthly spend budget of $1.00 for the account alice", "$1.00 spent")
    assert wait <= 31 * 86400
    # Dates as people write them, never ISO (issue #55 item 8).
    assert not re.search(r"\d{4}-\d\d-\d\d", refused.json()["error"]), refused.json()["error"]
    assert "at midnight" in refused.json()["error"]
    assert not QueuedMessage.objects.filter(thread=alices, content="more").exists()
    assert ThreadSession.objects.filter(thread=alices).count() == 1
    assert_429(as_(alice).post_json(f"/api/threads/{alices.pk}/continue"), "budget")
    assert post(as_(bob), bobs).status_code == 202  # bob has no budget


def test_settings_default_budget_and_studio_exemption(
    settings: Any, as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    settings.STUDIO_BUDGET_USER_MONTHLY_USD = Decimal("2")
    alices, bobs = thread_of(alice), thread_of(bob)
    spend(alices, "2.50")
    spend(bobs, "2.50")
    SpendBudget.objects.create(user=bob, monthly_limit_usd=None)  # bob is exempt
    assert_429(post(as_(alice), alices), "$2.00 for the account alice")
    assert post(as_(bob), bobs).status_code == 202


def test_agent_budget_stops_that_agent_only(as_: Any, alice: Any, thread_of: Any) -> None:
    from agents_app.models import Agent

    define_agent("other")
    helpers = thread_of(alice)
    others_response = as_(alice).post_json("/api/threads", {"agent_id": "other"})
    others = Agent.objects.get(name="other").threads.get(pk=others_response.json()["threadId"])
    SpendBudget.objects.create(agent=helpers.agent, monthly_limit_usd=Decimal("0.50"))
    spend(helpers, "0.50")
    # The agent's title, as the chat shows it, not its internal name (issue #55 item 8).
    Agent.objects.filter(pk=helpers.agent_id).update(title="Order helper")
    assert_429(post(as_(alice), helpers), "for the agent “Order helper”")
    assert post(as_(alice), others).status_code == 202


def test_both_budgets_are_read_in_one_query_with_the_settings_as_defaults(
    settings: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.STUDIO_BUDGET_USER_MONTHLY_USD = Decimal("7")
    settings.STUDIO_BUDGET_AGENT_MONTHLY_USD = Decimal("9")
    thread = thread_of(alice)
    SpendBudget.objects.create(user=bob, monthly_limit_usd=Decimal("1"))  # someone else's
    with CaptureQueriesContext(connection) as queries:
        assert limits.budgets(alice.pk, thread.agent_id) == (Decimal("7"), Decimal("9"))
    assert len(queries) == 1
    SpendBudget.objects.create(agent=thread.agent, monthly_limit_usd=Decimal("3"))
    SpendBudget.objects.create(user=alice, monthly_limit_usd=None)  # exempt
    assert limits.budgets(alice.pk, thread.agent_id) == (None, Decimal("3"))
    assert limits.budgets(None, thread.agent_id) == (Decimal("7"), Decimal("3"))
    SpendBudget.objects.filter(agent=thread.agent).update(monthly_limit_usd=Decimal("2.5"))
    _, agent_limit = limits.budgets(alice.pk, thread.agent_id)
    # As the field reads it, on either database: a Decimal with its two places.
    assert isinstance(agent_limit, Decimal) and str(agent_limit) == "2.50"


def test_last_months_spend_does_not_count(as_: Any, alice: Any, thread_of: Any) -> None:
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("1.00"))
    thread = thread_of(alice)
    start_us = int(limits.month_start().timestamp() * 1_000_000)
    Log.objects.create(thread=thread, cost_total=Decimal("9"), created_at=start_us - 1)
    assert post(as_(alice), thread).status_code == 202


def test_a_post_to_a_running_session_is_not_a_new_session(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("1.00"))
    thread = thread_of(alice)
    assert post(as_(alice), thread).status_code == 202  # queued session
    spend(thread, "3")
    assert post(as_(alice), thread, "while it runs").status_code == 202


# --- budgets reserve atomically (issue #36 item 7) ----------------------------------------------


class Gate:
    """Holds each post that passed the budget check, inside its transaction, until every
    other post has also passed it, is waiting on a database lock, or has its answer: what
    a check that is not atomic lets through then shows, without any timing."""

    def __init__(self, posts: int) -> None:
        self.pids: dict[int, int] = {}  # worker index -> its connection's backend pid
        self.passed: set[int] = set()
        self.answered: set[int] = set()
        self.lock = threading.Lock()
        self.ready = threading.Barrier(posts)

    def join(self, index: int) -> None:
        """In a worker: note its connection, then wait for the others (posts start together)."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            self.pids[index] = cursor.fetchone()[0]
        self.ready.wait(timeout=60)

    def hold(self) -> None:
        """Called after the check passed: wait until no other post can still reach it unseen."""
        mine = self._mine()
        with self.lock:
            self.passed.add(mine)
        deadline = time.monotonic() + 60
        while not self._others_settled(mine):
            assert time.monotonic() < deadline, "the other posts never settled"
            time.sleep(0.005)  # polling pg_stat_activity, the thing waited on

    def _mine(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        return next(i for i, p in self.pids.items() if p == pid)

    def _others_settled(self, mine: int) -> bool:
        others = {i: p for i, p in self.pids.items() if i != mine}
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s) AND wait_event_type = 'Lock'",
                [list(others.values())],
            )
            waiting = {pid for (pid,) in cursor.fetchall()}
        with self.lock:
            done = self.passed | self.answered
        return all(i in done or p in waiting for i, p in others.items())


@pytest.mark.django_db(transaction=True)
def test_budget_reservation_is_atomic(
    settings: Any, alice: Any, thread_of: Any, monkeypatch: Any
) -> None:
    """$3 budget, $2 spent, three posts at once to three idle threads: one session starts,
    the other two are refused (the first one's estimate, $1 by default, takes the rest)."""
    from agents_app.services.sessions import lifecycle as sessions

    if connections["default"].vendor != "postgresql":
        # SQLite serializes writers, so three posts cannot race; the gate names each by
        # PostgreSQL's pg_backend_pid().
        pytest.skip("a race between three connections needs PostgreSQL (the test command's)")

    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("3.00"))
    threads = [thread_of(alice) for _ in range(3)]
    spend(threads[0], "2.00")
    clients = [key_client(alice, f"k{i}")[0] for i in range(3)]
    gate = Gate(3)
    request_session = sessions.session_request

    def held(*args: Any, **kwargs: Any) -> Any:
        gate.hold()
        return request_session(*args, **kwargs)

    monkeypatch.setattr(sessions, "session_request", held)
    # The gate knows each worker by its connection's backend pid, so that connection must
    # last the whole post. Django's test client unhooks close_old_connections around each
    # request through the process-wide signal, so with three clients at once one thread can
    # re-hook it while another starts its request: with CONN_MAX_AGE 0 that closed the
    # second thread's connection, its new pid was unknown to the gate, and the posts waited
    # on each other unseen (a CI failure). Connections made from here on never expire.
    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", None)
    answers: dict[int, Any] = {}

    def worker(index: int) -> None:
        try:
            gate.join(index)
            answers[index] = post(clients[index], threads[index], f"post {index}")
        finally:
            with gate.lock:
                gate.answered.add(index)
            connections.close_all()  # this thread's own connection

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    statuses = sorted(a.status_code for a in answers.values())
    assert statuses == [202, 429, 429], [a.content for a in answers.values()]
    assert ThreadSession.objects.count() == 1
    for refused in (a for a in answers.values() if a.status_code == 429):
        wait = assert_429(
            refused, "$3.00 for the account alice is taken", "1 session still running"
        )
        assert wait == limits.RUNNING_RETRY_SECONDS


def test_a_running_session_holds_its_estimate_until_it_ends(
    settings: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    settings.STUDIO_BUDGET_SESSION_ESTIMATE_USD = Decimal("0.50")
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("3.00"))
    first, second, third, fourth = (thread_of(alice) for _ in range(4))
    spend(first, "2.00")
    assert post(as_(alice), first).status_code == 202  # $2.00 + nothing running
    assert post(as_(alice), second).status_code == 202  # $2.00 + $0.50 < $3.00
    assert_429(post(as_(alice), third), "is taken", "2 sessions still running")
    ThreadSession.objects.filter(thread=first).update(status=ThreadSession.Status.COMPLETED)
    assert post(as_(alice), third).status_code == 202  # the first ended: its estimate is free
    ThreadSession.objects.update(status=ThreadSession.Status.COMPLETED)
    spend(second, "1.00")
    assert_429(post(as_(alice), fourth), "is used up", "$3.00 spent")


# --- the studio pages -----------------------------------------------------------------------


def test_studio_usage_limit_pages_render_and_save(
    settings: Any, client: Client, ops: Any, alice: Any, bob: Any
) -> None:
    client.force_login(ops)
    assert client.get("/admin/agents_app/usagelimit/add/").status_code == 200
    response = client.post(
        "/admin/agents_app/usagelimit/add/",
        {"user": alice.pk, "api_key": "", "action": "message_post", "limit": "7", "period": "3600"},
    )
    assert response.status_code == 302, response.content
    row = UsageLimit.objects.get(user=alice)
    assert (row.action, row.limit, row.period) == ("message_post", 7, 3600)
    assert b"alice" in client.get("/admin/agents_app/usagelimit/").content
    # A key of bob's cannot carry a limit for alice; a duplicate is refused with a reason.
    bobs_key, _ = api_key_create(user=bob, name="bobs")
    wrong = client.post(
        "/admin/agents_app/usagelimit/add/",
        {
            "user": alice.pk,
            "api_key": bobs_key.pk,
            "action": "ws_ticket",
            "limit": "1",
            "period": "60",
        },
    )
    assert wrong.status_code == 200 and b"belongs to bob" in wrong.content
    duplicate = client.post(
        "/admin/agents_app/usagelimit/add/",
        {"user": alice.pk, "api_key": "", "action": "message_post", "limit": "1", "period": "60"},
    )
    assert duplicate.status_code == 200 and b"already has a limit" in duplicate.content
    assert client.get(f"/admin/agents_app/usagelimit/{row.pk}/change/").status_code == 200


def test_studio_spend_budget_pages_render_and_save(
    client: Client, ops: Any, alice: Any, thread_of: Any
) -> None:
    client.force_login(ops)
    spend(thread_of(alice), "1.25")
    assert client.get("/admin/agents_app/spendbudget/add/").status_code == 200
    saved = client.post(
        "/admin/agents_app/spendbudget/add/",
        {"user": alice.pk, "agent": "", "monthly_limit_usd": "10.50"},
    )
    assert saved.status_code == 302, saved.content
    assert SpendBudget.objects.get(user=alice).monthly_limit_usd == Decimal("10.50")
    listing = client.get("/admin/agents_app/spendbudget/").content
    assert b"user alice" in listing and b"1.25" in listing
    neither = client.post(
        "/admin/agents_app/spendbudget/add/", {"user": "", "agent": "", "monthly_limit_usd": "1"}
    )
    assert neither.status_code == 200 and b"exactly one" in neither.content
    index = client.get("/admin/").content
    assert b"Usage limits" in index and b"Spend budgets" in index


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (1, "1 second"),
        (45, "45 seconds"),
        (87, "about a minute"),
        (150, "about 2 minutes"),
        (3599, "about an hour"),
        (5400, "about 2 hours"),
    ],
)
def test_a_wait_reads_as_a_person_says_it(seconds: int, words: str) -> None:
    """Issue #40 item 11: "1 per minute … try again in 87 seconds" read as a contradiction."""
    assert limits.wait_words(seconds) == words
