"""Row I11 (spec 0.2.0): ``POST /api/threads/{id}/rpc``, the reference's dev and test
passthrough ``{method, args}``. Off (404) unless ``STUDIO_THREAD_RPC``; loopback clients
only; posting's permission; each method through its route's service."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import Message, QueuedMessage, Thread, ThreadValue
from agents_app.orchestration.thread_creation import thread_create
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

SECRET = "sk-rpc-canary-7d1f0b2e"


@pytest.fixture
def rpc_on(settings: Any) -> None:
    settings.STUDIO_THREAD_RPC = True


def _rpc(client: Any, thread: Thread, method: str, args: Any = None, **extra: Any) -> Any:
    body: dict[str, Any] = {"method": method}
    if args is not None:
        body["args"] = args
    return client.post_json(f"/api/threads/{thread.pk}/rpc", body, **extra)


def test_I11_off_by_default_the_route_answers_404_json(
    as_: Any, alice: Any, thread_of: Any, settings: Any
) -> None:
    assert settings.STUDIO_THREAD_RPC is False
    thread = thread_of(alice)
    response = _rpc(as_(alice), thread, "getThreadMeta")
    assert response.status_code == 404
    assert response.json() == {"error": "Not found"}
    # As an unknown route of the thread answers.
    unknown = as_(alice).post_json(f"/api/threads/{thread.pk}/no-such-route", {})
    assert (unknown.status_code, unknown.json()) == (404, {"error": "Not found"})


@pytest.mark.usefixtures("rpc_on")
def test_I11_loopback_clients_only_even_when_enabled(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    words = {"error": "The rpc passthrough answers loopback clients only"}
    remote = _rpc(client, thread, "setValue", ["k", 1], REMOTE_ADDR="203.0.113.9")
    assert (remote.status_code, remote.json()) == (403, words)
    # Through a proxy on this host the address is loopback, the client is not.
    proxied = _rpc(client, thread, "setValue", ["k", 1], HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert (proxied.status_code, proxied.json()) == (403, words)
    assert not ThreadValue.objects.exists()
    local_v6 = _rpc(client, thread, "getThreadMeta", REMOTE_ADDR="::1")
    assert local_v6.status_code == 200, local_v6.content


@pytest.mark.usefixtures("rpc_on")
def test_I11_methods_run_through_the_services(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)

    meta = _rpc(client, thread, "getThreadMeta").json()["result"]
    assert meta["thread"]["id"] == str(thread.pk)
    assert _rpc(client, thread, "setValue", {"key": "plan", "value": [1, 2]}).status_code == 200
    assert client.get(f"/api/threads/{thread.pk}/kv?key=plan").json()["value"] == [1, 2]
    assert _rpc(client, thread, "getValue", ["plan"]).json() == {"result": [1, 2]}
    assert _rpc(client, thread, "getValue", ["missing"]).json() == {"result": None}

    sent = _rpc(client, thread, "sendMessage", {"content": "hello over rpc"})
    assert sent.status_code == 200, sent.content
    assert (
        QueuedMessage.objects.filter(thread=thread, content="hello over rpc").exists()
        or Message.objects.filter(thread=thread, content="hello over rpc").exists()
    )
    page = _rpc(client, thread, "getMessages", {"limit": 10}).json()["result"]
    assert "hello over rpc" in [m["content"] for m in page["messages"]]
    assert _rpc(client, thread, "stop").json() == {"result": {"status": "stopped"}}


@pytest.mark.usefixtures("rpc_on")
@pytest.mark.parametrize(
    ("method", "args", "sentence"),
    [
        (
            "deleteThread",
            None,
            "Unknown rpc method 'deleteThread': this server offers getMessages, "
            "getThreadMeta, getValue, sendMessage, setValue, stop",
        ),
        ("getValue", None, "getValue needs key"),
        ("getValue", ["a", "b"], "getValue takes at most 1 arguments, got 2"),
        ("stop", {"force": True}, "stop does not take force (it takes no arguments)"),
        ("getMessages", {"limit": 0}, "limit must be an integer from 1 to 1000"),
        ("", None, "Invalid request: method: String should have at least 1 character"),
    ],
)
def test_I11_unknown_methods_and_bad_args_are_refused_with_a_sentence(
    as_: Any, alice: Any, thread_of: Any, method: str, args: Any, sentence: str
) -> None:
    response = _rpc(as_(alice), thread_of(alice), method, args)
    assert response.status_code == 400
    assert response.json() == {"error": sentence}


@pytest.mark.usefixtures("rpc_on")
def test_I11_needs_posting_permission(
    as_: Any, alice: Any, bob: Any, thread_of: Any, anonymous: Any
) -> None:
    thread = thread_of(alice)
    refused = _rpc(as_(bob), thread, "setValue", ["k", 1])
    assert refused.status_code == 403 and "error" in refused.json()
    assert _rpc(anonymous, thread, "getThreadMeta").status_code == 401
    assert not ThreadValue.objects.exists()


@pytest.mark.usefixtures("rpc_on")
def test_I11_results_are_redacted_with_the_threads_secrets(as_: Any, alice: Any) -> None:
    from tests.agents_app.api.api_support import define_agent

    define_agent("helper")
    thread = thread_create(user=alice, agent_name="helper", env={"API_KEY": SECRET})
    client = as_(alice)
    written = _rpc(client, thread, "setValue", ["creds", {"token": SECRET}])
    read = _rpc(client, thread, "getValue", ["creds"])
    meta = _rpc(client, thread, "getThreadMeta")
    for response in (written, read, meta):
        assert response.status_code == 200, response.content
        assert SECRET not in response.content.decode()
    assert read.json() == {"result": {"token": "[REDACTED:API_KEY]"}}
