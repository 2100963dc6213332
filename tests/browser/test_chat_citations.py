"""A reply that searched the web shows its citations: a numbered link after each cited span and
a numbered list of sources under the message, live and after a reload. A source whose URL is
not http(s) (a hostile ``javascript:`` from the vendor) is shown as text, never as a link.

The model is Anthropic's adapter talking to a local replay server (the web search stream as
Anthropic sends it: server_tool_use, web_search_tool_result, text blocks with citations).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, call_api, chat_login, shot, wait_for_messages
from tests.runtime.providers.replay import ReplayServer, Reply

expect.set_options(timeout=20_000)

ENV = "/api/envs/instance"
GOOD = {"url": "https://example.org/weather", "title": "Example Weather"}
HOSTILE = {"url": "javascript:window.__xss='cite'", "title": "Hostile source"}


def _sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _location(source: dict[str, str], text: str) -> dict[str, Any]:
    return {"type": "web_search_result_location", "cited_text": text, **source}


def search_stream() -> bytes:
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [
            {"type": "web_search_result", "encrypted_content": "E1", **GOOD},
            {"type": "web_search_result", "encrypted_content": "E2", **HOSTILE},
        ],
    }
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
        (call, [{"type": "input_json_delta", "partial_json": '{"query": "weather"}'}]),
        (result, []),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Today: "}]),
        (
            {"type": "text", "text": "", "citations": []},
            [
                {"type": "citations_delta", "citation": _location(GOOD, "sunny, 21°C")},
                {"type": "text_delta", "text": "sunny and 21°C"},
            ],
        ),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": ". Tonight: "}]),
        (
            {"type": "text", "text": "", "citations": []},
            [
                {"type": "citations_delta", "citation": _location(HOSTILE, "rain")},
                {"type": "text_delta", "text": "light rain"},
            ],
        ),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "."}]),
    ]
    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "usage": {"input_tokens": 50, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, (block, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 20},
        }
    )
    events.append({"type": "message_stop"})
    return _sse(*events)


@pytest.fixture
def vendor() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()


def _define(site: Site, base_url: str) -> str:
    site.python(
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, "
        "SideConfig\n"
        f"model = ModelDefinition(name='cite-model', provider='anthropic', model='claude-x', "
        f"base_url={base_url!r})\n"
        "prompt = PromptDefinition(name='cite-prompt', model='cite-model', prompt='Search.', "
        "tools=['provider:web_search'])\n"
        "agent = AgentDefinition(name='cite_agent', side_a=SideConfig(prompt='cite-prompt'))\n"
        "save_definitions([('cite-model', model), ('cite-prompt', prompt), "
        "('cite_agent', agent)], strict_code_names=False)\n"
        # The instance key goes to the local "vendor" because a superuser allowed it (the
        # egress key rule, tests/agents_app/orchestration/test_egress_runtime.py).
        "from agents_app.models import LanguageModel\n"
        "LanguageModel.objects.filter(name='cite-model')"
        ".update(send_instance_key_to_base_url=True)\n"
    )
    return "cite_agent"


@pytest.fixture
def anthropic_key(site: Site) -> Iterator[None]:
    """An instance-wide key for the test's model (set once the model exists), removed
    afterwards (later tests list the instance env)."""
    yield
    call_api(site, "ops", "PATCH", ENV, {"env_delete": ["ANTHROPIC_API_KEY"]})


def _assert_citations(page: Page) -> None:
    reply = page.locator("article.msg-assistant[data-status=completed]")
    expect(reply.locator(".msg-body")).to_contain_text("sunny and 21°C[1]")
    good = reply.locator(".msg-body sup.cite a")
    expect(good).to_have_count(1)
    expect(good).to_have_text("[1]")
    assert good.get_attribute("href") == GOOD["url"]
    assert good.get_attribute("rel") == "noopener noreferrer nofollow"
    # The hostile source keeps its number, as text: no link, no javascript: anywhere.
    expect(reply.locator(".msg-body sup.cite").nth(1)).to_have_text("[2]")
    sources = reply.locator(".msg-sources li")
    expect(sources).to_have_count(2)
    expect(sources.nth(0).locator("a")).to_have_text("Example Weather")
    expect(sources.nth(1)).to_contain_text("not a web link")
    expect(sources.nth(1).locator("a")).to_have_count(0)
    hrefs = page.eval_on_selector_all("#transcript a", "links => links.map(a => a.href)")
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    assert page.evaluate("window.__xss") is None


def test_citations_show_as_numbered_links_and_sources(
    page: Page, site: Site, vendor: ReplayServer
) -> None:
    vendor.queue(Reply.sse(search_stream(), 83))
    agent = _define(site, vendor.url + "/v1")
    call_api(site, "ops", "PATCH", ENV, {"env_patch": {"ANTHROPIC_API_KEY": "sk-ant-browser"}})
    page.add_init_script("window.__xss = null;")
    chat_login(page, site, "alice")
    thread_id = call_api(site, "alice", "POST", "/api/threads", {"agent_id": agent})["threadId"]
    page.goto(f"{site.url}/chat/t/{thread_id}")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")

    call_api(
        site,
        "alice",
        "POST",
        f"/api/threads/{thread_id}/messages",
        {"role": "user", "content": "Weather today?"},
    )

    rows = wait_for_messages(
        site,
        "alice",
        thread_id,
        lambda rows: any(
            r["role"] == "assistant" and r["status"] in ("completed", "failed") for r in rows
        ),
    )
    [answer] = [r for r in rows if r["role"] == "assistant"]
    assert answer["status"] == "completed", answer["metadata"]
    _assert_citations(page)
    shot(page, "chat-citations")
    page.reload()
    _assert_citations(page)
    assert vendor.requests[0].json()["tools"] == [
        {"type": "web_search_20250305", "name": "web_search"}
    ]
    assert page.console_errors == []  # type: ignore[attr-defined]
