"""Production mode, from the environment ``docker/compose.yaml`` ships: Django's deploy
check is clean, and a real Daphne serves the studio and chat pages with HTTPS-only cookies,
HSTS and the Content-Security-Policy, redirects plain HTTP, and answers requests past its
own limits (a request line or header over 16 KB) with JSON like every other error."""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.stack import BIN, DAPHNE, ROOT, free_port, sqlite_database, wait_until

pytestmark = pytest.mark.integration

HOST = "studio.example.com"
PASSWORD = "pw-for-production-tests-1"


def production_env(var_dir: Path) -> dict[str, str]:
    """The app containers' environment from compose.yaml, plus the secrets an operator's
    ``.env.production`` holds (planted here), on a private SQLite database."""
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    app_env = {k: str(v) for k, v in compose["x-app"]["environment"].items()}
    # The test process's own switches stay out of production: DJANGO_ALLOW_ASYNC_UNSAFE is set
    # by the engine-on-Django tests (and would fail the deploy check as async.E001).
    own = ("REDIS_URL", "TEST_DB_NAME", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if k not in own}
    env.update(app_env)
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        STUDIO_ENCRYPTION_KEYS="k1:" + base64.urlsafe_b64encode(os.urandom(32)).decode(),
        ALLOWED_HOSTS=f"{HOST},127.0.0.1",
        STUDIO_VAR_DIR=str(var_dir),
        # The services of the compose network are not here: a private SQLite file, embedded.
        DATABASE_URL=f"sqlite:///{var_dir / 'db.sqlite3'}",
    )
    env.pop("REDIS_URL", None)
    return env


def deploy_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "python"), "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_deploy_check_is_clean_with_the_production_environment(tmp_path: Path) -> None:
    env = production_env(tmp_path)
    done = deploy_check(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout + done.stderr
    # The check can fail: without the shipped security settings it names what is missing.
    insecure = {k: v for k, v in env.items() if k not in ("STUDIO_HTTPS",)}
    done = deploy_check(insecure)
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stdout + done.stderr


@pytest.fixture(scope="module")
def daphne(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    var_dir = tmp_path_factory.mktemp("production")
    env = production_env(var_dir)
    python = str(BIN / "python")
    # Migrated once per set of migrations (a copy of the template).
    sqlite_database(var_dir / "db.sqlite3", env, seeded=False)
    for args in (
        ["manage.py", "collectstatic", "--noinput", "-v", "0"],
        [
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            f"User.objects.create_superuser('ops', password='{PASSWORD}')",
        ],
    ):
        subprocess.run([python, *args], cwd=ROOT, env=env, check=True, timeout=180)
    port = free_port()
    log = (var_dir / "daphne.log").open("ab")
    process = subprocess.Popen(
        [*DAPHNE, "-b", "127.0.0.1", "-p", str(port), "studio.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/login/", timeout=2).status_code, "Daphne to answer")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


# What the TLS proxy in front of Daphne sends with every request.
BEHIND_TLS = {"Host": HOST, "X-Forwarded-Proto": "https"}


def _assert_secure_page(response: httpx.Response) -> None:
    headers = response.headers
    assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    policy = headers["content-security-policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'"):
        assert directive in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert headers["x-content-type-options"] == "nosniff"


def _cookie(response: httpx.Response, name: str) -> tuple[str, str]:
    """The value of cookie ``name`` the response sets, and its whole Set-Cookie line."""
    for line in response.headers.get_list("set-cookie"):
        if line.startswith(f"{name}="):
            return line.split(";", 1)[0].split("=", 1)[1], line
    raise AssertionError(f"no {name} cookie set")


def test_studio_and_chat_pages_carry_the_production_headers(daphne: str) -> None:
    # Cookies are carried by hand: they are Secure, and this client talks plain HTTP to
    # Daphne as the TLS proxy does.
    with httpx.Client(base_url=daphne, headers=BEHIND_TLS) as client:
        for path in ("/login/", "/admin/login/"):
            page = client.get(path)
            assert page.status_code == 200, path
            _assert_secure_page(page)
            token, line = _cookie(page, "csrftoken")
            assert "; secure" in line.lower()
        signed_in = client.post(
            "/admin/login/?next=/admin/",
            data={"username": "ops", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"https://{HOST}/admin/login/", "Cookie": f"csrftoken={token}"},
        )
        assert signed_in.status_code == 302, signed_in.text[:500]
        session, line = _cookie(signed_in, "sessionid")
        assert "; secure" in line.lower() and "; httponly" in line.lower()
        for path in ("/admin/", "/chat/"):
            page = client.get(path, headers={"Cookie": f"sessionid={session}"})
            assert page.status_code == 200, path
            _assert_secure_page(page)


def test_plain_http_is_redirected_to_https(daphne: str) -> None:
    response = httpx.get(f"{daphne}/chat/", headers={"Host": HOST})
    assert response.status_code == 301
    assert response.headers["location"] == f"https://{HOST}/chat/"


def _raw(daphne: str, request: bytes) -> tuple[int, dict[str, Any]]:
    host, port = daphne.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"application/json" in head, head
    if b"chunked" in head.lower():
        body = _dechunk(body)
    return status, json.loads(body)


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, body = out + rest[:size], rest[size + 2 :]
    return out


@pytest.mark.parametrize("length", [9_000, 17_000, 70_000])
def test_overlong_urls_are_a_json_414_from_daphne_itself(daphne: str, length: int) -> None:
    path = "/api/threads/" + "a" * length
    request = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n"
    status, body = _raw(daphne, request.encode())
    assert status == 414
    assert body["error"].startswith("URL too long")


def test_an_overlong_header_is_a_json_431(daphne: str) -> None:
    request = f"GET /login/ HTTP/1.1\r\nHost: {HOST}\r\nX-Big: {'b' * 20_000}\r\n\r\n"
    status, body = _raw(daphne, request.encode())
    assert status == 431
    assert body == {"error": "Request header too large"}
