"""A remote A2A agent whose card cannot be read (docs/api.md "The A2A client"): after one
failed fetch it is not asked again within its backoff, by any step of any session, and a card
cached before the remote died still offers its tool. The remote is a small HTTP server on
127.0.0.1 that counts the card requests it gets; the chats run on the live server
(``door_server``) with a scripted caller model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone

from agents_app.models import A2aAgent, Log
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.doors.a2a_client import card_refresh
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.providers.test_provider import TestScript
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)
from tests.agents_app.api.test_a2a_client import Chat, _caller

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

CARD = {"name": "mars", "description": "Knows the weather on Mars.", "skills": []}


class Remote:
    """Serves ``CARD`` while alive, 503 once dead; counts every request."""

    def __init__(self) -> None:
        self.alive = True
        self.card = dict(CARD)
        self.requests: list[str] = []
        remote = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                remote.requests.append(self.path)
                body = json.dumps(remote.card).encode() if remote.alive else b"down"
                self.send_response(200 if remote.alive else 503)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join(10)


@pytest.fixture
def chat(server: str) -> Iterator[Any]:
    """Opens alice's chats with ``caller`` on the live server; closes them after the test."""
    opened: list[Chat] = []

    def open_chat(key: str) -> Chat:
        opened.append(Chat(server, key))
        return opened[-1]

    yield open_chat
    for each in opened:
        each.close()


@pytest.fixture
def remote() -> Iterator[Remote]:
    served = Remote()
    yield served
    served.stop()


def _define(remote: Remote) -> None:
    # A fresh port per test: the backoff is kept per name and URL, so no test sees another's.
    save_definitions([("a", A2aAgentDefinition(name="mars", url=f"{remote.url}/a2a/mars"))])


def _offered(thread: str) -> list[str]:
    return [
        json.dumps(row.request_body) for row in Log.objects.filter(thread_id=thread, kind="llm")
    ]


def test_a_dead_remote_is_asked_once_across_steps_and_sessions(
    server: str, alice: Any, chat: Any, remote: Remote
) -> None:
    remote.alive = False
    _define(remote)
    _caller(TestScript().add_text("One.").add_text("Two.").add_text("Three."), ["a2a:mars"])
    _, key = api_key_create(user=alice, name="caller key")

    first = chat(key)
    first.say("Hello.")
    first.say("Again.")
    chat(key).say("A new session.")

    assert len(remote.requests) == 1, remote.requests
    # Left out of every step (no card to describe it), and the studio says why in words.
    offered = [*_offered(first.thread)]
    assert len(offered) == 2 and all('"mars"' not in body for body in offered), offered
    last_error = A2aAgent.objects.get(name="mars").last_error
    assert last_error.startswith("Could not read the card: 127.0.0.1 answered HTTP 503.")
    assert "Not tried again before" in last_error


def test_a_card_cached_before_the_remote_died_still_offers_the_tool(
    server: str, alice: Any, chat: Any, remote: Remote
) -> None:
    _define(remote)
    card_refresh(row=A2aAgent.objects.get(name="mars"))  # the studio's "Fetch the card"
    remote.alive = False
    _caller(TestScript().add_text("Offered."), ["a2a:mars"])
    _, key = api_key_create(user=alice, name="caller key")

    conversation = chat(key)
    conversation.say("Hello.")

    assert len(remote.requests) == 1  # the studio's fetch only: the cached card is fresh
    [offered] = _offered(conversation.thread)
    assert "Knows the weather on Mars." in offered


def _age_the_card() -> None:
    A2aAgent.objects.filter(name="mars").update(card_fetched_at=timezone.now() - timedelta(hours=2))


def _wait_for(done: Any) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, "the background refresh never finished"
        time.sleep(0.05)


def test_an_old_card_is_refreshed_in_the_background_once(
    server: str, alice: Any, chat: Any, remote: Remote
) -> None:
    _define(remote)
    card_refresh(row=A2aAgent.objects.get(name="mars"))
    _age_the_card()
    remote.card = {**CARD, "description": "Knows the weather on Venus."}
    _caller(TestScript().add_text("One.").add_text("Two."), ["a2a:mars"])
    _, key = api_key_create(user=alice, name="caller key")

    conversation = chat(key)
    conversation.say("Hello.")
    _wait_for(lambda: "Venus" in str(A2aAgent.objects.get(name="mars").card))
    _age_the_card()  # old again, but refreshed within the hour: not fetched again
    conversation.say("Again.")

    assert len(remote.requests) == 2, remote.requests  # the studio's fetch, one refresh
    first, _second = _offered(conversation.thread)
    assert "Knows the weather on Mars." in first  # the step did not wait for the refresh


def test_an_old_card_whose_refresh_fails_is_kept_and_offered(
    server: str, alice: Any, chat: Any, remote: Remote
) -> None:
    _define(remote)
    card_refresh(row=A2aAgent.objects.get(name="mars"))
    _age_the_card()
    remote.alive = False
    _caller(TestScript().add_text("One.").add_text("Two."), ["a2a:mars"])
    _, key = api_key_create(user=alice, name="caller key")

    conversation = chat(key)
    conversation.say("Hello.")
    _wait_for(lambda: A2aAgent.objects.get(name="mars").last_error != "")
    conversation.say("Again.")

    assert len(remote.requests) == 2, remote.requests
    row = A2aAgent.objects.get(name="mars")
    assert row.card is not None and row.card["description"] == "Knows the weather on Mars."
    assert row.last_error.startswith("Could not read the card: 127.0.0.1 answered HTTP 503.")
    assert all("Knows the weather on Mars." in body for body in _offered(conversation.thread))
