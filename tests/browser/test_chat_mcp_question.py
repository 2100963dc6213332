"""The chat, an MCP server's question (issue #57): an agent calls the test server's ``book``
tool, the server asks which seat (``input_required``), and the chat shows its message and
the fields of its schema as a form; the person answers and the call goes on (at 1440 and
390 px). A 2025-era server asks the same question in the middle of the open call
(``elicitation/create``); the call is held, and the chat shows the same form for it (the
same ``pending`` row, marked ``live``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot
from tests.mcp_servers.processes import HttpMcpServer

expect.set_options(timeout=30_000)


def _script(server: str) -> list[dict[str, Any]]:
    return [
        {"toolCalls": [{"name": f"{server}__book", "arguments": {"flight": "LH400"}}]},
        {"content": "Your seat is booked."},
    ]


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def old_mcp_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer(era="2025").start()
    yield server
    server.stop()


def _seed(site: Site, url: str, server: str = "air", agent: str = "traveller") -> None:
    site.python(
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from agents_app.models import McpServer\n"
        "from agents_app.services.definitions.mcp_servers import mcp_server_refresh\n"
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, "
        "SideConfig\n"
        f"row = McpServer.objects.create(name={server!r}, url={url!r})\n"
        "mcp_server_refresh(server=row, user=get_user_model().objects.get(username='admin'))\n"
        f"model = ModelDefinition(name='{server}_model', provider='test', model='scripted', "
        f"script=json.loads({json.dumps(_script(server))!r}))\n"
        f"prompt = PromptDefinition(name='{server}_prompt', model='{server}_model', "
        f"prompt='Book.', tools=['mcp:{server}/book'])\n"
        f"agent = AgentDefinition(name={agent!r}, title='Traveller', "
        f"side_a=SideConfig(prompt='{server}_prompt'))\n"
        "save_definitions([('m', model), ('p', prompt), ('a', agent)])\n"
    )


@pytest.mark.parametrize("width", [1440, 390])
def test_the_chat_asks_the_person_the_mcp_servers_question(
    site: Site, page: Page, mcp_server: HttpMcpServer, width: int
) -> None:
    if width == 1440:
        _seed(site, mcp_server.url)
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    admin_login(page, site)
    page.goto(f"{site.url}/chat/?agent=traveller")
    expect(page.locator("#agent-select")).to_have_value("traveller")
    page.locator("#composer-input").fill("Book me on LH400.")
    page.get_by_role("button", name="Send").click()
    panel = page.locator("section.mcp-input")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Which seat on flight LH400?")
    # The server's own name, not the model's <server>__<tool> name of the tool.
    expect(panel.locator(".approval-question")).to_contain_text("The MCP server air asks:")
    shot(page, f"chat-mcp-question-{width}")
    panel.get_by_label("seat (required)").fill("12A")
    panel.get_by_label("window").check()
    panel.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("Your seat is booked.")
    expect(page.locator("section.mcp-input")).to_have_count(0)
    expect(page.locator("#transcript")).to_contain_text("Booked seat 12A (a window) on LH400.")
    shot(page, f"chat-mcp-answered-{width}")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_chat_asks_a_2025_servers_question_held_in_the_middle_of_the_call(
    site: Site, page: Page, old_mcp_server: HttpMcpServer
) -> None:
    _seed(site, old_mcp_server.url, server="old_air", agent="old_traveller")
    page.set_viewport_size({"width": 1440, "height": 900})
    admin_login(page, site)
    page.goto(f"{site.url}/chat/?agent=old_traveller")
    expect(page.locator("#agent-select")).to_have_value("old_traveller")
    page.locator("#composer-input").fill("Book me on LH400.")
    page.get_by_role("button", name="Send").click()
    panel = page.locator("section.mcp-input")
    expect(panel).to_contain_text("Which seat on flight LH400?")
    shot(page, "chat-mcp-live-question-1440")
    panel.get_by_label("seat (required)").fill("14C")
    panel.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("Your seat is booked.")
    expect(page.locator("section.mcp-input")).to_have_count(0)
    expect(page.locator("#transcript")).to_contain_text("Booked seat 14C (an aisle) on LH400.")
    assert page.console_errors == []  # type: ignore[attr-defined]
