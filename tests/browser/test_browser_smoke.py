"""The browser harness itself: the stack serves the studio with its styles, chromium signs in."""

from __future__ import annotations

from playwright.sync_api import Page

from tests.browser.support import Site, admin_login, shot


def test_admin_signs_in_and_the_studio_is_styled(site: Site, page: Page) -> None:
    admin_login(page, site)
    # Static files are served (collectstatic ran before Daphne): the admin stylesheet applies.
    color = page.eval_on_selector("#header", "el => getComputedStyle(el).backgroundColor")
    assert color not in ("", "rgba(0, 0, 0, 0)")
    assert page.locator("text=support_agent").count() + page.locator("a[href*=agent]").count() > 0
    shot(page, "studio-home")
