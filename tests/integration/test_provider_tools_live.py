"""Provider-run web search through the service, per vendor: a staff user defines a model whose
``baseUrl`` is a local recording server, a prompt with ``provider:web_search`` (or Gemini's
``provider:google_search``) and an agent over the API; a user's message runs on the Celery
worker, which sends the tool to the "vendor" in its native form; the search arrives live on
the thread's WebSocket (``web_search_done``, ``provider_tool_done``) and the citations with
the final message, in the stream and in ``GET …/messages``.

The vendor is ``tests/runtime/providers/replay.py`` serving the recorded streams.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.stack import Stack
from tests.integration.test_live_sessions import Watch, new_thread, post
from tests.runtime.providers import recordings
from tests.runtime.providers.replay import ReplayServer

pytestmark = pytest.mark.integration

# vendor → (recording, model id, API prefix, tool entry, what reaches the vendor's tools)
CASES: dict[str, tuple[str, str, str, str, list[dict[str, Any]]]] = {
    "anthropic": (
        "anthropic/messages_stream_web_search.yaml",
        "claude-opus-4-1-20250805",
        "/v1",
        "provider:web_search",
        [{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
    ),
    "google": (
        "gemini/stream_google_search_grounding.yaml",
        "gemini-2.5-pro",
        "/v1beta",
        "provider:google_search",
        [{"googleSearch": {}}],
    ),
    # A new OpenAI model written through the API speaks the Responses API.
    "openai": (
        "openai/responses_stream_web_search_citations.yaml",
        "gpt-5.2",
        "/v1",
        "provider:web_search",
        [{"type": "web_search", "search_context_size": "medium"}],
    ),
    "openrouter": (
        "openrouter/chat_stream_web_search_citations.yaml",
        "deepseek/deepseek-chat",
        "/api/v1",
        "provider:web_search",
        [{"type": "openrouter:web_search", "parameters": {"max_uses": 2}}],
    ),
}
# vendor → the options the prompt's tool entry sets
OPTIONS: dict[str, dict[str, Any]] = {
    "anthropic": {"max_uses": 2},
    "openai": {"search_context_size": "medium"},
    "openrouter": {"max_uses": 2},
}
KEYS = {
    "OPENAI_API_KEY": "sk-openai-it",
    "ANTHROPIC_API_KEY": "sk-ant-it",
    "GOOGLE_API_KEY": "g-it",
    "OPENROUTER_API_KEY": "sk-or-it",
}


@pytest.fixture
def vendor_server() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


def _define(stack: Stack, vendor: str, base_url: str) -> str:
    """Model, prompt and agent written through the staff API; returns the agent's name."""
    _, model_id, _, tool, _ = CASES[vendor]
    name = f"search-{vendor}-{uuid.uuid4().hex[:6]}"
    ops = stack.client("ops")
    options = OPTIONS.get(vendor)
    entry: dict[str, Any] = {"name": tool, **({"options": options} if options else {})}
    written = [
        ops.post(
            "/api/models",
            json={"name": name, "provider": vendor, "model": model_id, "baseUrl": base_url},
        ),
        ops.post(
            "/api/prompts",
            json={"name": name, "model": name, "prompt": "Search when asked.", "tools": [entry]},
        ),
        # New agents start as drafts (issue #55): published, so the chat may use it.
        ops.post(
            "/api/agents", json={"name": name, "state": "published", "sideA": {"prompt": name}}
        ),
    ]
    for response in written:
        assert response.status_code == 201, response.text
    # The worker's key goes to the local "vendor" because a superuser allowed it (the egress
    # key rule, tests/agents_app/orchestration/test_egress_runtime.py).
    stack.sql(
        "UPDATE agents_app_languagemodel SET send_instance_key_to_base_url = true WHERE name = %s "
        "RETURNING name",
        name,
    )
    return name


@pytest.mark.parametrize("vendor", list(CASES))
def test_web_search_reaches_the_vendor_natively_and_citations_arrive_live(
    stack: Stack, worker: Any, vendor_server: ReplayServer, vendor: str
) -> None:
    recording, _, prefix, _, native = CASES[vendor]
    [recorded] = recordings.cassette(recording)
    vendor_server.queue(recorded.reply())
    agent = _define(stack, vendor, vendor_server.url + prefix)
    worker(f"w-{vendor}", env=KEYS)
    thread_id = new_thread(stack, agent)

    with Watch(stack, f"/api/threads/{thread_id}/stream") as stream:
        post(stack, thread_id, "What is the weather in San Francisco today?")
        final = stream.until(
            lambda f: (
                f["type"] == "message_data"
                and f["data"]["role"] == "assistant"
                and f["data"]["status"] in ("completed", "failed")
            ),
            "the assistant's final message",
            timeout=60,
        )

    [sent] = vendor_server.requests
    assert sent.json()["tools"] == native  # the vendor's own form, options included
    assert final["data"]["status"] == "completed", final["data"].get("metadata")
    live = [f for f in stream.frames if f["type"] in ("web_search_done", "provider_tool_done")]
    assert {f["type"] for f in live} == {"web_search_done", "provider_tool_done"}
    assert all(f["message_id"] == final["message_id"] for f in live)
    citations = final["data"]["citations"]
    assert citations and all(c["url"].startswith("https://") for c in citations)
    assert final["data"]["provider_tools"][0]["status"] == "completed"

    page = stack.client("alice").get(f"/api/threads/{thread_id}/messages").json()
    [answer] = [m for m in page["messages"] if m["role"] == "assistant"]
    assert answer["citations"] == citations
    assert answer["provider_tools"] == final["data"]["provider_tools"]
