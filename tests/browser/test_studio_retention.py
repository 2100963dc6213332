"""The retention page as an operator uses it: found under Configure, saved, and what is in
effect shown beside each period."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot


def test_an_operator_sets_how_long_threads_are_kept(site: Site, page: Page) -> None:
    admin_login(page, site)
    page.get_by_role("link", name="Retention policy").first.click()
    in_effect = page.locator(".field-in_effect")
    expect(in_effect).to_contain_text("kept forever")  # the defaults delete nothing

    page.get_by_label("delete threads idle for (days)").fill("30")
    page.get_by_label("trim log bodies older than (days)").fill("7")
    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    page.get_by_role("link", name="Retention policy").first.click()
    row = page.locator(".field-in_effect tr", has_text="Threads")
    expect(row).to_contain_text("30 days")
    expect(row).to_contain_text("this page")
    shot(page, "studio-retention")

    # A policy that could not apply as written is refused with its reason.
    page.get_by_label("delete logs older than (days)").fill("5")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errornote, .errorlist").first).to_be_visible()
    expect(page.locator("#content")).to_contain_text("trim sooner than logs are deleted")
