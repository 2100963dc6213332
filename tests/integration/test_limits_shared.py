"""Limits are counted in the shared cache (Redis), not per process: two real Daphne processes
on one database and one Redis, and every failure or request on one counts on the other."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.stack import DAPHNE, Stack, free_port, wait_until

pytestmark = pytest.mark.integration

CSRF_FIELD = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, str]]:
    stack = Stack(tmp_path_factory.mktemp("limits"))
    stack.env.update(
        {
            "CACHE_KEY_PREFIX": f"limits-{uuid.uuid4().hex[:8]}",
            "STUDIO_LOGIN_RATE_PER_ACCOUNT": "3/15m",
            "STUDIO_LOGIN_RATE_PER_ADDRESS": "off",
            "STUDIO_RATE_WS_TICKET": "3/m",
        }
    )
    stack.start()
    port = free_port()
    daphne = [*DAPHNE, "-b", "127.0.0.1", "-p", str(port), "studio.asgi:application"]
    stack.spawn("daphne-2", daphne)
    second = f"http://127.0.0.1:{port}"
    wait_until(
        lambda: httpx.get(f"{second}/api/auth/csrf", timeout=2).status_code == 200,
        "the second Daphne to answer",
    )
    try:
        yield stack, second
    finally:
        stack.stop()


def form_login(base: str, path: str, password: str) -> httpx.Response:
    """Sign in through an HTML form, as a browser does (its own cookies and CSRF token)."""
    with httpx.Client(base_url=base, timeout=30) as browser:
        page = browser.get(path)
        token = CSRF_FIELD.search(page.content)
        assert token, page.text[:500]
        return browser.post(
            path,
            data={
                "username": "alice",
                "password": password,
                "csrfmiddlewaretoken": token.group(1).decode(),
            },
        )


def api_login(base: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=30) as client:
        client.get("/api/auth/csrf")
        return client.post(
            "/api/auth/login",
            json={"username": "alice", "password": password},
            headers={"X-CSRFToken": client.cookies["csrftoken"]},
        )


def test_failed_sign_ins_on_one_process_count_on_the_other(two_servers: tuple[Stack, str]) -> None:
    stack, second = two_servers
    assert form_login(stack.http, "/login/", "wrong").status_code == 200
    assert form_login(second, "/admin/login/", "wrong").status_code == 200
    assert api_login(stack.http, "wrong").status_code == 401
    # The account's third failure was on the first process: the second refuses even the
    # right password, on all three sign-in doors.
    refused = form_login(second, "/login/", "pw-for-tests-1")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "Too many sign-in attempts" in refused.text
    assert form_login(second, "/admin/login/", "pw-for-tests-1").status_code == 429
    answer = api_login(second, "pw-for-tests-1")
    assert answer.status_code == 429
    assert answer.json()["retry_after"] == int(answer.headers["Retry-After"])


def test_request_rates_are_shared_by_every_process(two_servers: tuple[Stack, str]) -> None:
    stack, second = two_servers
    body = {"pathname": "/api/threads/x/stream"}
    headers = {"Authorization": f"Bearer {stack.keys['bob']}"}
    statuses = []
    for base in (stack.http, second, stack.http, second):
        response = httpx.post(f"{base}/api/auth/websocket-ticket", json=body, headers=headers)
        statuses.append(response.status_code)
    assert statuses == [200, 200, 200, 429]
    assert "WebSocket tickets" in response.json()["error"]


def test_cache_lives_in_redis_under_its_prefix(two_servers: tuple[Stack, str]) -> None:
    import redis

    stack, _ = two_servers
    headers = {"Authorization": f"Bearer {stack.keys['charlie']}"}
    body = {"pathname": "/api/threads/x/stream"}
    assert httpx.post(f"{stack.http}/api/auth/websocket-ticket", json=body, headers=headers)
    keys = redis.Redis.from_url(stack.redis_url).keys(f"{stack.env['CACHE_KEY_PREFIX']}:*limit:*")
    assert keys, "the counters are not in Redis"
