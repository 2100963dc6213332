"""The studio's live thread inspector against the real stack: a session watched while it runs
(the reply streams, the log pane fills from ``log_data`` frames, a log's detail with tokens,
cost and a cURL without the key), Stop from the inspector, a waiting tool call approved from
it, and (issue #16) an image attached in the chat reaching the model's request as an image
part with a size note. Screenshots at desktop (1280 px) and phone (375 px) width."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Site, admin_login, call_api, frames, shot
from tests.browser.test_chat_images import AGENT as VISION_AGENT
from tests.browser.test_chat_images import DEFINE as VISION_DEFINE
from tests.browser.test_chat_images import REPLY as VISION_REPLY
from tests.browser.test_chat_images import _png
from tests.browser.test_pages_under_csp import COLLECT, _violations

expect.set_options(timeout=20_000)

AGENT = "slow_writer"
# Long enough to watch: about 12 s at 6 characters every 60 ms.
REPLY = " ".join(
    f"Sentence {i} of a reply the inspector shows while it streams." for i in range(20)
)
KEY = f"sk-inspector-{uuid.uuid4().hex}"

DEFINE = f"""
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(
    name="slow_model", provider="test", model="scripted", input_price=2000, output_price=4000,
    script=[{{"content": {REPLY!r}}}],
    streaming={{"chunkSize": 6, "chunkDelayMs": 60}},
)
prompt = PromptDefinition(name="slow_prompt", model="slow_model", prompt="Write at length.")
agent = AgentDefinition(name={AGENT!r}, title="Slow writer", side_a=SideConfig(prompt="slow_prompt"))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False)
"""

# A key the thread could use: the cURL must name it by placeholder only (thread-scoped, so
# no other test of the shared site sees it).
PLANT_KEY = """
from agents_app.models import EnvValue, Thread
env = EnvValue(scope="thread", thread=Thread.objects.get(pk={thread!r}), key="OPENAI_API_KEY",
               value_type="secret")
env.value = {key!r}
env.save()
"""


# The suite shares one site: the threads made here are deleted after each test, so their
# requests (the slow model has prices) do not count in later tests' dashboard figures.
MADE: list[tuple[str, str]] = []


@pytest.fixture(autouse=True)
def _delete_made_threads(site: Site) -> Iterator[None]:
    yield
    while MADE:
        user, thread_id = MADE.pop()
        call_api(site, user, "DELETE", f"/api/threads/{thread_id}")


def _thread(site: Site, user: str, agent: str) -> str:
    created = call_api(site, user, "POST", "/api/threads", {"agent_id": agent})
    MADE.append((user, str(created["threadId"])))
    return str(created["threadId"])


def _say(site: Site, user: str, thread_id: str, text: str) -> None:
    call_api(
        site, user, "POST", f"/api/threads/{thread_id}/messages", {"role": "user", "content": text}
    )


def _inspect(page: Page, site: Site, thread_id: str) -> None:
    page.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/inspect/")
    expect(page.locator("#tab-logs .pane-live")).to_have_text("live")


def test_watching_a_running_session_with_live_logs_and_a_log_detail(
    page: Page, site: Site, browser: Browser
) -> None:
    site.python(DEFINE)
    thread_id = _thread(site, "alice", AGENT)
    site.python(PLANT_KEY.format(thread=thread_id, key=KEY))
    seen = frames(page)
    page.context.add_init_script(COLLECT)
    admin_login(page, site)
    response = page.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/inspect/")
    assert response is not None
    assert "script-src 'self'" in response.headers.get("content-security-policy", "")
    _inspect(page, site, thread_id)
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "idle")
    expect(page.locator("#transcript-empty")).to_be_visible()
    expect(page.locator("#logs-empty")).to_be_visible()

    _say(site, "alice", thread_id, "Tell me a long story.")

    # The reply streams into the conversation pane, and its request shows up in the log pane
    # while it is still running (no reload: the rows come from log_data frames).
    streaming = page.locator("#transcript article.msg-assistant[data-streaming=true]")
    expect(streaming).to_contain_text("Sentence 1 of a reply")
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "running")
    row = page.locator("#log-list .log-row").first
    expect(row).to_contain_text("slow_model")
    expect(row.locator(".log-running")).to_be_visible()
    shot(page, "studio-inspector-live-desktop")
    phone = _phone_shot(browser, site, thread_id, "studio-inspector-live-phone")

    expect(row.locator(".log-done")).to_have_text("stop", timeout=40_000)
    assert any('"type":"log_data"' in f for f in seen), "the log pane was not fed by log_data"
    assert any('"type":"message_chunk"' in f for f in seen), "the reply did not stream"
    reply = page.locator("#transcript article.msg-assistant").last
    expect(reply).to_contain_text("Sentence 19 of a reply")
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "idle")
    expect(page.locator("#inspector-cost")).to_contain_text("$")

    # One log's detail: tokens in / cached / out, cost to the cent, timing, the cURL.
    row.click()
    detail = page.locator("#log-detail")
    expect(detail).to_be_visible()
    expect(detail.locator("[data-fact=output_tokens]")).to_have_text(str(-(-len(REPLY) // 4)))
    expect(detail.locator("[data-fact=input_tokens]")).not_to_have_text("0")
    expect(detail.locator("[data-fact=cached_tokens]")).to_have_text("0")
    expect(detail.locator("[data-fact=cost]")).to_have_text(_cents_pattern())
    expect(detail.locator("[data-fact=ttft]")).not_to_have_text("–")
    expect(detail.locator("[data-fact=finish_reason]")).to_have_text("stop")
    expect(detail.locator(".log-request pre")).to_contain_text("Write at length.")
    detail.get_by_text("cURL (the key is a placeholder)").click()
    curl = detail.locator("pre.log-curl")
    expect(curl).to_contain_text("curl -X POST https://api.openai.com/v1/chat/completions")
    expect(curl).to_contain_text('"authorization: Bearer $OPENAI_API_KEY"')
    assert KEY not in page.content()
    assert not any(KEY in f for f in seen)
    shot(page, "studio-inspector-log-detail-desktop")
    _open_detail_on(phone, "studio-inspector-log-detail-phone")
    phone.context.close()
    assert _violations(page) == []
    assert page.console_errors == []  # type: ignore[attr-defined]


def _cents_pattern() -> object:
    import re

    return re.compile(r"^\$\d+\.\d\d$")


def _phone_shot(browser: Browser, site: Site, thread_id: str, name: str) -> Page:
    """The same inspector at 375 px (a phone), watched while the session runs."""
    ctx = browser.new_context(
        viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True
    )
    phone = ctx.new_page()
    admin_login(phone, site)
    _inspect(phone, site, thread_id)
    expect(phone.locator("#log-list .log-row").first).to_contain_text("slow_model")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways at phone width ({width}px)"
    shot(phone, name)
    return phone


def _open_detail_on(phone: Page, name: str) -> None:
    phone.locator("#log-list .log-row").first.click()
    expect(phone.locator("#log-detail [data-fact=finish_reason]")).to_have_text("stop")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the log detail scrolls sideways at phone width ({width}px)"
    shot(phone, name)


def test_stop_from_the_inspector(page: Page, site: Site) -> None:
    site.python(DEFINE)
    thread_id = _thread(site, "bob", AGENT)
    admin_login(page, site)
    _inspect(page, site, thread_id)
    _say(site, "bob", thread_id, "Write something long.")
    expect(page.locator("#transcript article.msg-assistant[data-streaming=true]")).to_contain_text(
        "Sentence 1"
    )
    stop = page.locator("#inspector-stop")
    expect(stop).to_be_visible()
    stop.click()
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "stopped")
    expect(page.locator("#inspector-flash")).to_contain_text("Stop requested")
    expect(page.locator("#transcript .notice-stopped")).to_be_visible()
    expect(page.locator("#inspector-continue")).to_be_visible()
    expect(stop).to_be_hidden()
    stored = call_api(site, "bob", "GET", f"/api/threads/{thread_id}/messages?limit=50")
    replies = [m for m in stored["messages"] if m["role"] == "assistant"]
    assert all("Sentence 19" not in (m["content"] or "") for m in replies), "it did not stop"
    # A person's stop is no failure (as on the Logs page): the request it cut short reads
    # "■ Stopped" with no red bar or badge, and the state dot and the notice are not red.
    row = page.locator("#log-list .log-row").first
    expect(row.locator(".log-stopped")).to_have_text("■ Stopped")
    expect(row).not_to_have_class(re.compile(r"\blog-failed\b"))
    expect(row.locator(".log-error")).to_have_count(0)
    assert _colour(page, "#inspector-state", "::before", "background-color") != DANGER
    assert _colour(page, "#transcript .notice-stopped", "", "color") == _colour(
        page, "#transcript .msg-assistant", "", "color"
    ), "the stop notice is drawn in the failure colours"
    row.click()
    expect(page.locator("#log-detail .log-title .log-stopped")).to_have_text("■ Stopped")
    expect(page.locator("#log-detail .log-error-text")).to_have_count(0)
    page.locator("#log-back").click()
    shot(page, "studio-inspector-stopped")
    # A reload reads the stored logs, not the live frames: still a stop, not a failure.
    page.reload()
    row = page.locator("#log-list .log-row").first
    expect(row.locator(".log-stopped")).to_have_text("■ Stopped")
    expect(row.locator(".log-error")).to_have_count(0)
    assert page.console_errors == []  # type: ignore[attr-defined]


DANGER = "rgb(179, 38, 30)"  # --ins-danger


def _colour(page: Page, selector: str, pseudo: str, prop: str) -> str:
    return str(
        page.locator(selector).first.evaluate(
            f"(n) => getComputedStyle(n, {pseudo!r} || null).{_camel(prop)}"
        )
    )


def _camel(prop: str) -> str:
    head, *rest = prop.split("-")
    return head + "".join(p.capitalize() for p in rest)


FAILING = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(
    name="refused_model", provider="test", model="scripted",
    script=[{"error": {"message": "Incorrect API key provided", "status": 401}}],
)
prompt = PromptDefinition(name="refused_prompt", model="refused_model", prompt="Answer.")
agent = AgentDefinition(name="refused_writer", title="Refused writer",
                        side_a=SideConfig(prompt="refused_prompt"))
save_definitions([("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False)
"""


def test_a_failed_request_stays_red_in_the_inspector(page: Page, site: Site) -> None:
    """The stop's neutral look is for a person's stop only: a provider's refusal is a failure."""
    site.python(FAILING)
    thread_id = _thread(site, "bob", "refused_writer")
    admin_login(page, site)
    _inspect(page, site, thread_id)
    _say(site, "bob", thread_id, "Hello?")
    row = page.locator("#log-list .log-row").first
    expect(row.locator(".log-error")).to_have_text("failed")
    expect(row).to_have_class(re.compile(r"\blog-failed\b"))
    expect(row.locator(".log-stopped")).to_have_count(0)
    assert _colour(page, "#log-list .log-row .log-error", "", "color") == DANGER
    row.click()
    expect(page.locator("#log-detail .log-error-text")).to_contain_text("Incorrect API key")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_approving_a_waiting_call_from_the_inspector(page: Page, site: Site) -> None:
    thread_id = _thread(site, "alice", "approval-agent")
    admin_login(page, site)
    _inspect(page, site, thread_id)
    _say(site, "alice", thread_id, "Where is my order A-1001?")
    pending = page.locator("#inspector-pending")
    expect(pending).to_be_visible()
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "parked")
    call = pending.locator(".pending-call")
    expect(call).to_contain_text("lookup_order")
    expect(call.locator("pre")).to_contain_text('"order_id": "A-1001"')
    shot(page, "studio-inspector-approval-waiting")

    # Rejecting needs a reason; then approve instead.
    call.get_by_role("button", name="Reject").click()
    expect(call).to_contain_text("Give a reason")
    call.get_by_role("button", name="Approve").click()
    expect(pending).to_be_hidden()
    expect(
        page.locator("#transcript article.msg-assistant").filter(has_text="all done")
    ).to_be_visible()
    expect(page.locator("#inspector-state")).to_have_attribute("data-state", "idle")
    tool_log = page.locator("#log-list .log-tool").filter(has_text="lookup_order")
    expect(tool_log).to_be_visible()
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_an_image_attached_in_the_chat_is_an_image_part_of_the_logged_request(
    page: Page, site: Site, tmp_path: Path
) -> None:
    site.python(VISION_DEFINE)
    admin_login(page, site)  # staff: the chat page links the thread to the inspector
    page.goto(f"{site.url}/chat/?agent={VISION_AGENT}")
    page.locator("#file-input").set_input_files(str(_png(tmp_path / "square.png", (220, 20, 20))))
    expect(page.locator("#attachments .chip")).to_contain_text("square.png")
    page.get_by_label("Message").fill("What is in this picture?")
    page.get_by_label("Message").press("Enter")
    page.wait_for_url("**/chat/t/**")
    expect(page.locator("article.msg-assistant").last).to_contain_text(VISION_REPLY)

    page.get_by_role("link", name="Inspect in the studio").click()
    page.wait_for_url("**/inspect/")
    row = page.locator("#log-list .log-row").filter(has_text="vision_model").first
    expect(row.locator(".log-done")).to_be_visible()
    row.click()
    request = page.locator("#log-detail .log-request pre")
    expect(request).to_contain_text('"type": "image_url"')
    expect(request).to_contain_text("data:image/png;base64,[base64: ")
    assert "iVBORw0KGgo" not in request.inner_text()  # no PNG bytes in the log
    expect(page.locator("#transcript article.msg-user .msg-attachments img")).to_have_count(1)
    shot(page, "studio-inspector-image-request")
    assert page.console_errors == []  # type: ignore[attr-defined]


HOSTILE = '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">'


def test_files_and_values_tabs_show_user_content_inert(
    page: Page, site: Site, tmp_path: Path
) -> None:
    import httpx

    site.python(DEFINE)
    thread_id = _thread(site, "alice", AGENT)
    auth = {"Authorization": f"Bearer {site.api_key('alice')}"}
    for path, body, kind in (
        ("page.html", HOSTILE.encode(), "text/html"),
        ("square.png", _png(tmp_path / "square.png", (20, 160, 60)).read_bytes(), "image/png"),
    ):
        httpx.post(
            f"{site.url}/api/threads/{thread_id}/fs/{path}",
            content=body,
            headers={**auth, "Content-Type": kind},
            timeout=15,
        ).raise_for_status()
    call_api(
        site, "alice", "POST", f"/api/threads/{thread_id}/kv", {"key": "plan", "value": {"step": 2}}
    )
    admin_login(page, site)
    _inspect(page, site, thread_id)

    page.get_by_role("tab", name="Files").click()
    page.get_by_role("button", name="/page.html").click()
    preview = page.locator("#file-preview pre")
    expect(preview).to_have_text(HOSTILE)  # the markup as text, never rendered
    page.get_by_role("button", name="/square.png").click()
    picture = page.locator("#file-preview img")
    expect(picture).to_be_visible()
    assert picture.evaluate("img => img.naturalWidth") == 320
    assert page.evaluate("window.__pwned") is None
    shot(page, "studio-inspector-files")

    page.get_by_role("tab", name="Values").click()
    expect(page.locator("#value-list")).to_contain_text("plan")
    expect(page.locator("#value-list pre")).to_contain_text('"step": 2')
    assert page.console_errors == []  # type: ignore[attr-defined]


SEED_TABS = """
from datetime import timedelta
from django.utils import timezone
from agents_app.models import ScheduledEffect, Thread
parent = Thread.objects.get(pk={thread!r})
ScheduledEffect.objects.create(thread=parent, name="send_reminder", due_at=timezone.now() + timedelta(days=2))
child = Thread.objects.create(agent=parent.agent, origin_agent=parent.agent, parent=parent,
                              display_name="researcher", child_status="idle")
Thread.objects.create(agent=parent.agent, origin_agent=parent.agent, parent=child,
                      display_name="fact checker", child_status="failed")
print(child.pk)
"""


def test_effects_cancel_and_the_subagent_tree_link_to_each_child(page: Page, site: Site) -> None:
    site.python(DEFINE)
    thread_id = _thread(site, "alice", AGENT)
    child_id = site.python(SEED_TABS.format(thread=thread_id)).strip().splitlines()[-1]
    admin_login(page, site)
    _inspect(page, site, thread_id)

    page.get_by_role("tab", name="Effects").click()
    effect = page.locator("#effect-list .effect").filter(has_text="send_reminder")
    expect(effect).to_contain_text("due in 1 day · not run yet (up to 3 tries)")
    expect(effect.get_by_role("button", name="Run now")).to_be_visible()
    effect.get_by_role("button", name="Cancel").click()
    expect(effect).to_contain_text("Canceled by a person")
    expect(effect.get_by_role("button", name="Cancel")).to_have_count(0)
    expect(effect.get_by_role("button", name="Run again")).to_be_visible()

    page.get_by_role("tab", name="Subagents").click()
    tree = page.locator("#subagent-tree")
    expect(tree.locator(".subagent")).to_have_count(2)
    nested = tree.locator(".subagent .subagent").filter(has_text="fact checker")
    expect(nested.locator(".log-badge")).to_have_text("failed")
    shot(page, "studio-inspector-subagents")
    tree.get_by_role("link", name="researcher").click()
    page.wait_for_url(f"**/thread/{child_id}/inspect/")
    expect(page.locator(".breadcrumbs")).to_contain_text("Parent thread")
    page.locator(".breadcrumbs").get_by_role("link", name="Parent thread").click()
    page.wait_for_url(f"**/thread/{thread_id}/inspect/")
    assert page.console_errors == []  # type: ignore[attr-defined]
