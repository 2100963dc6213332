"""Knowledge from the studio to the chat, by someone who writes no code (issue #59).

A staff member creates a knowledge base in the studio, limits it to a group, uploads a PDF
(three pages, the answer only on page 3) and a DOCX, and watches both become "Ready" on the
base's page (ingestion runs on the stack's real Celery worker). They list `knowledge:<name>`
in a prompt's tools in the studio and make an agent of it. A member of the group asks the
question in the chat (the scripted `test` model calls the search tool), sees the answer with
its source and opens it: the passage page shows the page-3 text. A person outside the
group asks the same agent and gets no passage: the tool refuses in words and the reply lists
no source. At 1440 and 390 px.
"""

from __future__ import annotations

import json
import re
import time

from playwright.sync_api import Page, expect

from tests.agents_app.services.knowledge.sample_files import docx_bytes, pdf_bytes
from tests.browser.support import (
    PASSWORD,
    Site,
    admin_login,
    call_api,
    chat_login,
    shot,
    wait_for_messages,
)

expect.set_options(timeout=20_000)

ANSWER_TEXT = "Night porters may borrow the blue tandem after the last shift ends."
QUESTION = "Who may borrow the blue tandem?"
REPLY = "Night porters may, after their last shift."
REFUSAL = "is not in its audience"


def _model(site: Site, suffix: str) -> None:
    """The scripted model (standing in for a vendor): it calls the search tool, then answers.
    Setting it up is the one step done in code; everything the person does is in the pages."""
    script = [
        {"toolCalls": [{"name": f"search_porters_{suffix}", "arguments": {"query": QUESTION}}]},
        {"content": REPLY},
    ]
    site.python(
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.models import Group\n"
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import ModelDefinition\n"
        f"model = ModelDefinition(name='porters-model-{suffix}', provider='test', "
        f"model='scripted', script={script!r})\n"
        f"save_definitions([('m', model)], strict_code_names=False)\n"
        "group, _ = Group.objects.get_or_create(name='night-staff')\n"
        "group.user_set.add(get_user_model().objects.get(username='alice'))\n"
    )


def _files(tmp: object) -> tuple[str, str]:
    from pathlib import Path

    folder = Path(str(tmp))
    pdf = folder / "porters.pdf"
    pdf.write_bytes(
        pdf_bytes(
            [
                ["Welcome to the porters' lodge."],
                ["Keys are signed out at the front desk."],
                [ANSWER_TEXT],
            ]
        )
    )
    docx = folder / "rota.docx"
    docx.write_bytes(
        docx_bytes([("h1", "Rota"), ("p", "Day porters start at seven in the morning.")])
    )
    return str(pdf), str(docx)


def _create_base(page: Page, site: Site, name: str, files: tuple[str, str], tag: str) -> None:
    page.goto(f"{site.url}/admin/agents_app/knowledgebase/add/")
    page.locator("#id_name").fill(name)
    page.locator("#id_description").fill("The porters' handbook and rota.")
    page.locator("#id_audience_groups").select_option(label="night-staff")
    page.get_by_label("Add documents").set_input_files(list(files))
    shot(page, f"knowledge-e2e-new-base-{tag}")
    page.locator("input[name=_continue]").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    rows = page.locator("#documents-group tbody tr.has_original, #documents-group tbody tr")
    expect(rows.filter(has_text="porters.pdf")).to_have_count(1)
    expect(rows.filter(has_text="rota.docx")).to_have_count(1)
    # The page shows each document's status in words; the person reloads until both are ready.
    deadline = time.monotonic() + 120
    while page.locator("#documents-group").get_by_text(re.compile(r"^Ready")).count() < 2:
        assert time.monotonic() < deadline, page.locator("#documents-group").inner_text()
        time.sleep(1)
        page.reload()
    group = page.locator("#documents-group")
    expect(group.locator("tr", has_text="porters.pdf")).to_contain_text("Ready")
    expect(group.locator("tr", has_text="rota.docx")).to_contain_text("Ready")
    shot(page, f"knowledge-e2e-documents-ready-{tag}")


def _create_prompt_and_agent(page: Page, site: Site, suffix: str) -> None:
    page.goto(f"{site.url}/admin/agents_app/prompt/add/")
    page.locator("#id_name").fill(f"porters-prompt-{suffix}")
    page.locator("#id_text").fill("Answer from the porters' handbook and say where.")
    page.get_by_role("tab", name="Model").click()
    page.locator("#id_model").select_option(label=f"porters-model-{suffix}")
    page.get_by_role("tab", name="Tools").click()
    page.locator("#id_tool_entries-0-name").fill(f"knowledge:porters_{suffix}")
    shot(page, f"knowledge-e2e-prompt-tools-{suffix}")
    page.locator("input[name=_save]").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    page.goto(f"{site.url}/admin/agents_app/agent/add/")
    page.locator("#id_name").fill(f"porters_agent_{suffix}")
    page.locator("#id_title").fill(f"Porters' desk {suffix}")
    page.locator("#id_side_a_prompt").select_option(label=f"porters-prompt-{suffix}")
    page.get_by_label("State").select_option("published")  # a new agent is a draft
    page.locator("input[name=_save]").click()
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")


def _ask(page: Page, site: Site, user: str, suffix: str) -> str:
    thread_id = call_api(
        site, user, "POST", "/api/threads", {"agent_id": f"porters_agent_{suffix}"}
    )["threadId"]
    page.goto(f"{site.url}/chat/t/{thread_id}")
    expect(page.locator("#state")).to_have_attribute("data-state", "idle")
    page.locator("#composer-input").fill(QUESTION)
    page.get_by_role("button", name="Send").click()
    wait_for_messages(
        site,
        user,
        thread_id,
        lambda rows: any(
            r["role"] == "assistant" and r["status"] == "completed" and r["content"] == REPLY
            for r in rows
        ),
    )
    return thread_id


def _answer_cites_page_3(page: Page, tag: str) -> None:
    reply = page.locator("article.msg-assistant[data-status=completed]", has_text=REPLY)
    expect(reply.locator(".msg-body")).to_contain_text(REPLY)
    source = reply.locator(".msg-sources a.source-passage", has_text="page 3")
    expect(source).to_have_count(1)
    expect(source).to_contain_text("porters, page 3")
    shot(page, f"knowledge-e2e-answer-{tag}")
    with page.context.expect_page() as opened:
        source.click()
    passage = opened.value
    passage.wait_for_load_state()
    expect(passage.locator("#passage-document")).to_have_text("porters")
    expect(passage.locator("#passage-where")).to_have_text("Page 3")
    expect(passage.locator("#passage-text")).to_contain_text(ANSWER_TEXT)
    shot(passage, f"knowledge-e2e-passage-{tag}")
    passage.close()


def _outsider_gets_no_passage(page: Page, site: Site, suffix: str, tag: str) -> None:
    thread_id = _ask(page, site, "charlie", suffix)
    rows = call_api(site, "charlie", "GET", f"/api/threads/{thread_id}/messages?limit=200")[
        "messages"
    ]
    results = [r for r in rows if r["role"] == "tool"]
    assert results, rows
    said = json.dumps([r["content"] for r in results])
    assert REFUSAL in said and ANSWER_TEXT not in said, said
    reply = page.locator("article.msg-assistant[data-status=completed]", has_text=REPLY)
    expect(reply).to_have_count(1)
    expect(reply.locator(".msg-sources a.source-passage")).to_have_count(0)
    assert ANSWER_TEXT not in page.locator("#transcript").inner_text()
    shot(page, f"knowledge-e2e-outsider-{tag}")


def _walk(page: Page, site: Site, tmp: object, suffix: str, tag: str) -> None:
    _model(site, suffix)
    admin_login(page, site, "ops", PASSWORD)
    _create_base(page, site, f"porters_{suffix}", _files(tmp), tag)
    _create_prompt_and_agent(page, site, suffix)
    page.context.clear_cookies()
    chat_login(page, site, "alice")
    _ask(page, site, "alice", suffix)
    _answer_cites_page_3(page, tag)
    page.context.clear_cookies()
    chat_login(page, site, "charlie")
    _outsider_gets_no_passage(page, site, suffix, tag)
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_issue59_staff_builds_a_base_a_member_gets_a_cited_answer_an_outsider_none_at_1440(
    page: Page, site: Site, tmp_path: object
) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    _walk(page, site, tmp_path, "wide", "1440")


def test_issue59_the_same_on_a_phone_at_390(phone_page: Page, site: Site, tmp_path: object) -> None:
    _walk(phone_page, site, tmp_path, "phone", "390")
