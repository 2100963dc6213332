"""Issue #36 item 2 in the chat: a model whose base URL is not the vendor's host and that no
superuser allowed gets no instance key; the reply fails before anything is sent and the chat
says why in words (static/chat/failures.js), the listener standing in for the base URL having
received nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.agents_app.services.test_egress import PLANTED_KEY, Listener
from tests.browser.support import Site, call_api, chat_login, shot

expect.set_options(timeout=15_000)
ENV = "/api/envs/instance"
DEFINE = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="elsewhere-model", provider="openai", model="gpt-4o-mini",
                        base_url={base_url!r})
prompt = PromptDefinition(name="elsewhere-prompt", model=model.name, prompt="Hi.")
agent = AgentDefinition(name="elsewhere", title="Elsewhere",
                        side_a=SideConfig(prompt=prompt.name))
save_definitions([(model.name, model), (prompt.name, prompt), ("elsewhere", agent)],
                 strict_code_names=False)
"""


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def instance_key(site: Site) -> Iterator[None]:
    call_api(site, "ops", "PATCH", ENV, {"env_patch": {"OPENAI_API_KEY": PLANTED_KEY}})
    yield
    call_api(site, "ops", "PATCH", ENV, {"env_delete": ["OPENAI_API_KEY"]})


def test_the_chat_says_the_instance_key_was_withheld(
    page: Page, site: Site, listener: Listener, instance_key: None
) -> None:
    site.python(DEFINE.format(base_url=f"http://127.0.0.1:{listener.port}/v1"))
    chat_login(page, site, "alice", then="/chat/?agent=elsewhere")
    box = page.get_by_label("Message")
    box.fill("Hello?")
    box.press("Enter")
    page.wait_for_url("**/chat/t/**")
    reply = page.locator("article.msg-assistant[data-status=failed]")
    expect(reply.locator(".msg-outcome")).to_have_text(
        "The service’s API key may not be sent to this model’s address, so there is no reply."
    )
    expect(reply.locator(".failure-reason")).to_have_attribute("title", "Error code: key_withheld")
    expect(page.locator("#state")).to_contain_text("Ask an administrator")
    assert listener.received == []
    assert PLANTED_KEY not in page.content()
    shot(page, "chat-failure-key-withheld")
    assert page.console_errors == []  # type: ignore[attr-defined]
