"""Done-when (3): a secret env value typed into the studio never comes back out.

The secret is entered through the studio's forms (an instance value and a user value),
then a session that resolves both runs (its prompt has env parts) while every WebSocket
frame and HTTP response of the chat page is recorded. After that, the API routes a
browser uses are fetched and every admin page reachable from the index is crawled. Each
body is searched for the plaintext, its base64 and its URL-encoded forms.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections import deque
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, quote_plus, urljoin, urlsplit

from playwright.sync_api import Page, Response, expect

from tests.browser.support import Site, admin_login, chat_login, frames, shot

MAX_PAGES = 600
HREF = re.compile(r'href="([^"#]+)')
# /admin/<app>/<model>/<id>/…: one object's pages (change, history, inspect, delete…).
OBJECT_PAGE = re.compile(r"^/admin/(\w+)/(\w+)/([^/]+)/")
# Object pages visited per model besides the objects this test touched. The site is shared
# by every browser test of the worker, so by now it holds hundreds of threads, logs and
# sessions of other tests, which cannot hold this test's freshly made secret: crawling all of
# them cost two minutes a run. Every list page is still crawled, and every page of an object
# made or changed since this test began (``TOUCHED``).
OTHER_OBJECTS_PER_MODEL = 3
TOUCHED = """
import json
from django.contrib import admin
from django.db import models
from django.utils.dateparse import parse_datetime
since = parse_datetime({since!r})
touched = []
for model in admin.site._registry:
    fields = {{f.name for f in model._meta.concrete_fields if isinstance(f, models.DateTimeField)}}
    stamps = [f for f in ("created_at", "updated_at", "last_login", "date_joined") if f in fields]
    if not stamps:
        continue
    rows = model._default_manager.none()
    for stamp in stamps:
        rows = rows | model._default_manager.filter(**{{stamp + "__gte": since}})
    meta = model._meta
    touched += [f"{{meta.app_label}}/{{meta.model_name}}/{{pk}}" for pk in rows.values_list("pk", flat=True)]
print(json.dumps(sorted(set(touched))))
"""


def _forms(secret: str) -> set[str]:
    raw = secret.encode()
    return {
        secret,
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        quote(secret, safe=""),
        quote_plus(secret),
    }


def _result(site: Site, code: str) -> str:
    """The last line a ``site.python`` snippet printed (the shell prints a banner first)."""
    return site.python(code).strip().splitlines()[-1]


def _leaks(body: str, secrets: list[str]) -> list[str]:
    return sorted(f for s in secrets for f in _forms(s) if f in body)


SEED = """
from agents_app.models import Agent, LanguageModel, Prompt, PromptPart
model = LanguageModel.objects.create(name="canary_model", provider="test", model="canary",
    script=[{"content": "All set, I know the keys."}])
prompt = Prompt.objects.create(name="canary_prompt", model=model)
PromptPart.objects.create(prompt=prompt, position=0, type="text", content="Keys: ")
PromptPart.objects.create(prompt=prompt, position=1, type="env", env_key="CANARY_INSTANCE")
PromptPart.objects.create(prompt=prompt, position=2, type="text", content=" and ")
PromptPart.objects.create(prompt=prompt, position=3, type="env", env_key="CANARY_USER")
Agent.objects.create(name="canary_agent", title="Canary", side_a_prompt=prompt)
"""


def _enter_secrets(page: Page, site: Site, instance: str, user: str) -> None:
    admin_login(page, site)
    # The instance value, through the env value form.
    page.goto(f"{site.url}/admin/agents_app/envvalue/add/?scope=instance")
    page.locator("#id_key").fill("CANARY_INSTANCE")
    page.locator("#id_value_type").select_option("secret")
    page.locator("#id_value_input").fill(instance)
    shot(page, "studio-env-instance-add")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    # alice's own value, through the env inline of her user page.
    page.goto(f"{site.url}/admin/auth/user/")
    page.get_by_role("link", name="alice", exact=True).click()
    page.get_by_text(re.compile("Add another user env value", re.I)).click()
    row = page.locator("tr.dynamic-env_values").last
    row.locator("input[name$='-key']").fill("CANARY_USER")
    row.locator("select[name$='-value_type']").select_option("secret")
    row.locator("input[name$='-value_input']").fill(user)
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist .success")).to_be_visible()
    status = page.locator("tr", has_text="CANARY_USER")
    expect(status).to_contain_text("set")
    expect(status).to_contain_text("changed by admin")
    shot(page, "studio-env-user")
    # The instance page lists it as set, with who changed it.
    page.goto(f"{site.url}/admin/agents_app/envvalue/?scope__exact=instance")
    expect(page.locator("#result_list")).to_contain_text("secret is set")
    expect(page.locator("#result_list")).to_contain_text("admin")
    shot(page, "studio-env-instance")
    page.context.clear_cookies()


def _touched(site: Site, since: str) -> set[str]:
    """``app/model/pk`` of every studio object made or changed since ``since``."""
    return set(json.loads(_result(site, TOUCHED.format(since=since))))


def _crawl_admin(
    page: Page, site: Site, secrets: list[str], touched: set[str]
) -> dict[str, list[str]]:
    """Every /admin/ page reachable from the index (query strings dropped), searched: every
    list, every page of the objects in ``touched``, and a few objects of each other model."""
    found: dict[str, list[str]] = {}
    seen: set[str] = set()
    others: dict[str, set[str]] = {}
    queue = deque(["/admin/", "/admin/catalog/"])
    while queue and len(seen) < MAX_PAGES:
        path = queue.popleft()
        if path in seen:
            continue
        if match := OBJECT_PAGE.match(path):
            app, model, pk = match.groups()
            if f"{app}/{model}/{pk}" not in touched and pk not in ("add",):
                ids = others.setdefault(f"{app}/{model}", set())
                if pk not in ids and len(ids) >= OTHER_OBJECTS_PER_MODEL:
                    continue
                ids.add(pk)
        seen.add(path)
        response = page.request.get(site.url + path)
        assert response.status < 500, f"{path} answered {response.status}"
        body = response.text()
        if leaks := _leaks(body, secrets):
            found[path] = leaks
        for href in HREF.findall(body):
            target = urlsplit(urljoin(site.url + path, href.replace("&amp;", "&")))
            same_site = target.netloc == urlsplit(site.url).netloc
            if same_site and target.path.startswith("/admin/") and "logout" not in target.path:
                queue.append(target.path)
    assert len(seen) > 40, f"the crawl reached only {len(seen)} pages"
    return found


def test_a_secret_entered_in_the_studio_never_comes_back_out(site: Site, page: Page) -> None:
    began = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    token = uuid.uuid4().hex
    instance = f"sk-inst-{token}/+=q"  # '/', '+' and '=' make the encoded forms differ
    user = f"sk-user-{token[::-1]}?&x"
    secrets = [instance, user]
    site.python(SEED)
    _enter_secrets(page, site, instance, user)

    # alice chats with the agent whose system prompt inserts both secrets.
    sent = frames(page)
    responses: list[Response] = []
    page.on("response", lambda response: responses.append(response))
    chat_login(page, site, "alice", then="/chat/?agent=canary_agent")
    page.locator("#composer-input").fill("What do you know?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#transcript")).to_contain_text("All set, I know the keys.", timeout=30_000)
    thread_id = _result(
        site,
        "from agents_app.models import Thread;"
        "print(Thread.objects.filter(agent__name='canary_agent').latest('created_at').pk)",
    )
    # The session did resolve the secrets: the system prompt was built from them.
    logged = _result(
        site,
        "from agents_app.models import Log;"
        f"print(Log.objects.filter(thread_id='{thread_id}', kind='llm').count())",
    )
    assert int(logged) >= 1
    assert sent, "no WebSocket frame was recorded"

    leaks: dict[str, list[str]] = {}
    for i, frame in enumerate(sent):
        if found := _leaks(frame, secrets):
            leaks[f"frame {i}"] = found
    leaks.update({f"chat page {p}": f for p in ("html",) if (f := _leaks(page.content(), secrets))})
    for response in responses:
        try:
            body = response.text()
        except Exception:  # redirects and evicted bodies have none to search
            continue
        if found := _leaks(body, secrets):
            leaks[f"response {response.url}"] = found

    # The API routes a browser uses, as alice (her session cookie) and then as staff.
    thread_api = f"/api/threads/{thread_id}"
    alice_routes = ["/api/me", "/api/agents", "/api/users/me/env", "/api/threads",
                    thread_api, f"{thread_api}/messages", f"{thread_api}/logs",
                    f"{thread_api}/cost", f"{thread_api}/kv", f"{thread_api}/fs",
                    f"{thread_api}/effects", f"{thread_api}/subagents"]  # fmt: skip
    log_ids = _result(
        site,
        "from agents_app.models import Log;"
        f"print('logs', *Log.objects.filter(thread_id='{thread_id}').values_list('pk', flat=True))",
    ).split()[1:]
    alice_routes += [f"{thread_api}/logs/{pk}" for pk in log_ids]
    for route in alice_routes:
        body = page.request.get(site.url + route).text()
        if found := _leaks(body, secrets):
            leaks[f"alice {route}"] = found
    page.context.clear_cookies()
    admin_login(page, site)
    staff_routes = [*alice_routes, "/api/envs/instance", "/api/prompts",
                    "/api/prompts/canary_prompt", "/api/agents/canary_agent", "/api/models",
                    "/api/tools", "/api/threads/owners"]  # fmt: skip
    for route in staff_routes:
        response = page.request.get(site.url + route)
        assert response.status < 500, route
        if found := _leaks(response.text(), secrets):
            leaks[f"staff {route}"] = found

    # Every admin page, including the thread inspector of the canary thread.
    leaks.update(_crawl_admin(page, site, secrets, _touched(site, began)))
    page.goto(f"{site.url}/admin/agents_app/thread/{thread_id}/change/")
    expect(page.locator("#inspector-logs")).to_contain_text("canary_model")
    shot(page, "studio-thread-inspector")

    # The live inspector: its JSON, the page with the log's detail and cURL open, its frames.
    live = f"/admin/agents_app/thread/{thread_id}/inspect/"
    for route in [f"{live}panels.json", *(f"{live}logs/{pk}/" for pk in log_ids)]:
        response = page.request.get(site.url + route)
        assert response.status == 200, route
        if found := _leaks(response.text(), secrets):
            leaks[f"staff {route}"] = found
    before = len(sent)
    page.goto(site.url + live)
    page.locator("#log-list .log-row").filter(has_text="canary_model").first.click()
    page.get_by_text("cURL (the key is a placeholder)").click()
    expect(page.locator("#log-detail pre.log-curl")).to_contain_text("curl -X POST")
    if found := _leaks(page.content(), secrets):
        leaks["live inspector html"] = found
    for i, frame in enumerate(sent[before:]):
        if found := _leaks(frame, secrets):
            leaks[f"live inspector frame {i}"] = found

    assert leaks == {}
