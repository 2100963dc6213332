"""The egress policy (issue #36 items 2 and 3): outbound connections made with credentials or
on a user's behalf refuse loopback, private and metadata addresses after DNS and on every
redirect hop, the instance key goes only to the vendor's host or a base URL a superuser
allowed, and a studio action resolves only the env values its actor may read.

Each test runs a real local listener and asserts what it received."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Permission

from agents_app.base.errors import Invalid
from agents_app.models import EnvValue, LanguageModel, McpServer
from agents_app.services.definitions import model_catalog
from agents_app.services.definitions.mcp_servers import mcp_server_refresh
from agents_app.services.definitions.model_catalog import CatalogUnavailable
from runtime.core import egress

PLANTED_KEY = "sk-planted-instance-key-0123456789"
PLANTED_SECRET = "planted-canary-secret-9876"


class Listener:
    """A tiny HTTP server on 127.0.0.1 recording each request's path and headers."""

    def __init__(self, status: int = 401, location: str | None = None) -> None:
        self.received: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                self.send_response(302 if location else status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                body = b'{"error": {"message": "no"}}'
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def everything(self) -> str:
        return repr(self.received)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def strict_egress() -> Iterator[None]:
    """The production default: no allow-list (the suite's loopback allowance removed)."""
    egress.configure([])
    yield


# --- the address check ------------------------------------------------------------------------


async def test_egress_refuses_loopback_base_url_after_dns(
    listener: Listener, strict_egress: None
) -> None:
    # "localhost" is a name: only resolving it shows it is loopback.
    async with egress.client() as client:
        with pytest.raises(egress.EgressRefused, match="127.0.0.1"):
            await client.get(f"http://localhost:{listener.port}/v1/models")
    assert listener.received == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.1",
        "172.16.0.1",
        "169.254.169.254",
        "::1",
        "fd00::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "100.64.0.1",
    ],
)
def test_egress_refuses_private_link_local_and_metadata_addresses(address: str) -> None:
    import ipaddress

    assert not egress.EgressPolicy().allows_address(address, ipaddress.ip_address(address))


def test_egress_allows_public_addresses() -> None:
    import ipaddress

    assert egress.EgressPolicy().allows_address("x", ipaddress.ip_address("104.18.6.192"))


async def test_egress_refuses_redirect_to_private_address(strict_egress: None) -> None:
    target = Listener(status=200)
    # The first hop is allowed by name; it redirects to an address nobody allowed.
    hop = Listener(location=f"http://127.0.0.1:{target.port}/stolen")
    try:
        policy = egress.EgressPolicy.from_allow_list(["localhost"])
        async with egress.client(policy, follow_redirects=True) as client:
            with pytest.raises(egress.EgressRefused):
                await client.get(f"http://localhost:{hop.port}/start")
        assert [path for path, _ in hop.received] == ["/start"]
        assert target.received == []
    finally:
        hop.close()
        target.close()


async def test_egress_allow_list_lets_listed_host_through(
    listener: Listener, strict_egress: None
) -> None:
    for allow in (["127.0.0.1"], ["127.0.0.0/8"], ["localhost"]):
        policy = egress.EgressPolicy.from_allow_list(allow)
        async with egress.client(policy) as client:
            answer = await client.get(f"http://localhost:{listener.port}/ok")
        assert answer.status_code == 401
    assert len(listener.received) == 3
    # The connection went to the checked address, the name kept in the Host header.
    assert listener.received[0][1]["host"] == f"localhost:{listener.port}"


def test_egress_allow_list_refuses_what_is_neither_host_nor_cidr() -> None:
    with pytest.raises(ValueError, match="neither"):
        egress.EgressPolicy.from_allow_list(["10.0.0.0/33"])


async def test_configured_policy_applies_to_clients_built_without_one(
    listener: Listener,
) -> None:
    egress.configure(["10.0.0.0/8"])
    async with egress.client() as client:
        with pytest.raises(httpx.TransportError):
            await client.get(f"http://127.0.0.1:{listener.port}/")
    assert listener.received == []


# --- the key rule -----------------------------------------------------------------------------


def _instance_env(key: str, value: str) -> None:
    row = EnvValue(scope="instance", key=key, value_type="secret")
    row.value = value
    row.save()


def _model(base_url: str, *, blessed: bool = False) -> LanguageModel:
    return LanguageModel.objects.create(
        name="self-hosted",
        provider="openai",
        model="gpt-4o-mini",
        base_url=base_url,
        send_instance_key_to_base_url=blessed,
    )


@pytest.mark.django_db
def test_discovery_does_not_send_instance_key_to_foreign_host(
    listener: Listener, make_user: Any
) -> None:
    _instance_env("OPENAI_API_KEY", PLANTED_KEY)
    model = _model(f"http://127.0.0.1:{listener.port}/v1")
    staff = make_user("ops", staff=True)
    with pytest.raises(CatalogUnavailable, match="was not sent to 127.0.0.1"):
        model_catalog.provider_models_page(
            "openai",
            user=staff,
            base_url=model_catalog.model_base_url(model.name, "openai"),
            refresh=True,
        )
    assert listener.received, "the request went out (without the key)"
    assert PLANTED_KEY not in listener.everything()


@pytest.mark.django_db
def test_test_connection_does_not_send_instance_key_to_foreign_host(
    listener: Listener, make_user: Any
) -> None:
    _instance_env("OPENAI_API_KEY", PLANTED_KEY)
    result = model_catalog.check_connection(
        "openai",
        "gpt-4o-mini",
        user=make_user("ops", staff=True),
        base_url=f"http://127.0.0.1:{listener.port}/v1",
    )
    assert not result["ok"] and "was not sent" in result["message"]
    assert PLANTED_KEY not in listener.everything()


@pytest.mark.django_db
def test_instance_key_goes_to_a_base_url_a_superuser_allowed(
    listener: Listener, make_user: Any
) -> None:
    _instance_env("OPENAI_API_KEY", PLANTED_KEY)
    model = _model(f"http://127.0.0.1:{listener.port}/v1", blessed=True)
    with pytest.raises(CatalogUnavailable):
        model_catalog.provider_models_page(
            "openai", user=make_user("ops", staff=True), base_url=model.base_url, refresh=True
        )
    assert listener.received[0][1]["authorization"] == f"Bearer {PLANTED_KEY}"


@pytest.mark.django_db
def test_a_users_own_key_goes_where_they_point_it(listener: Listener, make_user: Any) -> None:
    _instance_env("OPENAI_API_KEY", PLANTED_KEY)
    alice = make_user("alice")
    own = EnvValue(scope="user", user=alice, key="OPENAI_API_KEY", value_type="secret")
    own.value = "sk-alices-own-key"
    own.save()
    with pytest.raises(CatalogUnavailable):
        model_catalog.provider_models_page(
            "openai", user=alice, base_url=f"http://127.0.0.1:{listener.port}/v1", refresh=True
        )
    assert listener.received[0][1]["authorization"] == "Bearer sk-alices-own-key"


def test_only_superusers_may_tick_send_instance_key(make_user: Any) -> None:
    from django.contrib import admin
    from django.test import RequestFactory

    staff = make_user("mod")
    staff.is_staff = True
    staff.save()
    staff.user_permissions.add(Permission.objects.get(codename="change_languagemodel"))
    request = RequestFactory().get("/")
    request.user = type(staff).objects.get(pk=staff.pk)
    model_admin = admin.site._registry[LanguageModel]
    assert "send_instance_key_to_base_url" in model_admin.get_readonly_fields(request)
    request.user = make_user("root", staff=True)
    assert "send_instance_key_to_base_url" not in model_admin.get_readonly_fields(request)


# --- secrets resolve with the actor's rights --------------------------------------------------


def _mcp_user(make_user: Any, *codenames: str) -> Any:
    user = make_user("mcp-manager")
    user.is_staff = True
    user.save()
    for codename in ("change_mcpserver", "view_mcpserver", *codenames):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return type(user).objects.get(pk=user.pk)


@pytest.mark.django_db
def test_test_connection_does_not_resolve_secrets_the_actor_cannot_read(
    listener: Listener, make_user: Any
) -> None:
    _instance_env("OPENAI_API_KEY", PLANTED_KEY)
    _instance_env("SOME_SECRET", PLANTED_SECRET)
    server = McpServer.objects.create(
        name="theirs",
        url=f"http://127.0.0.1:{listener.port}/mcp",
        headers={"Authorization": "Bearer ${OPENAI_API_KEY}", "X-Canary": "${SOME_SECRET}"},
        timeout_ms=3000,
    )
    with pytest.raises(Invalid, match="instance env value, which you may not read"):
        mcp_server_refresh(server=server, user=_mcp_user(make_user))
    assert listener.received == []


@pytest.mark.django_db
def test_test_connection_resolves_secrets_for_an_actor_who_may_read_them(
    listener: Listener, make_user: Any
) -> None:
    _instance_env("SOME_SECRET", PLANTED_SECRET)
    server = McpServer.objects.create(
        name="theirs",
        url=f"http://127.0.0.1:{listener.port}/mcp",
        headers={"X-Canary": "${SOME_SECRET}"},
        timeout_ms=3000,
    )
    with pytest.raises(Invalid):  # the listener is no MCP server
        mcp_server_refresh(server=server, user=_mcp_user(make_user, "view_envvalue"))
    assert listener.received[0][1]["x-canary"] == PLANTED_SECRET


@pytest.mark.django_db
def test_mcp_test_connection_refuses_a_server_on_loopback_by_default(
    listener: Listener, make_user: Any, strict_egress: None
) -> None:
    server = McpServer.objects.create(
        name="local", url=f"http://localhost:{listener.port}/mcp", timeout_ms=3000
    )
    with pytest.raises(Invalid, match="egress policy"):
        mcp_server_refresh(server=server, user=make_user("root", staff=True))
    assert listener.received == []


def test_prompt_preview_does_not_show_instance_values_the_actor_cannot_read(
    make_user: Any,
) -> None:
    from agents_app.pages.prompt_preview import DraftPart, prompt_preview

    row = EnvValue(scope="instance", key="REGION_NOTE", value_type="text")
    row.value = PLANTED_SECRET
    row.save()
    parts = [DraftPart("env", "REGION_NOTE")]
    editor = make_user("editor")
    editor.is_staff = True
    editor.save()
    editor.user_permissions.add(Permission.objects.get(codename="change_prompt"))
    editor = type(editor).objects.get(pk=editor.pk)
    shown = prompt_preview(name="p", text="", parts=parts, user=editor)
    assert PLANTED_SECRET not in shown and "you may not read" in shown
    root = make_user("root", staff=True)
    assert PLANTED_SECRET in prompt_preview(name="p", text="", parts=parts, user=root)


def test_moving_a_blessed_base_url_takes_the_instance_key_rule_back(make_user: Any) -> None:
    from agents_app.services.definitions.rows import model_definition, model_from_definition

    model = _model("https://llm.internal.example/v1", blessed=True)
    # Someone who may change models (not a superuser) points it at their own listener.
    moved = model_definition(model).model_copy(update={"base_url": "http://127.0.0.1:9/v1"})
    model_from_definition(moved)
    model.refresh_from_db()
    assert model.base_url == "http://127.0.0.1:9/v1"
    assert model.send_instance_key_to_base_url is False
    assert model_catalog.key_withheld("openai", "instance", model.base_url)
