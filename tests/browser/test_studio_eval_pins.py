"""Issue #55 item 1 in Chromium: an eval run's versions are chosen from a list. The run form
shows a select per definition the chosen agent uses (its prompt, its model), each offering
"current" and its versions in words; choosing another agent lists its own (pressed by the
script, or by hand without JavaScript); what is started is what was chosen. Screenshots at
1440 and 390 px, light and dark."""

from __future__ import annotations

import json

from playwright.sync_api import Browser, Page, expect

from tests.browser.support import Site, admin_login, shot

expect.set_options(timeout=20_000)

SETUP = """
from agents_app.models import EvalDataset
from agents_app.services.evals import checks as evals
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
done = EvalDataset.objects.filter(name="tale-set").exists()  # once per site: two versions each
tellings = [("Once upon a time.", "first telling"), ("Long ago.", "changed the opening")]
for text, note in [] if done else tellings:
    save_definitions([
        ("model", ModelDefinition(name="tale-model", provider="test", model="scripted",
            script=[{"content": text}])),
        ("prompt", PromptDefinition(name="tale-prompt", model="tale-model", prompt=text)),
        ("agent", AgentDefinition(name="tale", side_a=SideConfig(prompt="tale-prompt"))),
    ], strict_code_names=False, note=note)
if not done:
    evals.case_save(dataset=EvalDataset.objects.create(name="tale-set"), name="opens",
        checks=[], messages=[{"role": "user", "content": "Tell me a tale."}])
"""


def _versions(site: Site, label: str) -> dict[str, int]:
    out = site.python(
        "import json; from agents_app.models import EvalRun;"
        f"print(json.dumps(EvalRun.objects.get(label={label!r}).versions))"
    )
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _fits(page: Page, width: int) -> None:
    for select in page.locator("[data-eval-pins] select").all():
        box = select.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


def test_versions_are_chosen_from_the_agents_own_definitions(site: Site, page: Page) -> None:
    site.python(SETUP)
    admin_login(page, site)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{site.url}/admin/agents_app/evalrun/add/")
    page.get_by_label("Dataset").select_option(label="tale-set")
    page.get_by_label("Label").fill("tale from the list")
    page.locator("#id_agent").select_option("tale")  # the script lists tale's definitions
    pins = page.locator("[data-eval-pins]")
    expect(pins).to_contain_text("What agent tale uses")
    expect(pins.locator("label")).to_have_text(
        ["Agent tale", "Prompt tale-prompt", "Model tale-model"]
    )
    prompt = page.get_by_label("Prompt tale-prompt")
    expect(prompt.locator("option").first).to_have_text("current (version 2)")
    expect(prompt.locator("option").nth(1)).to_contain_text("2 — ")
    expect(prompt.locator("option").nth(1)).to_contain_text(": changed the opening")
    expect(page.get_by_label("Label")).to_have_value("tale from the list")  # kept
    prompt.select_option("1")
    expect(page.locator("textarea:visible", has_text="{")).to_have_count(0)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            _fits(page, width)
            shot(page, f"studio-eval-run-versions-{scheme}-{width}")
    page.emulate_media(color_scheme="light")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    assert _versions(site, "tale from the list") == {"prompts/tale-prompt": 1}
    assert not page.console_errors  # type: ignore[attr-defined]


def test_without_javascript_the_button_lists_the_chosen_agent(site: Site, browser: Browser) -> None:
    site.python(SETUP)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        admin_login(page, site)
        page.goto(f"{site.url}/admin/agents_app/evalrun/add/")
        page.get_by_label("Dataset").select_option(label="tale-set")
        page.get_by_label("Label").fill("tale without scripts")
        page.locator("#id_agent").select_option("tale")
        page.get_by_role("button", name="List what the chosen agent uses").click()
        page.get_by_label("Model tale-model").select_option("1")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator(".messagelist .success")).to_be_visible()
        assert _versions(site, "tale without scripts") == {"models/tale-model": 1}
    finally:
        context.close()
