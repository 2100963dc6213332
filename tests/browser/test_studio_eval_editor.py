"""Issue #55 item 1 in Chromium: an eval case is written with form controls (messages as rows
with who says it and what, checks as typed rows, env values as name and value), no JSON box
in sight; what is saved is what the rows say; a mistake comes back in words on the field,
its row marked. Screenshots at 1440 and 390 px, light and dark."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)


def _stored(site: Site) -> dict[str, object]:
    out = site.python(
        "import json; from agents_app.models import EvalCase;"
        "c = EvalCase.objects.get(dataset__name='shop questions');"
        "print(json.dumps({'messages': c.messages, 'checks': c.checks, 'env': c.env}))"
    )
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_case_is_written_with_form_controls(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/evaldataset/add/")
    page.locator("#id_name").fill("shop questions")
    page.get_by_text("Add another Eval case").click()
    case = page.locator(".inline-related:not(.empty-form)").last
    case.locator("input[name$='-name']").fill("names the arrival day")
    expect(case.locator("textarea[data-eval-builder]")).to_have_count(3)
    for box in case.locator("textarea[data-eval-builder]").all():
        expect(box).to_be_hidden()  # the JSON stays behind the rows

    messages = case.locator(".eval-editor[data-editor=messages]")
    messages.get_by_role("button", name="Add a message from the person").click()
    messages.locator("[data-field=content]").last.fill("Where is my order A-1001?")
    messages.get_by_role("button", name="Add an earlier reply of the agent").click()
    messages.locator("[data-field=content]").last.fill("It shipped on 3 March.")
    messages.get_by_role("button", name="Add a message from the person").click()
    messages.locator("[data-field=content]").last.fill("When will it arrive?")

    checks = case.locator(".eval-editor[data-editor=checks]")
    checks.get_by_role("button", name="Add a check").click()
    checks.locator("[data-field=text]").last.fill("arrives")
    checks.get_by_role("button", name="Add a check").click()
    checks.locator("[data-field=type]").last.select_option("tool_called")
    checks.locator("[data-field=name]").last.fill("lookup_order")
    checks.locator("[data-field=arguments]").last.fill("order_id = A-1001")
    checks.get_by_role("button", name="Add a check").click()
    checks.locator("[data-field=type]").last.select_option("stop_reason")
    checks.get_by_role("button", name="Add a check").click()
    checks.locator("[data-field=type]").last.select_option("judge")
    checks.locator("[data-field=agent]").last.select_option("support_agent")
    checks.locator("[data-field=criteria]").last.fill("Gives a day, politely.")

    env = case.locator(".eval-editor[data-editor=env]")
    env.get_by_role("button", name="Add an env value").click()
    env.locator("[data-field=name]").fill("SHOP")
    env.locator("[data-field=value]").fill("Paris")
    expect(page.locator("textarea:visible", has_text='"role"')).to_have_count(0)
    shot(page, "studio-eval-case-editor-1440")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert _stored(site) == {
        "messages": [
            {"role": "user", "content": "Where is my order A-1001?"},
            {"role": "assistant", "content": "It shipped on 3 March."},
            {"role": "user", "content": "When will it arrive?"},
        ],
        "checks": [
            {"type": "contains", "text": "arrives"},
            {"type": "tool_called", "name": "lookup_order", "arguments": {"order_id": "A-1001"}},
            {"type": "stop_reason", "equals": "stop_on_response"},
            {"type": "judge", "agent": "support_agent", "criteria": "Gives a day, politely."},
        ],
        "env": {"SHOP": "Paris"},
    }

    # Opened again, the rows are there; a check left empty comes back in words, its row marked.
    case = page.locator(".inline-related:not(.empty-form)").first
    checks = case.locator(".eval-editor[data-editor=checks]")
    expect(checks.locator(".eval-row")).to_have_count(4)
    expect(checks.locator("[data-field=type]").nth(3)).to_have_value("judge")
    checks.get_by_role("button", name="Add a check").click()
    page.get_by_role("button", name="Save and continue editing").click()
    error = page.locator(".field-checks .errorlist")
    expect(error).to_have_text("Check 5: the text to look for is required.")
    expect(page.locator(".eval-editor[data-editor=checks] .eval-row").nth(4)).to_have_class(
        re.compile("eval-row-error")
    )
    assert "checks.4" not in page.content()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            shot(page, f"studio-eval-case-error-{scheme}-{width}")
    assert not page.console_errors  # type: ignore[attr-defined]
