"""The agent Structure page (demo support agent) and the dashboard's charts after a few
scripted sessions, at desktop (1280 px) and phone (375 px) widths."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Site, admin_login, call_api, shot, wait_for_messages

expect.set_options(timeout=15_000)

# A priced scripted model, so the spend chart has something to draw: each reply reports
# 1,200 prompt and 300 completion tokens, i.e. $0.012 + $0.009 = $0.021 a request. The
# first request of each thread fails with a 503 (the script follows the thread's request
# sequence) and is retried on the same model: 3 of 6 requests fail.
SETUP = """
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from agents_app.services.definitions.saves import save_definitions
reply = {"content": "Charted.", "usage": {"promptTokens": 1200, "completionTokens": 300},
         "delayMs": 120}
overloaded = {"error": {"message": "Overloaded", "status": 503}}
save_definitions([
    ("t", ModelDefinition(name="chart_model", provider="test", model="scripted-chart",
        inputPrice=10, outputPrice=30, script=[overloaded] + [reply] * 6)),
    ("t", PromptDefinition(name="chart_prompt", model="chart_model", prompt="Answer.")),
    ("t", AgentDefinition(name="chart_agent", sideA={"prompt": "chart_prompt"})),
])
"""
TEARDOWN = """
from agents_app.models import Agent, LanguageModel, Prompt, Thread
Thread.objects.filter(agent__name="chart_agent").delete()
Agent.objects.filter(name="chart_agent").delete()
Prompt.objects.filter(name="chart_prompt").delete()
LanguageModel.objects.filter(name="chart_model").delete()
"""
SESSIONS = 3
# Written straight to the tables: saving through the studio would refuse these names, but
# a code tool or hook removed from the code after the save leaves exactly this behind.
GAPS = """
from agents_app.models import Agent, LanguageModel, Prompt, PromptPart, PromptTool
model = LanguageModel.objects.get(name="support_model")
prompt = Prompt.objects.create(name="gaps_prompt", model=model, hooks=["gone_hook"])
PromptPart.objects.create(prompt=prompt, position=0, type="text", content="Help.")
PromptPart.objects.create(prompt=prompt, position=1, type="env", env_key="SHOP_NAME")
for i, name in enumerate(["lookup_order", "removed_tool", "debate_pro"]):
    PromptTool.objects.create(prompt=prompt, position=i, name=name)
Agent.objects.create(name="gaps_agent", title="Gaps", side_a_prompt=prompt, side_a_stop_tool="finish")
"""
GAPS_TEARDOWN = """
from agents_app.models import Agent, Prompt
Agent.objects.filter(name="gaps_agent").delete()
Prompt.objects.filter(name="gaps_prompt").delete()
"""


@pytest.fixture(scope="module")
def charted(site: Site) -> Iterator[Site]:
    site.python(SETUP)
    try:
        for n in range(SESSIONS):
            thread = call_api(site, "alice", "POST", "/api/threads", {"agent_id": "chart_agent"})
            thread_id = thread["threadId"]
            call_api(
                site,
                "alice",
                "POST",
                f"/api/threads/{thread_id}/messages",
                {"role": "user", "content": f"question {n}"},
            )
            wait_for_messages(
                site,
                "alice",
                thread_id,
                lambda rows: any(
                    r["role"] == "assistant" and r["status"] == "completed" for r in rows
                ),
            )
        yield site
    finally:
        site.python(TEARDOWN)  # the suite shares one site: leave no agent or threads behind


@pytest.fixture
def narrow_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def _fits_width(page: Page) -> None:
    """Nothing makes the page scroll sideways (tables scroll inside their own panel)."""
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"


def test_structure_page_of_the_demo_support_agent(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/agent/")
    row = page.locator("#result_list tr", has_text="support_agent")
    row.get_by_role("link", name="Structure").click()
    page.wait_for_url(re.compile(r".*/admin/agents_app/agent/\d+/structure/$"))
    expect(page.locator("h1")).to_have_text("Structure of Support (demo)")
    expect(page.locator("#structure-summary")).to_contain_text("Nothing missing")
    tree = page.locator("#structure-tree")
    expect(tree.locator(".st-node")).to_have_count(7)
    kinds = tree.locator(".st-node").evaluate_all(
        "nodes => nodes.map(n => n.dataset.kind + ':' + n.dataset.name)"
    )
    assert kinds == [
        "agent:support_agent",
        "side:Side A",
        "prompt:support_prompt",
        "model:support_model",
        "prompt:house_style",
        "model:support_model",
        "tool:lookup_order",
    ]
    tool = tree.locator('.st-node[data-name="lookup_order"]')
    expect(tool).to_contain_text("Code tool")
    expect(tool).to_contain_text("Look up an order by its number")
    shot(page, "studio-structure")
    # Each name opens its editor.
    tree.locator('.st-node[data-name="house_style"] a').click()
    expect(page.locator("#id_name")).to_have_value("house_style")
    page.go_back()
    tool.get_by_role("link", name="lookup_order").click()
    page.wait_for_url(re.compile(r".*/admin/catalog/#tools$"))
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_structure_page_marks_what_is_missing(site: Site, page: Page) -> None:
    site.python(GAPS)
    try:
        admin_login(page, site)
        page.goto(f"{site.url}/admin/agents_app/agent/?q=gaps_agent")
        page.locator("#result_list").get_by_role("link", name="Structure").click()
        expect(page.locator("#structure-summary")).to_have_text(
            re.compile(r"4 things to fix, marked ⚠ below")
        )
        warnings = page.locator(".st-warning")
        expect(warnings).to_have_text(
            [
                re.compile("The stop tool finish is not among gaps_prompt's tools"),
                re.compile("Nothing is called removed_tool"),
                re.compile(
                    "house_style has no tool description|This prompt has no tool description"
                ),
                re.compile("No hook called gone_hook is defined in code"),
            ]
        )
        expect(page.locator('.st-node[data-name="SHOP_NAME"]')).to_contain_text(
            "each user or thread must give it"
        )
        shot(page, "studio-structure-warnings")
    finally:
        site.python(GAPS_TEARDOWN)


def test_structure_page_at_phone_width(site: Site, narrow_page: Page) -> None:
    page = narrow_page
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/agent/?q=support_agent")
    page.locator("#result_list").get_by_role("link", name="support_agent").click()
    page.locator("#structure-link").click()
    expect(page.locator("#structure-tree .st-node")).to_have_count(7)
    _fits_width(page)
    shot(page, "studio-structure-phone")


def test_dashboard_charts_after_scripted_sessions(charted: Site, page: Page) -> None:
    admin_login(page, charted)
    page.goto(f"{charted.url}/admin/")
    charts = page.locator("#usage-charts")
    expect(charts.locator("h2")).to_contain_text("Usage from")
    # Every chart is drawn, and chart_agent's bars are in the per-agent ones.
    for chart in ("cost-by-model", "tokens-by-model", "requests-by-model", "cost-by-agent",
                  "tokens-by-agent", "requests-by-agent", "error-rate", "latency", "sessions"):  # fmt: skip
        expect(page.locator(f"#chart-{chart} svg.studio-chart-svg")).to_be_visible()
    legend = page.locator(
        "#chart-requests-by-agent .studio-chart-legend li", has_text="chart_agent"
    )
    expect(legend).to_contain_text(f"{2 * SESSIONS} requests")  # with the failed attempts
    spend = page.locator("#chart-cost-by-model .studio-chart-legend li", has_text="chart_model")
    expect(spend).to_contain_text("$0.06")  # 3 × $0.021 = $0.063, to the cent
    tokens = page.locator("#chart-tokens-by-agent .studio-chart-legend li", has_text="chart_agent")
    expect(tokens).to_contain_text("4,500 tokens")
    bars = page.locator("#chart-requests-by-agent rect title", has_text="chart_agent")
    expect(bars.first).to_have_text(re.compile(r"chart_agent: 6 requests$"))
    # Other tests' models are drawn too (one site for the suite): one row per model.
    expect(page.locator("#chart-latency")).to_contain_text("chart_model")
    latency = page.locator("#chart-latency svg text", has_text="p95")
    expect(latency.first).to_have_text(re.compile(r"^p95 [\d,.]+ m?s$"))
    expect(page.locator("#chart-error-rate")).to_contain_text("chart_model")
    expect(page.locator("#chart-error-rate")).to_contain_text("50.0% (3 of 6)")
    # Money on the dashboard reads to the cent, never "$0.063" or "$0.1234".
    for text in page.locator("#content-main").all_inner_texts():
        assert not re.search(r"\$\d[\d,]*\.\d{3}", text)
    shot(page, "studio-dashboard-charts")

    # A date range: a bad one is explained in words, a good one is drawn.
    page.locator("#usage-range input[name=from]").fill("2026-03-09")
    page.locator("#usage-range input[name=to]").fill("2026-03-01")
    page.locator("#usage-range button").click()
    expect(page.locator("#range-error")).to_contain_text(
        "The start date is after the end date: swap them."
    )
    page.locator("#usage-range").get_by_role("link", name="30").click()
    expect(page.locator("#range-error")).to_have_count(0)
    expect(page.locator("#chart-requests-by-agent rect").first).to_be_visible()
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_dashboard_charts_at_phone_width(charted: Site, narrow_page: Page) -> None:
    page = narrow_page
    admin_login(page, charted)
    page.goto(f"{charted.url}/admin/")
    expect(page.locator("#chart-cost-by-model svg.studio-chart-svg")).to_be_visible()
    _fits_width(page)
    shot(page, "studio-dashboard-charts-phone")
