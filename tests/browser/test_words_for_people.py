"""Issue #55 item 8 in Chromium: every refusal and policy in words for the person chatting.

- An agent whose mid-run policy is "interrupt": the reply a newer message cut short says so
  ("…because you sent a new message"), not "You stopped this reply here.".
- An agent whose mid-run policy is "refuse": the chat says to send it again once the reply is
  complete, never "its mid-run policy is reject".
- A model with no API key: "has no API key set up yet" for a person chatting (no env value
  names), and which env value to set for staff; never "refused the API key".
- A spend budget: the refusal names the agent's title and a date as people write it.
- The Logs list: a failure says what failed in a few words, never a bare "✗ Failed".

Each is looked at in 1440 and 390 px, light and dark, with screenshots.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, Page, expect

from tests.browser.support import ADMIN_PASSWORD, Site, admin_login, chat_login, shot

expect.set_options(timeout=20_000)

LONG_REPLY = " ".join(f"Word{i}" for i in range(400))
DEFINE = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
name, title, policy, model_fields = {args!r}
model = ModelDefinition(name=f"{{name}}-model", **model_fields)
prompt = PromptDefinition(name=f"{{name}}-prompt", model=model.name, prompt="Hi.",
    include_chat=True)
agent = AgentDefinition(name=name, title=title, side_a=SideConfig(prompt=prompt.name),
    mid_run_messages=policy)
save_definitions([(model.name, model), (prompt.name, prompt), (name, agent)],
    strict_code_names=False)
"""
SLOW_SCRIPT = {
    "provider": "test",
    "model": "scripted",
    "script": [{"content": LONG_REPLY}, {"content": "Short answer."}],
    "streaming": {"chunkSize": 6, "chunkDelayMs": 60},
}


def define(site: Site, name: str, title: str, policy: str, model: dict) -> None:
    site.python(DEFINE.format(args=(name, title, policy, model)))


def send(page: Page, text: str) -> None:
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def _scroll_to(target: Locator) -> None:
    """Scroll to ``target``, again if the chat re-drew the message in between: a later frame
    (the session's end, the thread's refresh) replaces the article, and Playwright's scroll
    fails on the element it had found ("not attached to the DOM") instead of finding it anew."""
    for attempt in range(5):
        expect(target).to_be_attached()
        try:
            target.scroll_into_view_if_needed()
            return
        except PlaywrightError as exc:
            if "not attached" not in str(exc) or attempt == 4:
                raise


def every_look(page: Page, name: str, target: Locator) -> None:
    """The same state at 1440 and 390 px, light and dark: still on screen, screenshotted."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
            _scroll_to(target)
            expect(target).to_be_visible()
            shot(page, f"{name}-{width}-{scheme}")


def test_an_interrupt_reads_as_a_new_message_not_a_stop(site: Site, page: Page) -> None:
    define(site, "words-interrupt", "Chatty helper", "interrupt", SLOW_SCRIPT)
    chat_login(page, site, "alice", then="/chat/?agent=words-interrupt")
    send(page, "Tell me everything")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator('[data-streaming="true"] .msg-body')).to_contain_text("Word12")
    send(page, "Actually, just the short version")
    cut = page.locator("article.msg-assistant", has_text="Word0 Word1").first
    expect(cut.locator(".msg-outcome")).to_have_text(
        "This reply stopped here because you sent a new message."
    )
    notice = page.locator(".notice-interrupted")  # neutral, not the red notice of a Stop
    expect(notice).to_have_text(
        "You sent a new message, so the agent stopped its reply to read it."
    )
    expect(page.locator("article.msg-assistant", has_text="Short answer.")).to_be_visible()
    expect(page.locator("#transcript, main").first).not_to_contain_text("You stopped this reply")
    page.reload()  # read back from the stored rows, it says the same
    expect(cut.locator(".msg-outcome")).to_have_text(
        "This reply stopped here because you sent a new message."
    )
    every_look(page, "chat-words-interrupt", cut.locator(".msg-outcome"))


def test_a_refused_mid_run_message_says_what_to_do(site: Site, page: Page) -> None:
    define(site, "words-refuse", "Patient helper", "reject", SLOW_SCRIPT)
    chat_login(page, site, "alice", then="/chat/?agent=words-refuse")
    send(page, "Tell me everything")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator('[data-streaming="true"] .msg-body')).to_contain_text("Word12")
    send(page, "And another thing")
    error = page.locator("#page-error")
    expect(error).to_contain_text("The agent is still answering")
    expect(error).to_contain_text("Send your message again when its reply is complete.")
    expect(error).not_to_contain_text("policy")
    expect(error).not_to_contain_text("reject")
    every_look(page, "chat-words-refused-mid-run", error)


NO_KEY_MODEL = {"provider": "openai", "model": "gpt-4o-mini"}


def test_a_missing_key_is_not_a_refused_key(site: Site, page: Page) -> None:
    define(site, "words-no-key", "Keyless helper", "queue", NO_KEY_MODEL)
    chat_login(page, site, "alice", then="/chat/?agent=words-no-key")
    send(page, "Hello?")
    page.wait_for_url("**/chat/t/**")
    outcome = page.locator("article.msg-assistant[data-status=failed] .msg-outcome")
    expect(outcome).to_contain_text("has no API key set up yet")
    expect(outcome).to_contain_text("Ask an administrator to add it.")
    expect(outcome).not_to_contain_text("refused")
    expect(outcome).not_to_contain_text("OPENAI_API_KEY")  # no env value names for a chatter
    state = page.locator("#state")
    expect(state).to_contain_text("has no API key set up yet")
    expect(state).not_to_contain_text("if it keeps happening")  # said once, not twice
    every_look(page, "chat-words-missing-key", outcome)
    page.context.clear_cookies()
    chat_login(page, site, "admin", password=ADMIN_PASSWORD, then="/chat/?agent=words-no-key")
    send(page, "Hello?")
    page.wait_for_url("**/chat/t/**")
    staff = page.locator("article.msg-assistant[data-status=failed] .msg-outcome")
    expect(staff).to_contain_text("Set OPENAI_API_KEY as an env value in the studio")
    every_look(page, "chat-words-missing-key-staff", staff)


BUDGET = """
from decimal import Decimal
from agents_app.models import Agent, SpendBudget
agent = Agent.objects.get(name="words-budget")
SpendBudget.objects.update_or_create(agent=agent, defaults={"monthly_limit_usd": Decimal("0")})
"""
UNBUDGET = """
from agents_app.models import SpendBudget
SpendBudget.objects.filter(agent__name="words-budget").delete()
"""


@pytest.fixture
def budgeted(site: Site) -> Iterator[None]:
    define(site, "words-budget", "Thrifty helper", "queue", SLOW_SCRIPT)
    site.python(BUDGET)
    yield
    site.python(UNBUDGET)


def test_a_budget_refusal_names_the_agent_and_a_human_date(
    site: Site, page: Page, budgeted: None
) -> None:
    chat_login(page, site, "alice", then="/chat/?agent=words-budget")
    send(page, "Hello?")
    error = page.locator("#page-error")
    expect(error).to_contain_text("for the agent “Thrifty helper” is used up")
    expect(error).to_contain_text(
        re.compile(r"start again on \d{1,2} [A-Z][a-z]+ \d{4} at midnight")
    )
    expect(error).not_to_contain_text("words-budget")
    assert not re.search(r"\d{4}-\d\d-\d\d", error.inner_text()), error.inner_text()
    every_look(page, "chat-words-budget", error)


FAILED_LOGS = """
from agents_app.models import Agent, Log, Thread
from agents_app.models.timestamps import now_us
agent = Agent.objects.get(name="support_agent")
thread = Thread.objects.create(agent=agent, origin_agent=agent, display_name="words-logs")
now = now_us()
Log.objects.create(thread=thread, model="words-model-a", error="No API key found for provider",
    error_type="authentication", created_at=now)
Log.objects.create(thread=thread, model="words-model-b",
    error="Webhook signature did not match the shared secret\\nsecond line", created_at=now - 1)
"""


def test_the_logs_list_says_what_failed(site: Site, page: Page) -> None:
    site.python(FAILED_LOGS)
    try:
        admin_login(page, site)
        page.goto(f"{site.url}/admin/agents_app/log/?q=words-model")
        rows = page.locator("#result_list tbody tr")
        expect(rows).to_have_count(2)
        key = rows.filter(has_text="words-model-a").locator(".studio-failed")
        expect(key).to_have_text("✗ Refused: the API key was missing or not accepted")
        other = rows.filter(has_text="words-model-b").locator(".studio-failed")
        expect(other).to_have_text("✗ Failed: Webhook signature did not match the shared secret")
        for outcome in page.locator(".studio-failed").all_inner_texts():
            assert outcome.strip() != "✗ Failed", outcome
        every_look(page, "studio-logs-failure-words", key)
    finally:
        site.python(
            "from agents_app.models import Thread; "
            "Thread.objects.filter(display_name='words-logs').delete()"
        )
