"""Knowledge in the chat, as a person sees it (docs/knowledge.md): a reply that was given
passages of a knowledge base lists them as its sources; a source opens the cited passage on
a page of its own, where a hostile upload's markup is text, never script; and "What the
agents remember about you" lists the person's memories and deletes them. At 1440 and 390 px.
"""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, call_api, chat_login, shot, wait_for_messages

expect.set_options(timeout=20_000)

PASSAGE = "Staff may take the company bicycles home at weekends if they book them."
HOSTILE = '<img src=x onerror="window.__xss=1"> Bicycles go back by Monday.'
MEMORY = "<b>Alice</b> rides a green Brompton."


def _define(site: Site) -> None:
    site.python(
        "from agents_app.models import KnowledgeBase\n"
        "from agents_app.models.knowledge import KnowledgeState\n"
        "from agents_app.services.knowledge.documents import document_add\n"
        "from agents_app.services.knowledge.ingestion import document_ingest\n"
        "from tests.agents_app.services.knowledge.sample_files import pdf_bytes\n"
        "base, _ = KnowledgeBase.objects.get_or_create(name='bike_rules', "
        "defaults={'state': KnowledgeState.PUBLISHED})\n"
        "if not base.documents.exists():\n"
        f"    data = pdf_bytes([['Welcome.'], ['Lunch is at noon.'], [{PASSAGE!r}], [{HOSTILE!r}]])\n"
        "    d = document_add(base=base, filename='rules.pdf', content_type='application/pdf', "
        "data=data)\n"
        "    assert document_ingest(d.pk) == 'ready'\n"
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, "
        "SideConfig, ToolConfig\n"
        "model = ModelDefinition(name='kb-model', provider='test', model='scripted', "
        "script=[{'content': 'Yes: at weekends, if you book one.'}])\n"
        "entry = ToolConfig(name='knowledge:bike_rules', "
        "options={'retrieve': {'topK': 2, 'maxTokens': 400}})\n"
        "prompt = PromptDefinition(name='kb-prompt', model='kb-model', prompt='Answer.', "
        "tools=[entry])\n"
        "agent = AgentDefinition(name='kb_reader', side_a=SideConfig(prompt='kb-prompt'))\n"
        "save_definitions([('m', model), ('p', prompt), ('a', agent)], strict_code_names=False)\n"
        "from django.contrib.auth import get_user_model\n"
        "from agents_app.models import UserValue\n"
        "alice = get_user_model().objects.get(username='alice')\n"
        "UserValue.objects.update_or_create(user=alice, key='memory/b1', "
        f"defaults={{'value': {{'text': {MEMORY!r}, 'vector': ''}}}})\n"
    )


def _ask(site: Site, page: Page) -> None:
    thread_id = call_api(site, "alice", "POST", "/api/threads", {"agent_id": "kb_reader"})[
        "threadId"
    ]
    page.goto(f"{site.url}/chat/t/{thread_id}")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")
    call_api(
        site,
        "alice",
        "POST",
        f"/api/threads/{thread_id}/messages",
        {"role": "user", "content": "Can I take a bicycle home at the weekend?"},
    )
    wait_for_messages(
        site,
        "alice",
        thread_id,
        lambda rows: any(r["role"] == "assistant" and r["status"] == "completed" for r in rows),
    )


def _sources_open_the_passage(page: Page, name: str) -> None:
    reply = page.locator("article.msg-assistant[data-status=completed]")
    expect(reply.locator(".msg-body")).to_contain_text("at weekends")
    source = reply.locator(".msg-sources a.source-passage").first
    expect(source).to_contain_text("rules, page 3")
    assert re.fullmatch(r"/chat/passages/\d+/", source.get_attribute("href") or "")
    shot(page, f"chat-knowledge-sources-{name}")
    with page.context.expect_page() as opened:
        source.click()
    passage = opened.value
    passage.wait_for_load_state()
    expect(passage.locator("#passage-document")).to_have_text("rules")
    expect(passage.locator("#passage-where")).to_have_text("Page 3")
    expect(passage.locator("#passage-text")).to_have_text(PASSAGE)
    shot(passage, f"chat-knowledge-passage-{name}")
    # The hostile passage (page 4), opened directly: its markup is shown as text.
    hostile = reply.locator(".msg-sources a.source-passage").nth(1)
    if hostile.count():
        passage.goto(f"{page.url.split('/chat/')[0]}{hostile.get_attribute('href')}")
        expect(passage.locator("#passage-text")).to_have_text(HOSTILE)
        expect(passage.locator("#passage-text img")).to_have_count(0)
        assert passage.evaluate("window.__xss") is None
    passage.close()


def _memory_page(page: Page, site: Site, name: str) -> None:
    page.goto(f"{site.url}/chat/")
    page.get_by_role("link", name="Memory").click()
    expect(page.get_by_role("heading", name="What the agents remember about you")).to_be_visible()
    item = page.locator(".memory-item", has_text="rides a green Brompton")
    expect(item.locator(".memory-text")).to_have_text(MEMORY)  # the markup as text
    shot(page, f"chat-memory-{name}")
    item.get_by_role("button", name=re.compile("^Forget")).click()
    expect(page.locator("#memory-empty")).to_have_text("Nothing is remembered about you.")


def test_knowledge_sources_open_the_passage_and_memories_are_listed_and_deleted_at_1440(
    page: Page, site: Site
) -> None:
    _define(site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.add_init_script("window.__xss = null;")
    chat_login(page, site, "alice")
    _ask(site, page)
    _sources_open_the_passage(page, "1440")
    page.reload()  # the sources come back with the message, not only live
    expect(
        page.locator("article.msg-assistant[data-status=completed] .msg-sources a.source-passage")
    ).to_have_count(2)
    _memory_page(page, site, "1440")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_knowledge_sources_and_memories_on_a_phone(phone_page: Page, site: Site) -> None:
    _define(site)
    phone_page.add_init_script("window.__xss = null;")
    chat_login(phone_page, site, "alice")
    _ask(site, phone_page)
    _sources_open_the_passage(phone_page, "390")
    _memory_page(phone_page, site, "390")
    assert phone_page.console_errors == []  # type: ignore[attr-defined]
