"""The egress policy at run time (issue #36 item 2): a session's request to a model's base URL
carries the instance's (or the server's) key only to the vendor's own host or a base URL a
superuser allowed, and model base URLs and MCP servers reached by a running session obey the
address check. A refusal sends nothing and fails the step with a reason the chat shows
(``metadata.error.vendor_code``: static/chat/failures.js words it).

Each test runs the session on the Django store against a real local listener and asserts what
the listener received and what the thread stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import EnvValue, LanguageModel, McpServer, Message, Thread, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import messages as message_service
from runtime.core import egress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.mcp.client import POOL
from runtime.mcp.servers import wire_name
from tests.agents_app.api.api_support import _api_hosts, scripted_model  # noqa: F401
from tests.agents_app.services.test_egress import PLANTED_KEY, Listener

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_thread_connections"),
]


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@sync_to_async
def _thread_on(user: Any, base_url: str, *, blessed: bool = False) -> Thread:
    model = ModelDefinition(
        name="self-hosted", provider="openai", model="gpt-4o-mini", base_url=base_url
    )
    prompt = PromptDefinition(name="p", model=model.name, prompt="Hi.", include_chat=True)
    agent = AgentDefinition(name="asker", side_a=SideConfig(prompt="p"))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )
    if blessed:
        # What a superuser's tick in the studio stores.
        LanguageModel.objects.filter(name=model.name).update(send_instance_key_to_base_url=True)
    return thread_create(user=user, agent_name="asker")


@sync_to_async
def _env(scope: str, value: str, user: Any = None, thread: Thread | None = None) -> None:
    row = EnvValue(scope=scope, user=user, key="OPENAI_API_KEY", value_type="secret")
    if thread is not None:
        row.agent_id = thread.agent_id if scope == "agent" else None
        row.prompt_id = thread.agent.side_a_prompt_id if scope == "prompt" else None
    row.value = value
    row.save()


async def _turn(thread: Thread) -> Message:
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content="Hi")
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    await run_session_job(str(session.pk))
    return await sync_to_async(
        lambda: Message.objects.filter(thread=thread, role="assistant").latest("created_at")
    )()


@pytest.mark.parametrize("where", ["instance", "process"])
async def test_session_does_not_send_the_instance_key_to_a_foreign_base_url(
    alice: Any, listener: Listener, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if where == "instance":
        await _env("instance", PLANTED_KEY)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    thread = await _thread_on(alice, f"http://127.0.0.1:{listener.port}/v1")
    reply = await _turn(thread)
    # Nothing went out: not the key, not the request without it.
    assert listener.received == []
    assert reply.status == "failed"
    error = reply.metadata["error"]
    assert error["vendor_code"] == "key_withheld" and error["retryable"] is False
    assert "was not sent to 127.0.0.1" in error["message"]
    assert PLANTED_KEY not in repr(reply.metadata)


@pytest.mark.parametrize("tier", ["agent", "prompt"])
async def test_session_does_not_send_a_definition_key_to_a_foreign_base_url(
    alice: Any, listener: Listener, tier: str
) -> None:
    # Whoever moves the model's base URL is not whoever wrote the agent's or prompt's key.
    thread = await _thread_on(alice, f"http://127.0.0.1:{listener.port}/v1")
    await _env(tier, PLANTED_KEY, thread=await sync_to_async(_reload)(thread))
    reply = await _turn(thread)
    assert listener.received == []
    error = reply.metadata["error"]
    assert error["vendor_code"] == "key_withheld"
    assert f"The {tier}'s OPENAI_API_KEY was not sent to 127.0.0.1" in error["message"]


def _reload(thread: Thread) -> Thread:
    return Thread.objects.select_related("agent").get(pk=thread.pk)


async def test_session_sends_the_instance_key_to_a_base_url_a_superuser_allowed(
    alice: Any, listener: Listener
) -> None:
    await _env("instance", PLANTED_KEY)
    thread = await _thread_on(alice, f"http://127.0.0.1:{listener.port}/v1", blessed=True)
    reply = await _turn(thread)
    assert listener.received[0][1]["authorization"] == f"Bearer {PLANTED_KEY}"
    assert reply.metadata["error"]["code"] == "authentication"  # the listener's 401


async def test_session_sends_the_users_own_key_where_the_model_points(
    alice: Any, listener: Listener
) -> None:
    await _env("instance", PLANTED_KEY)
    await _env("user", "sk-alices-own-key", user=alice)
    thread = await _thread_on(alice, f"http://127.0.0.1:{listener.port}/v1")
    await _turn(thread)
    assert listener.received[0][1]["authorization"] == "Bearer sk-alices-own-key"
    assert PLANTED_KEY not in listener.everything()


async def test_session_refuses_a_loopback_base_url_by_default(
    alice: Any, listener: Listener
) -> None:
    egress.configure([])  # the production default (the suite allows loopback)
    await _env("user", "sk-alices-own-key", user=alice)
    thread = await _thread_on(alice, f"http://localhost:{listener.port}/v1")
    reply = await _turn(thread)
    assert listener.received == []
    error = reply.metadata["error"]
    assert error["vendor_code"] == "egress_refused" and error["retryable"] is False
    assert "egress policy" in error["message"] and "STUDIO_EGRESS_ALLOW" in error["message"]


@sync_to_async
def _mcp_thread(user: Any, url: str) -> Thread:
    McpServer.objects.create(name="near", url=url, tools=[{"name": "echo"}], timeout_ms=3000)
    call = {"name": wire_name("near", "echo"), "arguments": {"text": "hi"}, "id": "call_echo"}
    model = scripted_model(
        "m", [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "done"}]
    )
    prompt = PromptDefinition(name="p", model="m", prompt="Use it.", tools=["mcp:near/echo"])
    agent = AgentDefinition(name="caller", side_a=SideConfig(prompt="p"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)
    return thread_create(user=user, agent_name="caller")


async def test_session_refuses_an_mcp_server_on_loopback_by_default(
    alice: Any, listener: Listener
) -> None:
    egress.configure([])
    thread = await _mcp_thread(alice, f"http://localhost:{listener.port}/mcp")
    try:
        await _turn(thread)
    finally:
        await POOL.aclose()
    assert listener.received == []
    result = await sync_to_async(Message.objects.get)(thread=thread, role="tool")
    assert result.tool_status == "error"
    assert "Could not connect to MCP server 'near'" in result.content
    assert "egress policy" in result.content
