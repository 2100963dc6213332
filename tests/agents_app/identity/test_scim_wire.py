"""SCIM 2.0 at /scim/v2/ in the shapes Okta and Microsoft Entra ID send (RFC 7643/7644; the
vendors' published request examples): the token, users (create, filter, replace, patch,
deactivate, delete) and groups (members added and removed both ways), each change in the
audit log as the SCIM token's. tests/browser/test_identity_sign_in.py drives the same
endpoints with a SCIM client library over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from agents_app.models import Agent, AuditEvent, Schedule, ScimToken
from agents_app.services.access import scim
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.automation import schedules
from tests.agents_app.api.api_support import ApiClient, define_agent

pytestmark = pytest.mark.django_db
SCIM = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


class ScimClient:
    def __init__(self, token: str) -> None:
        self.http = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body) if body is not None else ""
        response = getattr(self.http, method)(f"/scim/v2{path}", data=data, content_type=SCIM)
        return response


@pytest.fixture
def token(ops: Any) -> str:
    return scim.token_create(name="okta", by=ops)[1]


@pytest.fixture
def client(token: str) -> ScimClient:
    return ScimClient(token)


def _okta_user(name: str = "dana@example.com") -> dict[str, Any]:
    # Okta's "Create User" request (developer.okta.com, SCIM 2.0 reference).
    return {
        "schemas": [USER],
        "userName": name,
        "name": {"givenName": "Dana", "familyName": "Scully"},
        "emails": [{"primary": True, "value": name, "type": "work"}],
        "displayName": "Dana Scully",
        "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7",
        "groups": [],
        "password": "1mz050nq",
        "active": True,
    }


def test_a_token_is_needed_and_never_shown(token: str) -> None:
    nobody = Client().get("/scim/v2/Users")
    assert nobody.status_code == 401 and nobody["Content-Type"] == SCIM
    assert nobody.json()["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert (
        Client(HTTP_AUTHORIZATION="Bearer scim_" + "0" * 64).get("/scim/v2/Users").status_code
        == 401
    )
    row = ScimToken.objects.get()
    assert row.token_hash != token and token not in json.dumps(
        list(ScimToken.objects.values()), default=str
    )
    ScimToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert ScimClient(token).call("get", "/Users").status_code == 401


def test_okta_creates_finds_replaces_and_deactivates_a_user(client: ScimClient) -> None:
    define_agent("helper")
    made = client.call("post", "/Users", _okta_user())
    assert made.status_code == 201, made.content
    body = made.json()
    assert made["Location"].endswith(f"/scim/v2/Users/{body['id']}")
    assert (body["userName"], body["active"], body["externalId"]) == (
        "dana@example.com",
        True,
        "00ujl29u0le5T6Aj10h7",
    )
    assert "password" not in made.content.decode() and "1mz050nq" not in made.content.decode()
    user = get_user_model().objects.get(pk=body["id"])
    assert not user.has_usable_password()
    # Okta looks a user up before creating: filter userName eq (case-insensitive).
    found = client.call(
        "get", "/Users?filter=userName%20eq%20%22DANA@example.com%22&startIndex=1&count=100"
    ).json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == body["id"]
    assert (
        client.call("get", "/Users?filter=userName%20eq%20%22nobody%22").json()["totalResults"] == 0
    )
    assert client.call("post", "/Users", _okta_user()).status_code == 409
    # Replace (PUT) the whole user.
    replaced = client.call(
        "put",
        f"/Users/{body['id']}",
        {**_okta_user(), "name": {"givenName": "D.", "familyName": "Scully"}, "id": body["id"]},
    )
    assert replaced.json()["name"]["givenName"] == "D."
    # Deactivate, Okta's way: replace without a path.
    schedule = schedules.schedule_create(
        owner=user, agent_name="helper", interval_seconds=60, message="digest"
    )
    _, raw_key = api_key_create(user=user, name="robot")
    session = Client()
    session.force_login(user)
    assert session.get("/api/auth/me").status_code == 200
    assert ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw_key}").get("/api/auth/me").status_code == 200
    off = client.call(
        "patch",
        f"/Users/{body['id']}",
        {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": False}}]},
    )
    assert off.status_code == 200 and off.json()["active"] is False
    assert Schedule.objects.get(pk=schedule.pk).paused is True
    assert ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw_key}").get("/api/auth/me").status_code == 401
    assert session.get("/api/auth/me").status_code == 401
    # Reactivated: the old session stays ended (its hash no longer matches).
    on = client.call(
        "patch",
        f"/Users/{body['id']}",
        {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]},
    )
    assert on.json()["active"] is True and session.get("/api/auth/me").status_code == 401
    actors = set(
        AuditEvent.objects.filter(target_type="user", target_id=body["id"]).values_list(
            "actor_kind", flat=True
        )
    )
    assert actors == {"scim"}
    assert AuditEvent.objects.filter(
        target_id=body["id"], changes__is_active=[True, False]
    ).exists()


def test_entra_patches_deletes_and_frees_the_name(client: ScimClient) -> None:
    # Entra ID's "Create User" (learn.microsoft.com, SCIM endpoint reference).
    created = client.call(
        "post",
        "/Users",
        {
            "schemas": [USER, "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
            "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
            "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
            "active": True,
            "emails": [
                {"primary": True, "type": "work", "value": "Test_User_fd0ea19b@testuser.com"}
            ],
            "meta": {"resourceType": "User"},
            "name": {
                "formatted": "givenName familyName",
                "familyName": "familyName",
                "givenName": "givenName",
            },
            "roles": [],
        },
    ).json()
    uid = created["id"]
    by_external = client.call(
        "get", "/Users?filter=externalId%20eq%20%220a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef%22"
    ).json()
    assert [r["id"] for r in by_external["Resources"]] == [uid]
    patched = client.call(
        "patch",
        f"/Users/{uid}",
        {
            "schemas": [PATCH],
            "Operations": [
                {
                    "op": "Replace",
                    "path": 'emails[type eq "work"].value',
                    "value": "updatedEmail@microsoft.com",
                },
                {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
                {
                    "op": "Add",
                    "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department",
                    "value": "Sales",
                },
            ],
        },
    ).json()
    assert patched["emails"][0]["value"] == "updatedEmail@microsoft.com"
    assert patched["name"]["familyName"] == "updatedFamilyName"
    # Entra ID sends booleans as strings in PATCH.
    off = client.call(
        "patch",
        f"/Users/{uid}",
        {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]},
    )
    assert off.json()["active"] is False
    assert client.call("delete", f"/Users/{uid}").status_code == 204
    assert client.call("get", f"/Users/{uid}").status_code == 404
    user = get_user_model().objects.get(pk=uid)
    assert not user.is_active and user.username.endswith(f".deleted-{uid}")
    again = client.call(
        "post", "/Users", {"schemas": [USER], "userName": created["userName"], "active": True}
    )
    assert again.status_code == 201 and again.json()["id"] != uid
    bad = client.call(
        "patch",
        f"/Users/{uid}",
        {"Operations": [{"op": "replace", "path": "active", "value": False}]},
    )
    assert bad.status_code in (400, 404)


def test_groups_follow_both_vendors_and_the_audience_follows_them(
    client: ScimClient, ops: Any
) -> None:
    define_agent("helper")
    define_agent("secret-project")
    dana = client.call("post", "/Users", _okta_user()).json()
    fox = client.call("post", "/Users", _okta_user("fox@example.com")).json()
    # Okta: create the group with no members, then PATCH members in.
    group = client.call(
        "post", "/Groups", {"schemas": [GROUP], "displayName": "X-Files", "members": []}
    ).json()
    agent = Agent.objects.get(name="secret-project")
    agent.audience_groups.set([Group.objects.get(pk=group["id"])])
    dana_user = get_user_model().objects.get(pk=dana["id"])
    _, raw = api_key_create(user=dana_user, name="dana")
    as_dana = ApiClient(HTTP_AUTHORIZATION=f"Bearer {raw}")

    def offered() -> set[str]:
        return {a["name"] for a in as_dana.get("/api/agents").json()["agents"]}

    assert "secret-project" not in offered()
    added = client.call(
        "patch",
        f"/Groups/{group['id']}",
        {
            "schemas": [PATCH],
            "Operations": [
                {
                    "op": "add",
                    "path": "members",
                    "value": [
                        {"value": dana["id"], "display": "dana@example.com"},
                        {"value": fox["id"]},
                    ],
                }
            ],
        },
    )
    assert added.status_code == 200, added.content
    assert {m["value"] for m in added.json()["members"]} == {dana["id"], fox["id"]}
    assert "secret-project" in offered()
    # Okta removes with a filtered path; Entra ID with a value list.
    client.call(
        "patch",
        f"/Groups/{group['id']}",
        {
            "schemas": [PATCH],
            "Operations": [{"op": "remove", "path": f'members[value eq "{fox["id"]}"]'}],
        },
    )
    client.call(
        "patch",
        f"/Groups/{group['id']}",
        {
            "schemas": [PATCH],
            "Operations": [{"op": "Remove", "path": "members", "value": [{"value": dana["id"]}]}],
        },
    )
    assert client.call("get", f"/Groups/{group['id']}").json()["members"] == []
    assert "secret-project" not in offered()
    # Rename (Okta's replace without a path), filter by displayName, then delete.
    client.call(
        "patch",
        f"/Groups/{group['id']}",
        {
            "schemas": [PATCH],
            "Operations": [
                {"op": "replace", "value": {"id": group["id"], "displayName": "Basement"}}
            ],
        },
    )
    listed = client.call(
        "get", "/Groups?filter=displayName%20eq%20%22Basement%22&excludedAttributes=members"
    ).json()
    assert [g["id"] for g in listed["Resources"]] == [group["id"]] and "members" not in listed[
        "Resources"
    ][0]
    assert client.call("delete", f"/Groups/{group['id']}").status_code == 204
    assert client.call("get", f"/Groups/{group['id']}").status_code == 404
    changes = [
        e.changes["members"]
        for e in AuditEvent.objects.filter(
            actor_kind="scim", target_type="group", target_id=group["id"]
        ).order_by("id")
        if "members" in e.changes
    ]
    assert changes[0]["added"] == ["dana@example.com", "fox@example.com"]
    assert [c["removed"] for c in changes[1:]] == [["fox@example.com"], ["dana@example.com"]]
    assert AuditEvent.objects.filter(
        actor_kind="scim", target_type="group", action="deleted"
    ).exists()


def test_discovery_documents_and_bad_requests(client: ScimClient) -> None:
    config = client.call("get", "/ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["bulk"]["supported"] is False
    types = client.call("get", "/ResourceTypes").json()
    assert {t["name"] for t in types["Resources"]} == {"User", "Group"}
    assert (
        client.call("get", "/Users?filter=title%20co%20%22x%22").json()["scimType"]
        == "invalidFilter"
    )
    assert client.call("post", "/Users", {"schemas": [USER]}).status_code == 400
    broken = client.http.post("/scim/v2/Users", data="{", content_type=SCIM)
    assert broken.status_code == 400 and broken.json()["scimType"] == "invalidSyntax"
    assert client.call("get", "/Widgets").status_code == 404
