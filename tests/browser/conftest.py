"""Browser fixtures: a real stack (PostgreSQL, Redis, Daphne, a Celery worker) and Debian's
chromium driven by Playwright through its executable path.

- ``site``: one stack per test session, with the demo agents loaded (``load_demo``), static
  files collected, one Celery worker, the superuser ``admin`` (``ADMIN_PASSWORD``) and the
  integration personas alice, bob, charlie (``PASSWORD``) and ops (staff).
- ``browser`` / ``page`` / ``phone_page``: a chromium headless shell per package, a fresh context
  per test; ``full_browser``: Debian's full chromium, for its PDF viewer.
- ``frames(page)``: every WebSocket frame the page sends or receives, as text.
- ``shot(page, name)``: a screenshot saved under ``artifacts/screenshots/`` (JPEG; a failure's PNG).

Playwright's own browser download cannot work here (closed network), so chromium and its
headless shell come from Debian (``scripts/ensure-browser.sh``, run by the test command); the flags keep it from
reaching for Google's services, which this machine refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.browser.support import (
    ADMIN_PASSWORD,
    CHROMIUM,
    CHROMIUM_FLAGS,
    FULL_CHROMIUM,
    Site,
    shot,
)
from tests.integration.stack import Stack, wait_until


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    stack = Stack(
        tmp_path_factory.mktemp("browser-stack"),
        setup=[["load_demo"], ["collectstatic", "--noinput", "-v", "0"]],
        # One site serves the whole browser suite as a handful of users: the per-user request
        # rates (tested in tests/agents_app/api/test_limits.py) would refuse its later posts.
        extra_env={
            f"STUDIO_RATE_{action}": "off"
            for action in ("THREAD_CREATE", "MESSAGE_POST", "WS_TICKET", "API_KEY_CREATE")
        },
    )
    stack.env["STUDIO_ADMIN_PASSWORD"] = ADMIN_PASSWORD
    stack.start()
    try:
        worker = stack.worker("browser")
        # The first reply of a session would otherwise wait for the worker's start-up.
        wait_until(
            lambda: "ready." in worker.log.read_text(errors="replace"),
            "the Celery worker to be ready",
            timeout=60,
        )
        yield Site(stack)
    finally:
        stack.stop()


# Package scope, not session: Playwright's sync API marks an asyncio loop as running in the
# main thread while it is open, and every pytest-asyncio test collected after this package
# would then fail with "Runner.run() cannot be called from a running event loop".
@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


def _launch(playwright: Playwright, executable: str) -> Iterator[Browser]:
    if not Path(executable).exists():
        pytest.fail(
            f"{executable} is missing: run scripts/ensure-browser.sh (the test command does)"
        )
    launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
    yield launched
    launched.close()


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's chromium headless shell: the engine, without the desktop browser's CPU."""
    yield from _launch(playwright, CHROMIUM)


@pytest.fixture(scope="package")
def full_browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's full chromium, for what only the desktop browser has (its PDF viewer)."""
    yield from _launch(playwright, FULL_CHROMIUM)


def _new_page(browser: Browser, **context: Any) -> Iterator[Page]:
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # A script, style or frame the pages' Content-Security-Policy refused counts as an error.
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and "Content Security Policy" in m.text
            else None
        ),
    )
    page.console_errors = errors  # type: ignore[attr-defined]
    yield page
    ctx.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from _new_page(browser, viewport={"width": 1280, "height": 860})


@pytest.fixture
def phone_page(browser: Browser) -> Iterator[Page]:
    yield from _new_page(
        browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        funcargs = getattr(item, "funcargs", {})
        for name in ("page", "phone_page"):
            failed_page = funcargs.get(name)
            if failed_page is not None:
                try:
                    path = shot(failed_page, f"FAILED-{item.name}-{name}", lossless=True)
                    report.sections.append(("screenshot", str(path)))
                except Exception as exc:  # the page may be gone; the report matters more
                    report.sections.append(("screenshot", f"not taken: {exc}"))
        running = funcargs.get("site")
        if running is not None:
            report.sections.append(("stack logs", running.stack.tails()))
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.integration)
