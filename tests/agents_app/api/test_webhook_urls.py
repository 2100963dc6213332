"""A webhook URL is refused with a sentence when it is saved (issue #52): malformed URLs
(brackets, ports) were 500s or were saved, and IPv6 forms of internal IPv4 addresses passed
the egress check. Both at the API edge (400, nothing saved) and in the studio's form (a form
error, nothing saved)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents_app.models import EnvValue, WebhookSubscription
from runtime.core import egress
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import _api_hosts, client_for  # noqa: F401

pytestmark = pytest.mark.django_db

ADD = "/admin/agents_app/webhooksubscription/add/"

MALFORMED = [
    ("http://[::1/", "not a well-formed URL"),
    ("http://[zz::1]/", "not a well-formed URL"),
    ("http://example.com:99999/", "port must be a number from 1 to 65535"),
    ("http://example.com:abc/", "port must be a number from 1 to 65535"),
    ("http://example.com:0/", "port must be a number from 1 to 65535"),
]

EMBEDDED_INTERNAL = [
    ("http://[64:ff9b::7f00:1]/", "embeds 127.0.0.1 (NAT64)"),
    ("http://[64:ff9b::a9fe:a9fe]/", "embeds 169.254.169.254 (NAT64)"),
    ("http://[64:ff9b:1::a00:1]/", "local-use NAT64"),
    ("http://[2002:7f00:1::]/", "embeds 127.0.0.1 (6to4)"),
    ("http://[::127.0.0.1]/", "embeds 127.0.0.1 (IPv4-compatible)"),
    ("http://[::ffff:127.0.0.1]/", "embeds 127.0.0.1 (IPv4-mapped)"),
    ("http://[::ffff:0:10.0.0.1]/", "embeds 10.0.0.1 (IPv4-translated)"),
    ("http://[2001:0:808:808::f5ff:fffe]/", "embeds 10.0.0.1 (Teredo client)"),
]


@pytest.fixture
def strict_egress() -> Iterator[None]:
    """The production default: no allow-list (the suite's autouse fixture restores it)."""
    egress.configure([])
    yield


@pytest.fixture
def hook_secret() -> None:
    row = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    row.value = "whsec-urls-0123456789"
    row.save()


def _create(user: Any, url: str) -> Any:
    return client_for(user).post_json(
        "/api/webhooks", {"url": url, "secretEnv": "HOOK_SECRET", "events": ["session.failed"]}
    )


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_a_malformed_webhook_url_is_a_400_with_a_sentence_at_the_api(
    admin_user: Any, hook_secret: None, url: str, reason: str
) -> None:
    response = _create(admin_user, url)
    assert response.status_code == 400, response.content
    assert reason in response.json()["error"]
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(("url", "reason"), EMBEDDED_INTERNAL)
def test_an_ipv6_form_of_an_internal_address_is_refused_at_the_api(
    admin_user: Any, hook_secret: None, strict_egress: None, url: str, reason: str
) -> None:
    response = _create(admin_user, url)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert reason in error and "egress policy" in error, error
    assert not WebhookSubscription.objects.exists()


def test_an_ipv6_form_of_a_public_address_is_saved(
    admin_user: Any, hook_secret: None, strict_egress: None
) -> None:
    response = _create(admin_user, "http://[64:ff9b::808:808]/hook")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(("url", "reason"), MALFORMED + EMBEDDED_INTERNAL[:2])
def test_a_refused_webhook_url_is_a_form_error_in_the_studio(
    admin_client: Any, hook_secret: None, strict_egress: None, url: str, reason: str
) -> None:
    """The API's sentence, on the form's URL field (Django's own check said only "Enter a
    valid URL." or let the URL through)."""
    data = fill(
        read_form(admin_client, ADD), url=url, secret_env="HOOK_SECRET", events=["session.failed"]
    )
    response = post(admin_client, ADD, data)
    assert response.status_code == 200, response.status_code  # the form again, not a 500
    errors = errors_of(response)
    assert any(reason in error for error in errors.get("url", [])), errors
    assert not WebhookSubscription.objects.exists()
