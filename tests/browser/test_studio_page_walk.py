"""Issue #55, "the page walk": one staff sign-in visits every studio page (the dashboard, every
admin list and the first change form of each, the code catalog, an agent's structure and
versions, the thread inspector and its live view and a log in it, the chat's list and a
thread) and fails on a machine format shown to a person:

- a raw ISO time (``2026-12-06T06:44:05``): people read "6 Dec 2026, 06:44" or "3 minutes ago";
- a millisecond count over 999 (``19320 ms``): people read "19.3 s";
- a price with trailing zeros (``1.500000``): people read "$1.50";
- a snake_case code (``stop_on_response``) in the page's visible text: people read
  "Answered", the code stays in a tooltip.

What counts as shown to a person: the text a reader sees (rendered, not hidden), outside
``code``, ``pre``, ``kbd`` and ``samp`` elements (a code block or a name from code, set apart
as such on purpose) and outside form fields (a value the person edits is theirs). Attribute
values (tooltips, ``datetime``) are for machines and for whoever searches for the code.

Deliberate exceptions to the snake_case rule, each with its reason:
- names people gave their own definitions and data (agents, prompts, models and their
  provider model ids, MCP servers, A2A agents, env values, eval datasets and cases, schedules, users,
  thread names, tags, knowledge bases and their documents (and a base's search tool,
  ``search_<base>``), credential grants, OAuth clients' names), also of rows deleted or renamed since, which the history pages
  (recent actions, the audit log) and the logs behind the usage charts still name:
  identifiers they chose and search by, not codes of ours;
- names from the code registry (tools, hooks, effects, thread endpoints): what a prompt
  lists by name, documented in the code catalog;
- such a name shortened with an ellipsis to fit a narrow place (a chart's label);
- tokens that are part of a URL, a path or a file name (a ``/`` or a ``.ext`` in the word):
  an address is copied as it is;
- words quoted from a conversation (``[data-verbatim]``: a message's content, an eval's
  answer): what a person, a model or a tool said, shown as it was said.

Seeded first: the demo agents, one finished chat session, one finished eval run and one
finished schedule run. One browser, one sign-in; every page is one ``goto`` (add forms included).
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page

from tests.browser.support import (
    ADMIN_PASSWORD,
    Site,
    admin_login,
    call_api,
    shot,
    wait_for_messages,
)
from tests.integration.stack import wait_until

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:")
LONG_MS = re.compile(r"\b\d{4,} ?ms\b")
TRAILING_ZEROS = re.compile(r"\d+\.\d*0{3,}\b")
SNAKE = re.compile(r"(?<![\w/.:=?&#@-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/@-]|\.\w)")

# Text nodes a person reads: rendered, outside code-like elements and form fields.
VISIBLE_TEXT = """() => {
  const skip = 'code, pre, kbd, samp, script, style, noscript, template, textarea, select, option, [data-verbatim]';
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue.trim();
    if (!text) continue;
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    if (parent.checkVisibility && !parent.checkVisibility({checkVisibilityCSS: true})) continue;
    out.push(text);
  }
  return out;
}"""

SEED_NAMES = r"""
import json
from agents_app.base.code_registry import get_registry
from agents_app.models import (A2aAgent, Agent, CredentialGrant, EnvValue, EvalCase, EvalDataset,
    KnowledgeBase, KnowledgeDocument, LanguageModel, McpServer, OAuthClient, Prompt, Schedule,
    Thread)
from django.contrib.auth import get_user_model
names = set()
for model, fields in ((Agent, ("name",)), (Prompt, ("name",)), (LanguageModel, ("name", "model")),
        (McpServer, ("name",)), (A2aAgent, ("name",)), (EnvValue, ("key",)), (EvalDataset, ("name",)),
        (EvalCase, ("name",)), (Schedule, ("name",)), (Thread, ("display_name",)),
        (KnowledgeBase, ("name",)), (KnowledgeDocument, ("title", "filename")),
        (CredentialGrant, ("name",)), (OAuthClient, ("client_name",)),
        (get_user_model(), ("username",))):
    for row in model.objects.values_list(*fields):
        names.update(str(v) for v in row if v)
# A knowledge base's search tool is named after the base (knowledge:NAME gives search_NAME).
names.update(f"search_{n}" for n in KnowledgeBase.objects.values_list("name", flat=True))
for row in Thread.objects.values_list("tags", flat=True):
    names.update(str(t) for t in (row or []))
for items in get_registry().catalog().values():
    names.update(str(i["name"]) for i in items)
# Names of rows deleted since (by this site's other tests) live on in the history pages.
import re
from django.contrib.admin.models import LogEntry
from agents_app.models import AuditEvent, Log
for text in [*LogEntry.objects.values_list("object_repr", flat=True),
             *AuditEvent.objects.values_list("target", flat=True),
             *Log.objects.values_list("model", flat=True).distinct()]:
    names.update(re.findall(r"[\w.-]+", str(text)))
print(json.dumps(sorted(names)))
"""

EVAL_SETUP = """
from agents_app.models import EvalDataset
from agents_app.services.evals import checks as evals
dataset, _ = EvalDataset.objects.get_or_create(name="walk-set")
if not dataset.cases.exists():
    evals.case_save(dataset=dataset, name="looks up the order",
        messages=[{"role": "user", "content": "Where is order A-1001?"}],
        checks=[{"type": "contains", "text": "A-1001"}])
"""


def _seed(site: Site) -> dict[str, Any]:
    """A finished chat session, eval run and schedule run; returns the thread's id."""
    thread = call_api(site, "ops", "POST", "/api/threads", {"agent_id": "support_agent"})
    thread_id = thread["threadId"]
    call_api(site, "ops", "POST", f"/api/threads/{thread_id}/messages",
             {"role": "user", "content": "Where is my order A-1001?"})  # fmt: skip
    wait_for_messages(site, "ops", thread_id, lambda ms: any(
        m["role"] == "assistant" and m.get("status") == "completed" and not m.get("tool_calls")
        for m in ms))  # fmt: skip
    site.python(EVAL_SETUP)
    site.manage("run_eval", "--dataset", "walk-set", "--agent", "support_agent",
                "--label", "walk", "--threshold", "0")  # fmt: skip
    schedule = call_api(site, "ops", "POST", "/api/schedules", {
        "agent": "support_agent", "name": "Morning order check",
        "message": "Any orders late?", "intervalSeconds": 86400})  # fmt: skip
    run = call_api(site, "ops", "POST", f"/api/schedules/{schedule['id']}/run")
    wait_until(
        lambda: (
            site.python(
                "from agents_app.models import ScheduleRun\n"
                f"print(ScheduleRun.objects.get(pk='{run['id']}').status)"
            ).split()[-1]
            in ("completed", "failed", "started")
        ),
        "the schedule run to finish",
        timeout=60,
    )
    return {"thread": thread_id}


def _cut_name(match: re.Match[str], allowed: set[str]) -> bool:
    """A name shortened to fit (``debate_con_m…`` for ``debate_con_model``) is still the name."""
    if match.string[match.end() : match.end() + 1] != "…":
        return False
    return any(name.startswith(match.group(0)) for name in allowed)


def _offences(texts: list[str], allowed: set[str]) -> list[str]:
    found = []
    for text in texts:
        for rule, pattern in (("ISO time", ISO_TIME), ("ms over 999", LONG_MS),
                              ("trailing zeros", TRAILING_ZEROS)):  # fmt: skip
            for match in pattern.finditer(text):
                found.append(f"{rule}: {match.group(0)!r} in {text[:120]!r}")
        for match in SNAKE.finditer(text):
            if match.group(0) not in allowed and not _cut_name(match, allowed):
                found.append(f"snake_case: {match.group(0)!r} in {text[:120]!r}")
    return found


def _pages(page: Page, site: Site, seeded: dict[str, Any]) -> list[str]:
    """Every page to visit: the index's lists, the first change form of each, and the
    pages that belong to no list."""
    page.goto(f"{site.url}/admin/")
    lists = page.eval_on_selector_all(
        "#content-main .module table th[scope=row] a, #content-main .module caption a",
        "links => [...new Set(links.map(a => a.getAttribute('href')))]",
    )
    lists = [u for u in lists if u.startswith("/admin/") and u.count("/") == 4]
    pages = ["/admin/", "/admin/catalog/", *lists]
    for url in lists:
        page.goto(f"{site.url}{url}")
        first = page.locator("#result_list tbody tr th a, #result_list tbody tr td a").first
        if page.locator("#result_list tbody tr").count():
            href = first.get_attribute("href")
            if href and href.startswith("/admin/"):
                pages.append(href)
        add = page.locator("#content-main a.addlink").first
        if add.count():  # the list's add form, where there is one
            href = add.get_attribute("href")
            if href and href.startswith("/admin/"):
                pages.append(href.split("?")[0])
    agent = site.python(
        "from agents_app.models import Agent; print(Agent.objects.get(name='support_agent').pk)"
    ).split()[-1]
    log = site.python(
        f"from agents_app.models import Log; print(Log.objects.filter(thread_id='{seeded['thread']}')"
        ".order_by('created_at').first().pk)"
    ).split()[-1]
    thread = seeded["thread"]
    pages += [
        f"/admin/agents_app/agent/{agent}/structure/",
        f"/admin/agents_app/agent/{agent}/versions/",
        f"/admin/agents_app/thread/{thread}/change/",
        f"/admin/agents_app/thread/{thread}/inspect/",
        f"/admin/agents_app/thread/{thread}/inspect/logs/{log}/",
        "/chat/",
        f"/chat/t/{thread}",
    ]
    return list(dict.fromkeys(pages))


def test_every_studio_page_speaks_in_human_formats(site: Site, page: Page) -> None:
    seeded = _seed(site)
    allowed = set(json.loads(site.python(SEED_NAMES).strip().splitlines()[-1]))
    admin_login(page, site, "admin", ADMIN_PASSWORD)
    page.set_viewport_size({"width": 1440, "height": 900})
    pages = _pages(page, site, seeded)
    assert len(pages) > 60, pages  # the walk reached the lists and their forms
    problems: dict[str, list[str]] = {}
    for url in pages:
        response = page.goto(f"{site.url}{url}")
        assert response is not None and response.ok, (url, response and response.status)
        if url.startswith("/chat/t/"):
            page.locator("article.msg-assistant").first.wait_for()
        found = _offences(page.evaluate(VISIBLE_TEXT), allowed)
        if found:
            problems[url] = found
            shot(page, "walk-FOUND-" + url.strip("/").replace("/", "-")[:80])
    assert not problems, json.dumps(problems, indent=1)
    page.goto(f"{site.url}/admin/")
    shot(page, "studio-walk-dashboard-1440")
