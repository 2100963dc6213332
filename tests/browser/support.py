"""Helpers for browser tests: the site handle, WebSocket frame capture, screenshots, sign-in.

Fixtures live in ``conftest.py``; these are plain functions a test imports.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from tests.integration.stack import BIN, ROOT, Stack

# Debian's chromium headless shell (scripts/ensure-browser.sh says why not the full browser).
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium-headless-shell")
FULL_CHROMIUM = os.environ.get("CHROMIUM_FULL_PATH", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
PASSWORD = "pw-for-tests-1"  # the integration personas' password (tests/integration/seed.py)
ADMIN_PASSWORD = "admin-pw-for-browser-tests"


@dataclass
class Site:
    """The running stack, seen from a browser test."""

    stack: Stack

    @property
    def url(self) -> str:
        return self.stack.http

    def manage(self, *args: str) -> str:
        """Run a ``manage.py`` command against the stack's database; returns its stdout."""
        return self.stack.run([str(BIN / "python"), "manage.py", *args])

    def python(self, code: str) -> str:
        """Run Python with Django set up against the stack, as ``manage.py shell -c`` does
        (in the stack's one snippet process: ``Stack.python``)."""
        return self.stack.python(code)

    def api_key(self, username: str) -> str:
        """A raw API key of an integration persona (alice, bob, charlie, ops)."""
        return self.stack.keys[username]


def frames(page: Page) -> list[str]:
    """Start recording every WebSocket frame of ``page`` (call before the socket opens)."""
    seen: list[str] = []

    def on_socket(ws: Any) -> None:
        ws.on("framesent", lambda payload: seen.append(_text(payload)))
        ws.on("framereceived", lambda payload: seen.append(_text(payload)))

    page.on("websocket", on_socket)
    return seen


def _text(payload: Any) -> str:
    if isinstance(payload, bytes | bytearray):
        return payload.decode("utf-8", "replace")
    return str(payload)


def shot(page: Page, name: str, *, lossless: bool = False) -> Path:
    """Save a full-page screenshot as ``artifacts/screenshots/<name>.jpg`` (``.png`` when
    ``lossless``: a failure's). Chromium encodes a long page's PNG in about a second of CPU
    on this machine and its JPEG in half that; the suite takes some 300 of them."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)
    if lossless:
        path = ARTIFACTS / f"{stem}.png"
        page.screenshot(path=str(path), full_page=True)
    else:
        path = ARTIFACTS / f"{stem}.jpg"
        page.screenshot(path=str(path), full_page=True, type="jpeg", quality=80)
    return path


def admin_login(page: Page, site: Site, username: str = "admin", password: str = "") -> None:
    """Sign in through the studio's login form (staff accounts)."""
    page.goto(f"{site.url}/admin/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password or ADMIN_PASSWORD)
    page.click("input[type=submit], button[type=submit]")
    page.wait_for_url(re.compile(r".*/admin/(?!login).*"))


def chat_login(
    page: Page, site: Site, username: str, password: str = PASSWORD, then: str = "/chat/"
) -> None:
    """Sign in through the chat's login page (any user) and land on ``then``."""
    from urllib.parse import quote

    page.goto(f"{site.url}/login/?next={quote(then)}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r".*/chat/.*"))


def call_api(site: Site, username: str, method: str, path: str, json: Any = None) -> Any:
    """Call the HTTP API as an integration persona (API key); returns the decoded JSON."""
    import httpx

    response = httpx.request(
        method,
        f"{site.url}{path}",
        json=json,
        headers={"Authorization": f"Bearer {site.api_key(username)}"},
        timeout=15,
    )
    response.raise_for_status()
    return response.json() if response.content else None


def wait_for_messages(site: Site, username: str, thread_id: str, done: Any) -> list[dict[str, Any]]:
    """Poll a thread's messages until ``done(messages)`` is true; returns them."""
    from tests.integration.stack import wait_until

    def check() -> list[dict[str, Any]] | None:
        rows = call_api(site, username, "GET", f"/api/threads/{thread_id}/messages?limit=200")
        return rows["messages"] if done(rows["messages"]) else None

    return wait_until(check, f"messages of {thread_id}", timeout=30)
