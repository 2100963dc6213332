"""No active content from user files, in a real Chromium: an ordinary user (alice) uploads files
whose bytes try to run script (set a global and the title, call a canary URL, and create an API
key with the admin's session) under every MIME type variant that used to run; a logged-in admin
opens each file's URL. Nothing may run, and the admin gets no new API key.

The control serves the same payload through a thread endpoint that opted out of the safe
defaults (``active_content=True``): there the payload does run and does create a key, which
shows the detectors would catch a regression.

Its own stack (Daphne only; no session runs here) so it can mount that endpoint.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page
from playwright.sync_api import Error as PlaywrightError

from tests.integration.stack import BIN, Stack, wait_until

ADMIN, ADMIN_PASSWORD = "root", "root-pw-for-file-tests"

# Runs as a script and as an attribute handler; XML-safe (no & or <).
PAYLOAD = (
    "window.__pwned = 'VARIANT'; document.title = 'PWNED';"
    "fetch('/canary/ran?v=VARIANT');"
    "fetch('/api/auth/csrf').then(r => r.json()).then(j => fetch('/api/api-keys', {method: 'POST',"
    " headers: {'Content-Type': 'application/json', 'X-CSRFToken': j.csrfToken},"
    " body: JSON.stringify({name: 'pwned-VARIANT'})}));"
)
# Well-formed XHTML that an HTML parser also runs: one body for HTML and every XML type.
XHTML = (
    '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>file</title></head><body>'
    "<script>//<![CDATA[\n{js}\n//]]></script>"
    '<svg xmlns="http://www.w3.org/2000/svg" onload="{js}"/></body></html>'
)
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" onload="{js}">'
    "<script>//<![CDATA[\n{js}\n//]]></script></svg>"
)
VARIANTS = [
    "text/html",
    " text/html",
    "TEXT/HTML",
    "IMAGE/SVG+XML",
    "image/svg+xml",
    "text/xml",
    "application/xml",
    "text/xsl",
    "application/xhtml+xml",
    # Inline types with active bytes: only nosniff keeps them inert.
    "text/plain",
    "image/png",
    "application/pdf",
    "application/octet-stream",
]
RAW_ENDPOINT = '''
from django.http import HttpResponse
from runtime.tools.registry import define_thread_endpoint


async def raw(request, state, params):
    """A file as stored, with its own type: what the fs route did before."""
    path = "/" + params["*"]
    record = await state.stat_file(path)
    return HttpResponse(await state.read_file(path), content_type=record.mime_type.strip())


endpoint = define_thread_endpoint(raw, active_content=True)
'''


def body_for(variant: str, name: str) -> bytes:
    js = PAYLOAD.replace("VARIANT", name)
    template = SVG if "svg" in variant.lower() else XHTML
    return template.replace("{js}", js).encode()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("inert-files")
    project = tmp / "agents"
    (project / "api" / "raw").mkdir(parents=True)
    (project / "api" / "raw" / "[*].py").write_text(RAW_ENDPOINT)
    (tmp / "stack").mkdir()
    running = Stack(tmp / "stack")
    running.env["STUDIO_AGENTS_DIRS"] = str(project)
    running.env["DJANGO_SUPERUSER_PASSWORD"] = ADMIN_PASSWORD
    running.start()
    try:
        running.run(
            [str(BIN / "python"), "manage.py", "createsuperuser", "--noinput",
             "--username", ADMIN, "--email", "root@example.org"]
        )  # fmt: skip
        yield running
    finally:
        running.stop()


def _api(stack: Stack, method: str, path: str, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {stack.keys['alice']}", **kw.pop("headers", {})}
    return httpx.request(method, f"{stack.http}{path}", headers=headers, timeout=15, **kw)


@pytest.fixture(scope="module")
def uploads(stack: Stack) -> dict[str, str]:
    """Alice's thread with one file per variant (raw body and JSON upload); path by variant."""
    thread = _api(stack, "POST", "/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
    paths = {}
    for i, variant in enumerate(VARIANTS):
        name = f"raw{i}"
        url = f"/api/threads/{thread}/fs/up/{name}"
        # HTTP drops whitespace around a header value (h11 refuses to send it): JSON only.
        if variant == variant.strip():
            sent = _api(stack, "POST", url, content=body_for(variant, name),
                        headers={"Content-Type": variant})  # fmt: skip
            assert sent.status_code == 201, sent.text
            paths[f"raw {variant!r}"] = url
        name = f"json{i}"
        url = f"/api/threads/{thread}/fs/up/{name}"
        data = base64.b64encode(body_for(variant, name)).decode()
        sent = _api(stack, "POST", url, json={"data": data, "mimeType": variant})
        assert sent.status_code == 201, sent.text
        paths[f"json {variant!r}"] = url
    paths["thread"] = thread
    return paths


def _admin_keys(stack: Stack) -> list[str]:
    code = (
        "import json; from agents_app.models import ApiKey; "
        f"print(json.dumps(sorted(ApiKey.objects.filter(user__username='{ADMIN}')"
        ".values_list('name', flat=True))))"
    )
    out = stack.python(code)
    return list(json.loads(out.strip().splitlines()[-1]))


@pytest.fixture
def admin(full_browser: Browser, stack: Stack) -> Iterator[tuple[Page, list[str]]]:
    """A page signed in as the superuser, and the URLs it requests (from any frame). The full
    chromium: its PDF viewer is part of what a user's file must not turn into script."""
    context = full_browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    page.goto(f"{stack.http}/admin/login/")
    page.fill("input[name=username]", ADMIN)
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(f"{stack.http}/admin/")
    yield page, requested
    context.close()


def _open(page: Page, url: str) -> bool:
    """Navigate the admin's page to ``url``; whether it rendered (False: it was downloaded)."""
    page.goto("about:blank")
    try:
        page.goto(url, wait_until="load")
    except PlaywrightError as exc:
        if "Download is starting" not in str(exc):
            raise
        return False
    return True


def _ran(page: Page) -> list[str]:
    """Every sign of the payload in the page now shown (its frames included)."""
    signs = []
    for frame in page.frames:
        try:
            pwned = frame.evaluate("() => window.__pwned || null")
            title = frame.evaluate("() => document.title")
        except PlaywrightError:  # a viewer's frame we may not script: nothing of ours ran there
            continue
        if pwned:
            signs.append(f"global {pwned}")
        if title == "PWNED":
            signs.append("title")
    return signs


def test_user_file_never_runs_script_when_an_admin_opens_it(
    admin: tuple[Page, list[str]], stack: Stack, uploads: dict[str, str]
) -> None:
    page, requested = admin
    keys_before = _admin_keys(stack)
    rendered, downloaded, found = [], [], []
    for label, path in uploads.items():
        if label == "thread":
            continue
        shown = _open(page, stack.http + path)
        (rendered if shown else downloaded).append(label)
        found += [f"{label}: {sign}" for sign in _ran(page)]
        # Whatever the file is, the page must still be able to tell us it ran nothing.
        page.goto(f"{stack.http}/admin/")
    assert found == []
    assert [url for url in requested if "/canary/" in url] == []
    assert _admin_keys(stack) == keys_before
    # Inert types stay viewable; the rest was downloaded, never rendered.
    assert {label.split(" ", 1)[1] for label in rendered} == {
        "'text/plain'",
        "'image/png'",
        "'application/pdf'",
    }
    assert len(downloaded) == len(uploads) - 1 - len(rendered)
    assert len(rendered) == 6  # the three inert types, raw and JSON


def test_user_file_never_runs_script_from_the_admin_file_page(
    admin: tuple[Page, list[str]], stack: Stack, uploads: dict[str, str]
) -> None:
    """The studio's file page links to the inert API route, never to a storage (media) URL."""
    page, requested = admin
    keys_before = _admin_keys(stack)
    page.goto(f"{stack.http}/admin/agents_app/threadfile/?q=raw0")
    page.get_by_role("link", name="/up/raw0").click()
    hrefs = page.eval_on_selector_all("#content a", "els => els.map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if h and h.startswith("/media/")]
    with page.expect_download():
        page.get_by_role("link", name="open", exact=True).click()
    assert _ran(page) == []
    assert [url for url in requested if "/canary/" in url] == []
    assert _admin_keys(stack) == keys_before


def test_user_file_payload_runs_where_served_as_stored_so_the_detectors_work(
    admin: tuple[Page, list[str]], stack: Stack, uploads: dict[str, str]
) -> None:
    """The control: the same upload served as stored (an endpoint with ``active_content=True``)
    runs its script as the admin; every detector of the tests above fires."""
    page, requested = admin
    thread = uploads["thread"]
    for name in ("json1", "json3", "raw6"):  # ' text/html', 'IMAGE/SVG+XML', 'application/xml'
        assert _open(page, f"{stack.http}/api/threads/{thread}/raw/up/{name}")
        page.wait_for_function("() => document.title === 'PWNED'")
        assert any(sign.startswith("global") for sign in _ran(page))
        # Stay on the page until its fetches are done: the key it creates is the proof.
        wait_until(
            lambda name=name: f"pwned-{name}" in _admin_keys(stack),
            f"the control's payload ({name}) to create an API key for the admin",
            timeout=30,
        )
    assert [url for url in requested if "/canary/ran" in url]
