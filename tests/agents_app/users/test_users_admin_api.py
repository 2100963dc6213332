"""Spec 0.2.0 row F7, the users admin API: ``GET``/``POST /api/users``, ``PUT``/``DELETE
/api/users/{id}``, ``GET``/``PATCH /api/users/{id}/env``, with the reference's roles
(``admin``, ``user``, ``api``) on Django's staff, groups and permissions. Only admins;
nobody gives what they do not hold; deleting deactivates through offboarding."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from agents_app.models import EnvValue, Schedule
from agents_app.services.access.identity import ADMIN_GROUP
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db

PLANTED = "planted-env-secret-98765"


def _grant(user: Any, *dotted: str) -> Any:
    for name in dotted:
        app_label, codename = name.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return get_user_model().objects.get(pk=user.pk)  # fresh permission cache


def _put(client: Any, path: str, body: Any) -> Any:
    return client.put(path, json.dumps(body), content_type="application/json")


def test_F7_an_admin_lists_creates_and_changes_accounts(as_: Any, ops: Any, alice: Any) -> None:
    created = as_(ops).post_json(
        "/api/users", {"username": "erin_1", "password": "long-enough-pw-7", "role": "admin"}
    )
    assert created.status_code == 201, created.content
    erin = created.json()["user"]
    assert erin["username"] == "erin_1" and erin["role"] == "admin" and erin["active"] is True
    row = get_user_model().objects.get(username="erin_1")
    assert row.is_staff and row.groups.filter(name=ADMIN_GROUP).exists()
    assert row.check_password("long-enough-pw-7")

    listed = as_(ops).get("/api/users").json()["users"]
    assert {u["username"]: u["role"] for u in listed} == {
        "ops": "admin",
        "alice": "user",
        "erin_1": "admin",
    }
    assert all("password" not in u for u in listed)

    changed = _put(
        as_(ops),
        f"/api/users/{alice.pk}",
        {"username": "alice_2", "permissions": ["agents_app.view_thread"]},
    )
    assert changed.status_code == 200, changed.content
    assert changed.json()["user"]["username"] == "alice_2"
    assert changed.json()["user"]["permissions"] == ["agents_app.view_thread"]
    assert get_user_model().objects.get(pk=alice.pk).has_perm("agents_app.view_thread")
    # An api account signs in with keys only: no usable password.
    api = _put(as_(ops), f"/api/users/{alice.pk}", {"role": "api"})
    assert api.json()["user"]["role"] == "api"
    assert not get_user_model().objects.get(pk=alice.pk).has_usable_password()
    back = _put(as_(ops), f"/api/users/{alice.pk}", {"role": "user"})
    assert back.status_code == 400 and "needs a password" in back.json()["error"]
    back = _put(as_(ops), f"/api/users/{alice.pk}", {"role": "user", "password": "a-new-pw-9x"})
    assert back.status_code == 200 and back.json()["user"]["role"] == "user"
    demoted = _put(as_(ops), f"/api/users/{erin['id']}", {"role": "user"})
    assert demoted.json()["user"]["role"] == "user"
    assert not get_user_model().objects.get(pk=erin["id"]).is_staff


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"username": "x", "password": "long-enough-pw-7"}, 400, "username: 3 to 50"),
        ({"username": "frank", "password": "short"}, 400, "password: This password is too short"),
        ({"username": "frank", "password": "long-enough-pw-7", "role": "root"}, 400, "role"),
        ({"username": "frank", "password": "long-enough-pw-7", "admin": True}, 400, "admin: Extra"),
        ({"username": "alice", "password": "long-enough-pw-7"}, 400, "Username already exists"),
    ],
    ids=["short-name", "short-password", "role", "unknown-field", "duplicate"],
)
def test_F7_bad_input_is_refused_with_a_sentence(
    as_: Any, ops: Any, alice: Any, body: dict[str, Any], status: int, words: str
) -> None:
    answer = as_(ops).post_json("/api/users", body)
    assert answer.status_code == status, answer.content
    assert words in answer.json()["error"]


def test_F7_updates_refuse_unknown_fields_taken_names_and_unknown_permissions(
    as_: Any, ops: Any, alice: Any, bob: Any
) -> None:
    url = f"/api/users/{alice.pk}"
    assert "colour: Extra inputs" in _put(as_(ops), url, {"colour": "red"}).json()["error"]
    taken = _put(as_(ops), url, {"username": "bob"})
    assert taken.status_code == 409 and taken.json() == {"error": "Username already taken"}
    unknown = _put(as_(ops), url, {"permissions": ["logs"]})
    assert unknown.status_code == 400 and "'logs' is not a permission here" in unknown.text
    assert _put(as_(ops), "/api/users/999999", {"role": "user"}).status_code == 404


def test_F7_nobody_gives_what_they_do_not_hold(as_: Any, alice: Any, bob: Any) -> None:
    helpdesk = _grant(bob, "auth.change_user", "auth.view_user")
    promote = _put(as_(helpdesk), f"/api/users/{alice.pk}", {"role": "admin"})
    assert promote.status_code == 403 and "only a superuser" in promote.json()["error"]
    give = _put(as_(helpdesk), f"/api/users/{alice.pk}", {"permissions": ["auth.delete_user"]})
    assert give.status_code == 403 and "which you do not hold" in give.json()["error"]
    own = _put(as_(helpdesk), f"/api/users/{alice.pk}", {"permissions": ["auth.view_user"]})
    assert own.status_code == 200, own.content
    root = get_user_model().objects.create_superuser("root", password="pw-for-tests-1")
    takeover = _put(as_(helpdesk), f"/api/users/{root.pk}", {"password": "mine-now-123x"})
    assert takeover.status_code == 403
    assert get_user_model().objects.get(pk=root.pk).check_password("pw-for-tests-1")


def test_F7_only_admins(as_: Any, alice: Any, bob: Any) -> None:
    for method, path in [
        ("get", "/api/users"),
        ("delete", f"/api/users/{bob.pk}"),
        ("get", f"/api/users/{bob.pk}/env"),
    ]:
        answer = getattr(as_(alice), method)(path)
        assert answer.status_code == 403, (path, answer.content)
        assert answer.json()["error"].startswith("Forbidden: Admin access required")
    assert (
        as_(alice).post_json("/api/users", {"username": "x1x", "password": "p"}).status_code == 403
    )


def test_F7_delete_deactivates_through_offboarding(as_: Any, ops: Any, alice: Any) -> None:
    define_agent("helper")
    schedule = Schedule.objects.create(
        owner=alice, agent_id=_agent_pk(), message="hi", interval_seconds=60
    )
    assert as_(ops).delete(f"/api/users/{ops.pk}").status_code == 400  # not yourself
    deleted = as_(ops).delete(f"/api/users/{alice.pk}")
    assert deleted.status_code == 200 and deleted.json() == {"success": True}
    kept = get_user_model().objects.get(pk=alice.pk)  # deactivated, not erased
    assert not kept.is_active
    schedule.refresh_from_db()
    assert schedule.paused and "was deactivated" in schedule.paused_reason
    listed = {u["username"]: u["active"] for u in as_(ops).get("/api/users").json()["users"]}
    assert listed["alice"] is False


def test_F7_a_persons_env_for_admins_secrets_write_only(as_: Any, ops: Any, alice: Any) -> None:
    url = f"/api/users/{alice.pk}/env"
    patched = as_(ops).patch_json(
        url, {"env_patch": {"TOKEN": PLANTED, "REGION": "eu"}, "env_type_patch": {"REGION": "text"}}
    )
    assert patched.status_code == 200 and patched.json() == {"success": True}
    read = as_(ops).get(url)
    assert read.status_code == 200 and PLANTED not in read.text
    body = read.json()
    assert body["user"] == {"id": alice.pk, "username": "alice"}
    assert [(v["name"], v["type"], v.get("value")) for v in body["variables"]] == [
        ("REGION", "text", "eu"),
        ("TOKEN", "secret", None),
    ]
    row = EnvValue.objects.get(scope="user", user=alice, key="TOKEN")
    assert row.value == PLANTED
    bad = as_(ops).patch_json(url, {"env_patch": {"A": "1"}, "colour": "x"})
    assert bad.status_code == 400 and "colour: Extra inputs" in bad.json()["error"]


def _agent_pk() -> Any:
    from agents_app.models import Agent

    return Agent.objects.get(name="helper").pk
