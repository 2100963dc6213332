"""Done-when (4): message content with <script>, on* attributes and javascript: links renders
inert, whether it comes from the user or from the model, live over the socket or reloaded."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, call_api, chat_login, shot, wait_for_messages

# First replies wait for the worker to start on a busy machine.
expect.set_options(timeout=15_000)

PAYLOAD = "\n\n".join(
    [
        "Hello <script>window.__xss = 'script'; alert('script')</script> there",
        "<img src=x onerror=\"window.__xss = 'img'; alert('img')\">",
        "[click me](javascript:window.__xss='link';alert('link'))",
        "[mixed case](JaVaScRiPt:alert('case'))",
        '<a href="javascript:alert(2)" onclick="window.__xss=\'a\'">raw link</a>',
        '<svg onload="window.__xss=\'svg\'"></svg><iframe src="javascript:alert(3)"></iframe>',
        "**bold** and a [real link](https://example.org/docs)",
    ]
)

# The scripted model answers with the payload: a reply is rendered as markdown, the riskier path.
DEFINE_AGENT = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="xss-model", provider="test", model="scripted",
    script=[{{"content": {json.dumps(PAYLOAD)}}}], streaming={{"chunkSize": 7, "chunkDelayMs": 10}})
prompt = PromptDefinition(name="xss-prompt", model="xss-model", prompt="Echo.", include_chat=True)
agent = AgentDefinition(name="xss_echo", side_a=SideConfig(prompt="xss-prompt"))
save_definitions([("xss-model", model), ("xss-prompt", prompt), ("xss_echo", agent)],
    strict_code_names=False)
"""

GUARD = "window.__xss = null; window.alert = () => { window.__xss = 'alert'; };"

FINDINGS = """() => {
  const bad = [];
  for (const node of document.querySelectorAll('#transcript *')) {
    for (const attr of node.attributes) {
      if (attr.name.toLowerCase().startsWith('on')) bad.push(`${node.tagName} ${attr.name}`);
      if (/^\\s*javascript:/i.test(attr.value)) bad.push(`${node.tagName} ${attr.name}=${attr.value}`);
    }
    if (['SCRIPT', 'IFRAME', 'SVG', 'OBJECT', 'EMBED'].includes(node.tagName.toUpperCase())) bad.push(node.tagName);
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def xss_agent(site: Site) -> str:
    site.python(DEFINE_AGENT)
    return "xss_echo"


def _assert_inert(page: Page, dialogs: list[str]) -> None:
    assert page.evaluate("window.__xss") is None
    assert dialogs == []
    assert page.evaluate(FINDINGS) == []
    link = page.get_by_text("click me", exact=True).first
    assert (link.get_attribute("href") or "") == ""
    real = page.locator("#transcript a", has_text="real link").first
    assert real.get_attribute("href") == "https://example.org/docs"
    # Clicking the neutered link runs nothing either.
    link.click()
    assert page.evaluate("window.__xss") is None
    assert dialogs == []


def test_hostile_message_content_renders_inert(page: Page, site: Site, xss_agent: str) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.add_init_script(GUARD)
    chat_login(page, site, "alice")
    thread_id = call_api(site, "alice", "POST", "/api/threads", {"agent_id": xss_agent})["threadId"]

    # Live: the page is open while the user message arrives and the reply streams in.
    page.goto(f"{site.url}/chat/t/{thread_id}")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")
    call_api(
        site,
        "alice",
        "POST",
        f"/api/threads/{thread_id}/messages",
        {"role": "user", "content": PAYLOAD},
    )
    reply = page.locator("article.msg-assistant[data-status=completed]")
    expect(reply).to_contain_text("real link")
    user = page.locator("article.msg-user")
    # The user's own text is shown as typed: the tags are visible characters, not elements.
    expect(user).to_contain_text("<script>window.__xss = 'script'")
    expect(reply).to_contain_text("<img src=x onerror=")
    expect(reply.locator("strong")).to_have_text("bold")
    _assert_inert(page, dialogs)
    shot(page, "chat-hostile-content")

    # Reloaded over HTTP: the same rows rendered from the messages API.
    wait_for_messages(
        site, "alice", thread_id, lambda rows: any(r["role"] == "assistant" for r in rows)
    )
    page.reload()
    expect(page.locator("article.msg-assistant")).to_contain_text("real link")
    _assert_inert(page, dialogs)
    assert page.console_errors == []  # type: ignore[attr-defined]
