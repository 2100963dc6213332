"""Outbound webhooks to a real local HTTP receiver: signed deliveries of a session's events,
retries until a failing receiver answers, nothing duplicated (docs/automation.md)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents_app.base.errors import Invalid
from agents_app.bridge import async_commit
from agents_app.models import EnvValue, WebhookDelivery
from agents_app.orchestration import webhook_runner
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.automation import schedules, webhooks
from agents_app.services.threads import messages as message_service
from runtime.core import egress
from tests.agents_app.api.api_support import _api_hosts, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-test-0123456789"


class Receiver:
    """A local HTTP server that records every request and answers from ``codes`` (then 200)."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = list(codes)
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with owner.lock:
                    owner.requests.append((dict(self.headers), body))
                    code = owner.codes.pop(0) if owner.codes else 200
                self.send_response(code)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver_factory() -> Iterator[Any]:
    # The receiver listens on loopback, which the suite's egress policy allows
    # (STUDIO_EGRESS_ALLOW in tests/conftest.py).
    made: list[Receiver] = []

    def make(codes: list[int] | None = None) -> Receiver:
        made.append(Receiver(codes or []))
        return made[-1]

    yield make
    for receiver in made:
        receiver.server.shutdown()


def wait_until(check: Any, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _verify(headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does (the snippet in docs/automation.md)."""
    stamp = headers["Webhook-Timestamp"]
    expected = hmac.new(SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("v1=" + expected.hexdigest(), headers["Webhook-Signature"])


def _subscribe(url: str, events: list[str], owner: Any) -> Any:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    row.value = SECRET
    row.save()
    return webhooks.subscription_create(
        owner=owner, url=url, secret_env="HOOK_SECRET", events=events, agent_name="helper"
    )


def _run_session(user: Any) -> Any:
    thread = thread_create(user=user, agent_name="helper")
    message_service.message_post(thread=thread, role="user", content="hello")
    session = thread.sessions.get()

    async def run() -> None:
        try:
            await run_session_job(str(session.pk))
        finally:  # the engine's connection on this loop
            await async_commit.close()

    # On a thread and loop of its own: run on this thread (async_to_sync or a loop here),
    # it left this thread's asyncio and asgiref state such that a later test's
    # database_sync_to_async never ran (test_mcp_server_cancel waited forever).
    runner = threading.Thread(target=lambda: asyncio.run(run()), name="webhook-test-session")
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the session did not finish"
    return thread, session


def test_a_receiver_answering_500_three_times_gets_the_fourth_attempt(
    alice: Any, settings: Any, receiver_factory: Any
) -> None:
    settings.STUDIO_WEBHOOK_RETRY_BASE_SECONDS = 0
    define_agent("helper")
    receiver = receiver_factory([500, 500, 500])
    subscription = _subscribe(receiver.url, ["schedule.run_failed"], alice)
    schedule = schedules.schedule_create(
        owner=alice, agent_name="helper", message="hi", interval_seconds=3600
    )
    [delivery_id] = webhooks.record_event(
        subscription.agent_id,
        "schedule.run_failed",
        "run-1",
        {"error": "budget", "scheduleId": str(schedule.pk)},
    )
    statuses = []
    while (row := WebhookDelivery.objects.get(pk=delivery_id)).status == "pending":
        statuses.append(webhook_runner.sweep() and row.status)
    row = WebhookDelivery.objects.get(pk=delivery_id)
    assert row.status == "delivered" and row.attempts == 4 and row.response_code == 200
    ids = {headers["Webhook-Id"] for headers, _ in receiver.requests}
    assert ids == {delivery_id} and len(receiver.requests) == 4
    assert all(_verify(h, b) for h, b in receiver.requests)
    # Claimed once per attempt: a delivered row is not sent again by a late sweep or task.
    assert webhook_runner.deliver(delivery_id) is None and webhook_runner.sweep() == 0
    assert len(receiver.requests) == 4
    webhooks.redeliver(delivery_id)
    webhook_runner.sweep()
    assert len(receiver.requests) == 5


def test_a_subscription_needs_a_known_event_a_secret_and_an_http_url(
    alice: Any, settings: Any
) -> None:
    egress.configure([])  # the production default: no private receivers
    define_agent("helper")
    with pytest.raises(Invalid, match="events"):
        webhooks.subscription_create(
            owner=alice, url="https://x.example/h", secret_env="S", events=["boom"]
        )
    with pytest.raises(Invalid, match="no env value named S"):
        webhooks.subscription_create(
            owner=alice, url="https://x.example/h", secret_env="S", events=["session.failed"]
        )
    for url in ("ftp://x.example/h", "http://user:pw@x.example/h", "http://127.0.0.1:9/h"):
        with pytest.raises(Invalid, match="url"):
            webhooks.subscription_create(
                owner=alice, url=url, secret_env="S", events=["session.failed"]
            )


def test_the_api_and_studio_list_deliveries_and_redeliver(
    admin_user: Any, admin_client: Any, receiver_factory: Any
) -> None:
    from tests.agents_app.api.api_support import client_for

    define_agent("helper")
    receiver = receiver_factory([500])
    client = client_for(admin_user)
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    row.value = SECRET
    row.save()
    created = client.post_json(
        "/api/webhooks",
        {"url": receiver.url, "secretEnv": "HOOK_SECRET", "events": ["session.failed"]},
    )
    assert created.status_code == 201, created.content
    assert SECRET not in created.content.decode()
    hook = created.json()["id"]
    thread = thread_create(user=admin_user, agent_name="helper")
    [delivery] = webhooks.record_event(
        thread.agent_id, "session.failed", "s-1", {"error": "x", "threadId": str(thread.pk)}
    )
    webhook_runner.deliver(delivery)
    listed = client.get(f"/api/webhooks/{hook}/deliveries").json()["deliveries"]
    assert [(d["status"], d["attempts"], d["responseCode"]) for d in listed] == [
        ("pending", 1, 500)
    ]
    page = admin_client.get("/admin/agents_app/webhookdelivery/").content.decode()
    assert "session.failed" in page and "500" in page and SECRET not in page
    WebhookDelivery.objects.filter(pk=delivery).update(status="failed")
    again = client.post_json(f"/api/webhooks/{hook}/deliveries/{delivery}/redeliver")
    assert again.status_code == 200 and again.json()["status"] == "pending"
    wait_until(lambda: WebhookDelivery.objects.get(pk=delivery).status == "delivered", "redelivery")
    assert {h["Webhook-Id"] for h, _ in receiver.requests} == {delivery}
    bad = client.post_json(
        "/api/webhooks",
        {"url": "ftp://x", "secretEnv": "HOOK_SECRET", "events": ["session.failed"]},
    )
    assert bad.status_code == 400 and "url" in bad.json()["error"]


def test_a_session_end_with_no_subscription_costs_one_query(alice: Any) -> None:
    """Most instances subscribe to nothing: a session's end then asks one indexed question
    and reads nothing of its thread (it read the thread and its agent first before)."""
    define_agent("helper", [{"content": "done"}])
    thread = thread_create(user=alice, agent_name="helper")
    with CaptureQueriesContext(connection) as queries:
        webhook_runner.session_ended(str(thread.pk), str(thread.pk), "completed", "")
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1, statements
    assert "agents_app_webhooksubscription" in statements[0]


def test_a_session_end_the_release_found_subscribed_does_not_ask_again(
    alice: Any, receiver_factory: Any
) -> None:
    """The release reads whether any subscription is active in its own statement
    (``sessions.Released.webhooks``); the events then record without asking it again."""
    define_agent("helper", [{"content": "done"}])
    _subscribe(receiver_factory().url, ["session.finished"], alice)
    thread = thread_create(user=alice, agent_name="helper")

    def ended(**kwargs: Any) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            webhook_runner.session_ended(
                str(thread.pk), str(uuid.uuid4()), "completed", "", **kwargs
            )
        return [q["sql"] for q in queries.captured_queries]

    asked = ended()
    told = ended(known_active=True)
    probe = [s for s in asked if s not in told and "webhooksubscription" in s]
    assert len(probe) == 1 and "active" in probe[0], (asked, told)
    assert len(told) == len(asked) - 1, (asked, told)
    assert WebhookDelivery.objects.filter(event="session.finished").count() == 2
