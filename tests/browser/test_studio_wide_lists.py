"""Issue #55 item 6 in Chromium: the Agents, Threads and Models lists are not clipped at 1440
or 390 px, light or dark. Each either fits its box or scrolls inside it (never the page),
and scrolled to its far end it still shows the row's name (the first column stays put).
Screenshots of each list at both widths in both schemes."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.support import Site, admin_login, shot

LISTS = {"agents": "agent", "threads": "thread", "models": "languagemodel"}

# A long title and a long model id: real lists have them, and they are what widened the tables.
SETUP = """
from agents_app.models import Agent, LanguageModel, Thread
agent = Agent.objects.get(name="support_agent")
if not Thread.objects.filter(display_name="wide-list-seed").exists():
    Thread.objects.create(agent=agent, origin_agent=agent, display_name="wide-list-seed",
        last_message_preview="Where is my order A-1001? It was due on Tuesday and " * 3)
if not agent.title:
    Agent.objects.filter(pk=agent.pk).update(title="Customer support for orders, returns and refunds")
LanguageModel.objects.filter(pk=LanguageModel.objects.order_by("pk").first().pk).update(
    input_price="1.500000", output_price="6.000000")
"""

MEASURE = """() => {
  const box = document.querySelector('#changelist .results');
  const table = document.querySelector('#result_list');
  const row = table.querySelector('tbody tr');
  const name = row.querySelector('th');
  box.scrollLeft = box.scrollWidth;
  const boxRect = box.getBoundingClientRect();
  const nameRect = name.getBoundingClientRect();
  return {
    page: document.documentElement.scrollWidth, viewport: window.innerWidth,
    box: boxRect.width, boxRight: boxRect.right, table: table.getBoundingClientRect().width,
    overflow: getComputedStyle(box).overflowX,
    nameLeft: nameRect.left - boxRect.left, nameRight: nameRect.right - boxRect.left,
    nameText: name.innerText.trim(),
  };
}"""


@pytest.mark.parametrize("which", list(LISTS))
def test_wide_lists_fit_or_scroll_inside_their_box(site: Site, page: Page, which: str) -> None:
    site.python(SETUP)
    admin_login(page, site)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (1440, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{site.url}/admin/agents_app/{LISTS[which]}/")
            found: dict[str, Any] = page.evaluate(MEASURE)
            where = (which, scheme, width, found)
            assert found["page"] <= found["viewport"], where  # the page itself never scrolls
            assert found["boxRight"] <= found["viewport"] + 1, where
            if found["table"] > found["box"] + 1:  # wider than its box: it scrolls inside it
                assert found["overflow"] == "auto", where
            # Scrolled to the far end, the row's name is still in view.
            assert found["nameLeft"] >= -1 and found["nameRight"] <= found["box"] + 1, where
            assert found["nameText"], where
            page.evaluate("document.querySelector('#changelist .results').scrollLeft = 0")
            shot(page, f"studio-list-{which}-{scheme}-{width}")
