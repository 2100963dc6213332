"""A webhook attempt is bounded (issue #52, docs/automation.md "Retries"): one deadline,
``STUDIO_WEBHOOK_TIMEOUT_SECONDS``, for connecting, sending and the whole answer, and at most
a few KiB of the answer's body read. Each test runs a real receiver on 127.0.0.1 that answers
slowly or at length and records how much of its answer it got out before the client hung up:
the attempt is over when the receiver sees the connection closed, long before its answer is.

No test asserts on elapsed time: each receiver would take far longer than the deadline to
finish, so "the client closed first" is what shows the bound."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.models import EnvValue, WebhookDelivery
from agents_app.orchestration import embedded_automation, periodic, schedule_runner, webhook_runner
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.automation import webhooks
from tests.agents_app.api.api_support import _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-bounds-0123456789"
# Generous waits for background threads to report; never compared with elapsed time.
PATIENCE = 120.0


class SlowReceiver:
    """Reads a request, then sends ``answer``: its first ``at_once`` bytes straight away, the
    rest one byte every ``drip`` seconds, stopping when the client closes the connection.
    ``sent`` counts the bytes that went out; ``hung_up`` says the client closed first."""

    def __init__(self, answer: bytes, *, at_once: int, drip: float = 1.0) -> None:
        self.answer, self.at_once, self.drip = answer, at_once, drip
        self.sent = 0
        self.hung_up = False
        self.answering = threading.Event()  # the request was read; the answer has begun
        self.done = threading.Event()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    owner._answer(self.request)
                finally:
                    owner.done.set()

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _answer(self, sock: socket.socket) -> None:
        _read_request(sock)
        self.answering.set()
        try:
            for start in range(0, self.at_once, 65536):
                chunk = self.answer[start : min(start + 65536, self.at_once)]
                sock.sendall(chunk)
                self.sent += len(chunk)
            for position in range(self.at_once, len(self.answer)):
                if _closed_within(sock, self.drip):
                    self.hung_up = True
                    return
                sock.sendall(self.answer[position : position + 1])
                self.sent += 1
        except OSError:  # the client reset the connection while we were sending
            self.hung_up = True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _read_request(sock: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the client closed the connection in the next ``seconds`` (it sends nothing
    more after its request, so a readable socket means end of stream or a reset)."""
    readable, _, _ = select.select([sock], [], [], seconds)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


@pytest.fixture
def receivers() -> Iterator[Any]:
    made: list[SlowReceiver] = []

    def make(answer: bytes, *, at_once: int, drip: float = 1.0) -> SlowReceiver:
        made.append(SlowReceiver(answer, at_once=at_once, drip=drip))
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


def _delivery_to(url: str, owner: Any) -> str:
    """A due ``session.failed`` delivery of one of ``owner``'s threads to ``url``."""
    define_agent("helper")
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    row.value = SECRET
    row.save()
    created = client_for(owner).post_json(
        "/api/webhooks", {"url": url, "secretEnv": "HOOK_SECRET", "events": ["session.failed"]}
    )
    assert created.status_code == 201, created.content
    thread = thread_create(user=owner, agent_name="helper")
    payload = {"agent": "helper", "threadId": str(thread.pk), "status": "failed", "error": "x"}
    [delivery_id] = webhooks.record_event(thread.agent_id, "session.failed", "s-1", payload)
    return delivery_id


def _assert_failed_at_the_deadline(delivery_id: str, receiver: SlowReceiver) -> None:
    row = WebhookDelivery.objects.get(pk=delivery_id)
    assert (row.status, row.attempts, row.response_code) == ("pending", 1, None)
    assert row.error == "no complete answer within 2 s"
    assert receiver.done.wait(PATIENCE), "the receiver never finished"
    assert receiver.hung_up and receiver.sent < len(receiver.answer), (
        receiver.sent,
        len(receiver.answer),
    )


def test_a_slow_receiver_cannot_hold_a_delivery_past_its_deadline_with_its_headers(
    admin_user: Any, settings: Any, receivers: Any
) -> None:
    """The status line and headers arrive a byte a second: each read gets its byte well
    within a per-read timeout of 2 s, so only a deadline for the whole answer ends it."""
    settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS = 2
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n"
    receiver = receivers(answer, at_once=0)
    delivery_id = _delivery_to(receiver.url, admin_user)
    assert webhook_runner.deliver(delivery_id) == "pending"
    _assert_failed_at_the_deadline(delivery_id, receiver)


def test_a_slow_receiver_cannot_hold_a_delivery_past_its_deadline_with_its_body(
    admin_user: Any, settings: Any, receivers: Any
) -> None:
    """A 200 whose body drips a byte a second: the answer is not complete within the
    deadline, so the attempt fails (and is retried) although its status line said 200."""
    settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS = 2
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 60\r\n\r\n"
    receiver = receivers(head + b"x" * 60, at_once=len(head))
    delivery_id = _delivery_to(receiver.url, admin_user)
    assert webhook_runner.deliver(delivery_id) == "pending"
    _assert_failed_at_the_deadline(delivery_id, receiver)


def test_a_huge_answer_is_not_read_whole(admin_user: Any, settings: Any, receivers: Any) -> None:
    """A 200 with a 64 MiB body sent as fast as the socket takes it: the status code is all
    a delivery needs, so the client reads a few KiB and hangs up; the receiver could not send
    the rest."""
    settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS = 30
    size = 64 * 1024 * 1024
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode()
    answer = head + b"x" * size
    receiver = receivers(answer, at_once=len(answer))
    delivery_id = _delivery_to(receiver.url, admin_user)
    assert webhook_runner.deliver(delivery_id) == "delivered"
    row = WebhookDelivery.objects.get(pk=delivery_id)
    assert (row.attempts, row.response_code, row.error) == (1, 200, "")
    assert receiver.done.wait(PATIENCE), "the receiver never finished"
    assert receiver.hung_up and receiver.sent < len(answer), (receiver.sent, len(answer))


def test_a_slow_receiver_cannot_hold_the_embedded_schedule_sweep(
    admin_user: Any, settings: Any, receivers: Any, monkeypatch: Any
) -> None:
    """Embedded mode sweeps schedules and webhook retries on one loop: while a receiver
    drips its answer to a retry, due schedules are still swept (they waited for the whole
    webhook sweep before)."""
    settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS = 2
    settings.STUDIO_SCHEDULE_SWEEP_MS = 50
    settings.STUDIO_WEBHOOK_SWEEP_SECONDS = 1
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    receiver = receivers(answer, at_once=0)
    delivery_id = _delivery_to(receiver.url, admin_user)
    during: list[bool] = []  # per schedule sweep: was the receiver mid-answer?

    def sweep_once(owner: str) -> int:
        during.append(receiver.answering.is_set() and not receiver.done.is_set())
        return 0

    monkeypatch.setattr(schedule_runner, "sweep_once", sweep_once)
    monkeypatch.setitem(periodic.AUTOMATION, "agents_app.purge_expired", lambda: 0)
    stop = threading.Event()

    async def embedded() -> None:
        sweeps = asyncio.ensure_future(embedded_automation.run_forever())
        await asyncio.to_thread(stop.wait, PATIENCE)
        sweeps.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeps

    runner = threading.Thread(target=lambda: asyncio.run(embedded()), name="embedded-test")
    runner.start()
    try:
        assert receiver.done.wait(PATIENCE), "the receiver never finished"
        _wait_for(lambda: WebhookDelivery.objects.get(pk=delivery_id).attempts == 1)
    finally:
        stop.set()
        runner.join(PATIENCE)
    assert receiver.hung_up and receiver.sent < len(answer)
    assert sum(during) >= 2, during


def _wait_for(check: Any) -> None:
    deadline = time.monotonic() + PATIENCE
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
