"""A ``session.failed`` webhook says why the session failed (issue #52): a session whose model
request failed was delivered with ``"error": ""`` (the error was filled only when a session
crashed). Asserted on the body a real local receiver got."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agents_app.bridge import async_commit
from agents_app.models import EnvValue, ThreadSession, WebhookDelivery
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.threads import messages as message_service
from tests.agents_app.api.api_support import _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# An instance secret the vendor's error quotes back (as vendors do with a refused key).
PLANTED = "sk-planted-vendor-key-0123456789"


class Receiver:
    """A local HTTP receiver that records each body and answers 200."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.bodies.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.server.shutdown()
    made.server.server_close()


def _run_session(session: ThreadSession) -> None:
    async def run() -> None:
        try:
            await run_session_job(str(session.pk))
        finally:  # the engine's connection on this loop
            await async_commit.close()

    # On a thread and loop of its own, as tests/agents_app/orchestration/test_webhooks.py
    # does (asgiref's state on this thread stays as later tests need it).
    runner = threading.Thread(target=lambda: asyncio.run(run()), name="failed-session-test")
    runner.start()
    runner.join(60)
    assert not runner.is_alive(), "the session did not finish"


def test_a_session_whose_model_request_failed_sends_its_reason_in_session_failed(
    admin_user: Any, receiver: Receiver
) -> None:
    refusal = f"Incorrect API key provided: {PLANTED}"
    define_agent("helper", [{"error": {"message": refusal, "status": 401}}])
    for key, value in (("HOOK_SECRET", "whsec-failed-0123456789"), ("VENDOR_KEY", PLANTED)):
        row = EnvValue(scope=EnvValue.Scope.INSTANCE, key=key)
        row.value = value
        row.save()
    created = client_for(admin_user).post_json(
        "/api/webhooks",
        {"url": receiver.url, "secretEnv": "HOOK_SECRET", "events": ["session.failed"]},
    )
    assert created.status_code == 201, created.content
    thread = thread_create(user=admin_user, agent_name="helper")
    message_service.message_post(thread=thread, role="user", content="hello")
    session = thread.sessions.get()

    _run_session(session)

    row = ThreadSession.objects.get(pk=session.pk)
    assert row.status == "failed"
    # The session row keeps the failure's detail redacted too (its progress and its error).
    assert "[REDACTED" in json.dumps(row.progress) and PLANTED not in json.dumps(row.progress)
    assert PLANTED not in row.error
    deadline = time.monotonic() + 30  # the delivery is sent by a thread after the commit
    while not receiver.bodies:
        assert time.monotonic() < deadline, WebhookDelivery.objects.values("status", "error")
        time.sleep(0.05)
    [body] = receiver.bodies
    assert body["event"] == "session.failed" and body["sessionId"] == str(session.pk)
    # The provider error's code and message, redacted as the thread's own texts are.
    error = body["error"]
    assert (
        error.startswith("authentication: ") and "Incorrect API key provided: [REDACTED]" in error
    )
    assert PLANTED not in json.dumps(body)
    failed = thread.messages.get(role="assistant")
    assert failed.status == "failed" and PLANTED not in json.dumps(failed.metadata)
    assert failed.metadata["error"]["message"] in error
