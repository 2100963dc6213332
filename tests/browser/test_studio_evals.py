"""Issue #42: a non-developer compares two versions of a prompt in the studio before
restoring one: two eval runs (by ``manage.py run_eval`` on the stack's worker), chosen in
the list, shown side by side, the changed case marked."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)

SETUP = """
from agents_app.models import EvalDataset
from agents_app.services.evals import checks as evals
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
save_definitions([("model", ModelDefinition(name=n, provider="test", model="scripted",
    script=[{"content": t}])) for n, t in (("shop-old", "Your order A-1001 shipped."),
    ("shop-new", "Your order A-1001 shipped on 3 March; it arrives by 6 March."))],
    strict_code_names=False)
for model in ("shop-old", "shop-new"):
    save_definitions([("prompt", PromptDefinition(name="shop-prompt", model=model,
        prompt="Answer order questions.", include_chat=True)),
        ("agent", AgentDefinition(name="shop", side_a=SideConfig(prompt="shop-prompt")))],
        strict_code_names=False)
dataset = EvalDataset.objects.create(name="shop-set")
ask = [{"role": "user", "content": "When does order A-1001 arrive?"}]
evals.case_save(dataset=dataset, name="names the arrival day", messages=ask,
    checks=[{"type": "contains", "text": "arrives by"}])
evals.case_save(dataset=dataset, name="names the order", messages=ask,
    checks=[{"type": "contains", "text": "A-1001"}])
"""


def test_two_prompt_versions_side_by_side(site: Site, page: Page) -> None:
    site.python(SETUP)
    for pin, label in ((1, "shop prompt v1"), (2, "shop prompt v2")):
        site.manage(
            "run_eval", "--dataset", "shop-set", "--agent", "shop",
            "--pin", f"prompts/shop-prompt={pin}", "--label", label, "--threshold", "0",
        )  # fmt: skip
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/evalrun/")
    for label in ("shop prompt v1", "shop prompt v2"):
        page.locator("tr", has_text=label).locator("input.action-select").check()
    page.select_option("select[name=action]", "compare_two")
    page.locator("button[name=index]").click()  # the admin's "Go"
    expect(page.get_by_role("heading", name="Compare eval runs")).to_be_visible()
    totals = page.locator("#eval-totals")
    expect(totals).to_contain_text("1 of 2 (50%)")
    expect(totals).to_contain_text("2 of 2 (100%)")
    changed = page.locator("#eval-cases tr.eval-changed")
    expect(changed).to_have_count(1)
    expect(changed).to_contain_text("names the arrival day")
    shot(page, "studio-evals-compare-1440")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-evals-compare-390")
