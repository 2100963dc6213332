"""Spec 0.2.0 F6 in the studio: credential grants are listed, added, changed and deleted
through the admin with the API's rule (``services.users.grants``: one rule, two doors) and
the API's permissions (``*_credentialgrant``); the secret is write-only and no page shows it.

Forms are posted as a browser would (``admin_pages``: read the rendered form, change fields,
post it); the registry holds a real tool, thread endpoint and user endpoint."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from agents_app.base.code_registry import reset_registry
from agents_app.base.encryption import decrypt
from agents_app.models import AuditEvent, CredentialGrant
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.users import grants
from runtime.tools.registry import Registry, define_thread_endpoint, define_tool
from runtime.tools.user_endpoints import define_user_endpoint
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.agents_app.api.api_support import ApiClient, _api_hosts  # noqa: F401

pytestmark = pytest.mark.django_db
ADD = reverse("admin:agents_app_credentialgrant_add")
LIST = reverse("admin:agents_app_credentialgrant_changelist")
CANARY = f"sk-grant-canary-{uuid.uuid4().hex}"
CRM = "https://api.crm.example"


@define_tool("Looks a customer up in the CRM.")
async def crm_lookup(state: Any, customer_id: str) -> str:
    return customer_id


async def _crm_page(request: Any, state: Any, params: Any) -> dict[str, Any]:
    return {}


async def _crm_sync(request: Any, user: Any, params: Any) -> dict[str, Any]:
    """Syncs the CRM."""
    return {}


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    reset_registry(
        Registry(
            crm_lookup,
            define_thread_endpoint(_crm_page, route="/crm", name="crm_page"),
            define_user_endpoint(_crm_sync, route="/crm/sync", method="POST"),
        )
    )
    yield
    reset_registry(None)


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)  # a superuser: every *_credentialgrant permission
    return client


def change_url(grant: CredentialGrant) -> str:
    return reverse("admin:agents_app_credentialgrant_change", args=[grant.pk])


def _add(client: Client, **fields: Any) -> Any:
    defaults = {"name": "crm", "kind": "bearer", "secret": CANARY, "origins": f"{CRM}\n"}
    data = fill(read_form(client, ADD), **{**defaults, **fields})
    return post(client, ADD, data)


def _grant(user: Any = None, name: str = "crm", **settings: Any) -> CredentialGrant:
    body = {"origins": [CRM], "allow": {"tools": ["crm_lookup"]}, **settings}
    grants.grant_put(
        user_id=user.pk if user else None, name=name, kind="bearer", secret=CANARY, settings=body
    )
    return CredentialGrant.objects.get(user=user, name=name)


def test_F6_the_studio_adds_exactly_the_grant_the_api_adds(staff: Client, alice: Any) -> None:
    """One rule, two doors: the same grant through the form and through ``PUT``."""
    answer = _add(
        staff,
        user=alice.pk,
        allow_tools=["crm_lookup"],
        allow_user_endpoints=["crm/sync"],
        inject_header="X-Api-Key",
    )
    assert answer.status_code == 302, errors_of(answer)
    stored = CredentialGrant.objects.get(user=alice, name="crm")
    assert decrypt(stored.ciphertext) == CANARY
    assert stored.updated_by is not None and stored.updated_by.username == "ops"

    _, raw = api_key_create(user=alice, name="laptop")
    api = ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = {
        "kind": "bearer",
        "secret": CANARY,
        "origins": [CRM],
        "inject": {"header": "X-Api-Key"},
        "allow": {"tools": ["crm_lookup"], "userEndpoints": ["crm/sync"]},
    }
    put = api.put("/api/users/me/grants/crm2", body, content_type="application/json")
    assert put.status_code == 200, put.content
    by_api = CredentialGrant.objects.get(user=alice, name="crm2")
    assert (stored.kind, stored.config) == (by_api.kind, by_api.config)
    # And the API lists the studio's grant as it lists its own.
    listed = {g["name"]: g for g in api.get("/api/users/me/grants").json()["grants"]}
    for key in ("kind", "scope", "origins", "inject", "allow", "metadata"):
        assert listed["crm"][key] == listed["crm2"][key], key


def test_F6_the_form_offers_what_the_registry_knows_with_any_and_unregistered_names(
    staff: Client,
) -> None:
    grant = _grant(allow={"tools": ["crm_lookup", "gone_tool"], "endpoints": ["*"]})
    page = staff.get(change_url(grant)).content.decode()
    for shown in (
        'value="crm_lookup"',
        "Looks a customer up in the CRM.",
        'value="crm_page"',
        "GET /api/threads/&lt;id&gt;/crm",
        'value="crm/sync"',
        "POST /api/users/me/crm/sync",
        "Any tool (*)",
        "gone_tool (not registered",
    ):
        assert shown in page, shown
    data = read_form(staff, change_url(grant))
    assert data["allow_endpoints"] == "*" and data["kind"] == "bearer"


@pytest.mark.parametrize(
    ("fields", "field", "said"),
    [
        ({"origins": f"{CRM}/v1"}, "origins", "has a path"),
        ({"origins": "ftp://files.example"}, "origins", "is not an origin"),
        ({"kind": "query"}, "inject_param", "a query grant needs param"),
        ({"inject_param": "key"}, "inject_param", "param is not a setting of a bearer grant"),
        ({"inject_header": "bad header"}, "inject_header", "is not an HTTP header name"),
        ({"secret": ""}, "secret", "a new grant needs its secret"),
        ({"name": "has space"}, "name", "Invalid grant name"),
    ],
)
def test_F6_a_refused_grant_says_why_under_its_field_and_is_not_stored(
    staff: Client, fields: dict[str, Any], field: str, said: str
) -> None:
    answer = _add(staff, **fields)
    assert answer.status_code == 200
    errors = errors_of(answer)
    assert any(said in e for e in errors.get(field, [])), errors
    assert not CredentialGrant.objects.exists()
    assert CANARY not in answer.content.decode()  # not even the secret just typed


def test_F6_a_name_is_once_per_owner(staff: Client, alice: Any) -> None:
    _grant()
    answer = _add(staff)
    assert "already has a grant named crm" in errors_of(answer)["name"][0]
    assert _add(staff, user=alice.pk).status_code == 302  # alice's own "crm" is another grant
    assert CredentialGrant.objects.filter(name="crm").count() == 2


def test_F6_changing_who_may_use_it_keeps_the_secret(staff: Client) -> None:
    grant = _grant()
    data = fill(read_form(staff, change_url(grant)), allow_tools=["*"], allow_endpoints="crm_page")
    assert data["secret"] == ""  # the password input renders no value
    answer = post(staff, change_url(grant), data)
    assert answer.status_code == 302, errors_of(answer)
    grant.refresh_from_db()
    assert decrypt(grant.ciphertext) == CANARY
    assert grant.config["allow"]["tools"] == ["*"]
    assert grant.config["allow"]["endpoints"] == ["crm_page"]
    # Nothing ticked: nobody may use it.
    data = fill(read_form(staff, change_url(grant)), allow_tools=None, allow_endpoints=None)
    assert post(staff, change_url(grant), data).status_code == 302
    grant.refresh_from_db()
    assert grant.config["allow"] is None
    assert "nobody" in staff.get(LIST).content.decode()


def test_F6_changing_where_the_secret_goes_needs_the_secret_again(staff: Client) -> None:
    grant = _grant()
    data = fill(read_form(staff, change_url(grant)), origins="https://evil.example")
    answer = post(staff, change_url(grant), data)
    assert "needs its secret again" in errors_of(answer)["secret"][0]
    grant.refresh_from_db()
    assert grant.config["origins"] == [CRM]
    for change in ({"kind": "header", "inject_header": "X-Key"}, {"inject_header": "X-Other"}):
        answer = post(staff, change_url(grant), fill(read_form(staff, change_url(grant)), **change))
        assert "needs its secret again" in errors_of(answer)["secret"][0], change
    data = fill(read_form(staff, change_url(grant)), origins="https://new.example", secret="s2-x")
    assert post(staff, change_url(grant), data).status_code == 302
    grant.refresh_from_db()
    assert grant.config["origins"] == ["https://new.example"]
    assert decrypt(grant.ciphertext) == "s2-x"


def test_F6_deleting_in_the_studio_deletes_through_the_service(staff: Client, alice: Any) -> None:
    first, second = _grant(), _grant(alice)
    delete = reverse("admin:agents_app_credentialgrant_delete", args=[first.pk])
    assert staff.post(delete, {"post": "yes"}).status_code == 302
    assert not CredentialGrant.objects.filter(pk=first.pk).exists()
    bulk = {"action": "delete_selected", "_selected_action": [second.pk], "post": "yes"}
    assert staff.post(LIST, bulk).status_code == 302
    assert not CredentialGrant.objects.exists()


def _perms(user: Any, *codenames: str) -> None:
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))


def test_F6_the_studio_asks_the_apis_permissions(client: Client, make_user: Any) -> None:
    grant = _grant()
    clerk = make_user("clerk")
    clerk.is_staff = True
    clerk.save()
    client.force_login(clerk)
    assert client.get(LIST).status_code == 403
    _perms(clerk, "view_credentialgrant")
    assert client.get(LIST).status_code == 200
    page = client.get(change_url(grant)).content.decode()
    assert 'name="secret"' not in page and "crm_lookup" in page and CRM in page
    assert client.get(ADD).status_code == 403
    assert post(client, change_url(grant), {"kind": "bearer"}).status_code == 403
    delete = reverse("admin:agents_app_credentialgrant_delete", args=[grant.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    _perms(clerk, "add_credentialgrant", "change_credentialgrant", "delete_credentialgrant")
    assert _add(client, name="crm2").status_code == 302
    assert client.post(delete, {"post": "yes"}).status_code == 302


def test_F6_a_planted_secret_is_on_no_page(staff: Client, alice: Any) -> None:
    """List (searched too), change, history, delete confirmation, a failed form, the audit log."""
    assert _add(staff, user=alice.pk, allow_tools=["crm_lookup"]).status_code == 302
    grant = CredentialGrant.objects.get(user=alice)
    data = fill(
        read_form(staff, change_url(grant)), secret=CANARY + "-2", origins="https://x.example"
    )
    assert post(staff, change_url(grant), data).status_code == 302
    failed = post(
        staff,
        change_url(grant),
        fill(read_form(staff, change_url(grant)), secret=CANARY, origins="ftp://x"),
    )
    assert failed.status_code == 200
    pages = {
        "list": staff.get(LIST),
        "search": staff.get(LIST + "?q=crm"),
        "change": staff.get(change_url(grant)),
        "history": staff.get(reverse("admin:agents_app_credentialgrant_history", args=[grant.pk])),
        "delete": staff.get(reverse("admin:agents_app_credentialgrant_delete", args=[grant.pk])),
        "audit": staff.get(reverse("admin:agents_app_auditevent_changelist")),
        "failed": failed,
    }
    ciphertext = CredentialGrant.objects.get(pk=grant.pk).ciphertext
    for where, page in pages.items():
        assert page.status_code == 200, where
        body = page.content.decode()
        assert CANARY not in body and ciphertext not in body, where
    assert "https://x.example" in pages["change"].content.decode()
    listed = pages["list"].content.decode()
    assert "alice" in listed and "tools: crm_lookup" in listed and "ops" in listed
    # The audit log names the change, never the secret.
    events = AuditEvent.objects.filter(target_type="credential grant")
    assert events.count() >= 2
    assert all(CANARY not in str(e.changes) for e in events)
