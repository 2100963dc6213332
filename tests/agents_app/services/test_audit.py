"""The audit log (docs/identity.md, "The audit log"): every kind of change recorded with its
actor and before/after, secrets never in it, the studio's page behind its own permission,
filters, a CSV export without formulas, append-only rows and their retention."""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, connection, transaction
from django.test import Client, override_settings
from django.utils import timezone

from agents_app.models import (
    AuditEvent,
    EnvValue,
    McpServer,
    RetentionPolicy,
    SpendBudget,
)
from agents_app.models.audit import AuditLogIsAppendOnly
from agents_app.services.access import audit, scim
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import client_for, define_agent

pytestmark = pytest.mark.django_db

PLANTED = "planted-secret-Zq81xK"


def _events(**filters: Any) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(**filters).order_by("id"))


def _everything_recorded() -> str:
    rows = AuditEvent.objects.values()
    return json.dumps([{**r, "at": str(r["at"])} for r in rows], ensure_ascii=False)


def test_changes_over_the_api_are_recorded_with_the_key_and_before_after(ops: Any) -> None:
    define_agent("helper")
    client = client_for(ops)
    key_label = f"{ops.username} (API key #"
    # Env values: names, never values.
    assert (
        client.patch_json(
            "/api/envs/instance", {"env_patch": {"REPORT_TOKEN": PLANTED}}
        ).status_code
        == 200
    )
    assert (
        client.patch_json(
            "/api/envs/instance", {"env_patch": {"REPORT_TOKEN": PLANTED + "2"}}
        ).status_code
        == 200
    )
    created, changed = _events(target_type="env value")
    assert created.action == "created" and created.actor_kind == "api_key"
    assert created.actor.startswith(key_label) and created.source == "127.0.0.1"
    assert (
        created.changes["key"] == [None, "REPORT_TOKEN"]
        and created.changes["ciphertext"] == "(changed)"
    )
    assert changed.action == "changed" and changed.changes == {"ciphertext": "(changed)"}
    # A schedule: created, then paused (before/after), its env only by name.
    made = client.post_json(
        "/api/schedules",
        {
            "agent": "helper",
            "message": "Daily digest",
            "cron": "0 9 * * *",
            "env": {"DIGEST_KEY": PLANTED},
        },
    )
    assert made.status_code == 201, made.content
    client.post_json(f"/api/schedules/{made.json()['id']}/pause")
    made_event, paused = _events(target_type="schedule")
    assert made_event.changes["cron"] == [None, "0 9 * * *"]
    assert made_event.changes["env_names"] == [None, ["DIGEST_KEY"]]
    assert paused.changes["paused"] == [False, True] and paused.actor.startswith(key_label)
    # A trigger (its token is a credential: never recorded) and its revocation.
    trigger = client.post_json("/api/triggers", {"agent": "helper", "template": "{{ x }}"}).json()
    client.delete(f"/api/triggers/{trigger['id']}")
    trigger_made, trigger_revoked = _events(target_type="trigger")
    assert trigger_made.changes["template"] == [None, "{{ x }}"]
    assert (
        trigger_revoked.changes["revoked_at"][0] is None
        and trigger_revoked.changes["revoked_at"][1]
    )
    # A webhook: the URL without its query (which may carry a token).
    hook = client.post_json(
        "/api/webhooks",
        {
            "url": f"http://127.0.0.1:9/hook?sig={PLANTED}",
            "secretEnv": "REPORT_TOKEN",
            "events": ["session.failed"],
        },
    )
    assert hook.status_code == 201, hook.content
    [hook_event] = _events(target_type="webhook")
    assert hook_event.changes["url"] == [None, "http://127.0.0.1:9/hook"]
    # A definition: the fields of the definition that changed, before and after.
    agent = client.get("/api/agents/helper").json()["agent"]
    put = client.put(
        "/api/agents/helper",
        {**agent, "description": "Sends digests"},
        content_type="application/json",
    )
    assert put.status_code == 200, put.content
    definition = [
        e for e in _events(target_type="agent", target_id="helper") if e.action == "changed"
    ]
    assert definition and definition[-1].changes["description"][1] == "Sends digests"
    assert definition[-1].changes["via"] == [None, "api"] and definition[-1].actor_kind == "api_key"
    assert definition[-1].changes["version"][1] == definition[-1].changes["version"][0] + 1
    # An API key made here (for the person), then revoked.
    key, _ = api_key_create(user=ops, name="ci")
    key.revoked_at = timezone.now()
    key.save()
    assert [e.action for e in _events(target_type="api key", target_id=str(key.pk))] == [
        "created",
        "changed",
    ]
    assert PLANTED not in _everything_recorded()


def test_people_groups_permissions_budgets_and_retention_name_the_person(
    ops: Any, alice: Any
) -> None:
    person = audit.Actor(audit.Kind.PERSON, ops.username, ops.pk, "10.0.0.8")
    with audit.acting_as(person):
        team = Group.objects.create(name="support")
        alice.groups.add(team)
        team.permissions.add(Permission.objects.get(codename="view_thread"))
        alice.user_permissions.add(Permission.objects.get(codename="view_log"))
        alice.is_active = False
        alice.set_password(PLANTED)
        alice.save()
        SpendBudget.objects.create(user=alice, monthly_limit_usd="12.50")
        policy = RetentionPolicy.objects.create(thread_days=30)
        policy.thread_days = 90
        policy.save()
        alice.groups.remove(team)
    memberships = _events(target_type="user", target_id=str(alice.pk))
    group_changes = [e.changes["groups"] for e in memberships if "groups" in e.changes]
    assert group_changes[0]["added"] == ["support"] and group_changes[-1]["removed"] == ["support"]
    [perms] = [
        e.changes["user_permissions"] for e in memberships if "user_permissions" in e.changes
    ]
    assert perms["added"] == ["agents_app.view_log"]
    [deactivated] = [e for e in memberships if e.action == "changed" and "is_active" in e.changes]
    assert (
        deactivated.changes["is_active"] == [True, False]
        and deactivated.changes["password"] == "(changed)"
    )
    [group_perm] = [e for e in _events(target_type="group") if "permissions" in e.changes]
    assert group_perm.changes["permissions"]["added"] == ["agents_app.view_thread"]
    [budget] = _events(target_type="budget")
    assert budget.changes["monthly_limit_usd"] == [None, "12.50"]
    assert [e.changes.get("thread_days") for e in _events(target_type="retention")] == [
        [None, 30],
        [30, 90],
    ]
    assert {e.actor for e in _events()} >= {ops.username}
    assert all(e.source == "10.0.0.8" for e in _events(actor=ops.username))
    assert PLANTED not in _everything_recorded()


def test_an_import_command_is_named_as_the_actor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/srv/manage.py", "import_definitions", "agents/"])
    define_agent("imported")
    event = _events(target_type="agent", target_id="imported")[0]
    assert (event.actor_kind, event.actor, event.action) == (
        "command",
        "manage.py import_definitions",
        "created",
    )


def test_a_planted_secret_never_reaches_the_log_the_page_or_the_export(
    ops: Any, alice: Any
) -> None:
    define_agent("helper")
    raw_key = api_key_create(user=alice, name="robot")[1]
    _, raw_scim = scim.token_create(name="okta", by=ops)
    env = EnvValue(scope=EnvValue.Scope.USER, user=alice, key="MY_TOKEN")
    env.value = PLANTED
    env.save()
    McpServer.objects.create(
        name="tools",
        url=f"https://mcp.example.com/?k={PLANTED}",
        headers={"Authorization": f"Bearer {PLANTED}"},
    )
    alice.set_password(PLANTED)
    alice.save()
    studio = Client()
    studio.force_login(ops)
    page = studio.get("/admin/agents_app/auditevent/").content.decode()
    exported = studio.get("/admin/agents_app/auditevent/export.csv").content.decode()
    details = "".join(
        studio.get(f"/admin/agents_app/auditevent/{e.pk}/change/").content.decode()
        for e in _events()
    )
    for secret in (PLANTED, raw_key, raw_scim):
        for where in (_everything_recorded(), page, exported, details):
            assert secret not in where
    assert "MY_TOKEN" in page and "Authorization" in _everything_recorded()


def test_the_page_needs_its_own_permission_and_filters_by_kind(ops: Any, make_user: Any) -> None:
    Group.objects.create(name="reviewers")
    with audit.acting_as(audit.Actor(audit.Kind.SCIM, "SCIM token “okta” (#1)")):
        Group.objects.create(name="engineering")
    # Staff with every other permission of the studio, but not the audit log's.
    clerk = make_user("clerk")
    clerk.is_staff, clerk.is_superuser = True, False
    clerk.save()
    clerk.user_permissions.set(Permission.objects.exclude(codename="view_auditevent"))
    refused = Client()
    refused.force_login(clerk)
    assert refused.get("/admin/agents_app/auditevent/").status_code == 403
    assert refused.get("/admin/agents_app/auditevent/export.csv").status_code == 403
    assert "auditevent" not in refused.get("/admin/").content.decode()
    reader = make_user("auditor")
    reader.is_staff, reader.is_superuser = True, False
    reader.save()
    reader.user_permissions.set(Permission.objects.filter(codename="view_auditevent"))
    allowed = Client()
    allowed.force_login(reader)
    listed = allowed.get("/admin/agents_app/auditevent/?actor_kind__exact=scim").content.decode()
    assert "engineering" in listed and "reviewers" not in listed
    searched = allowed.get("/admin/agents_app/auditevent/?q=reviewers").content.decode()
    assert "reviewers" in searched and "engineering" not in searched
    rows = list(
        csv.reader(
            io.StringIO(
                allowed.get(
                    "/admin/agents_app/auditevent/export.csv?target_type=group"
                ).content.decode()
            )
        )
    )
    assert rows[0][:3] == ["time (UTC)", "actor kind", "actor"]
    assert {r[7] for r in rows[1:]} >= {"reviewers", "engineering"}
    # Nobody adds, changes or deletes an event in the studio.
    event = _events()[0]
    assert (
        allowed.post(
            f"/admin/agents_app/auditevent/{event.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_the_export_neutralises_formulas(ops: Any) -> None:
    Group.objects.create(name='=HYPERLINK("http://evil.example","click")')
    text = audit.export_csv(AuditEvent.objects.filter(target_type="group"))
    [row] = list(csv.reader(io.StringIO(text)))[1:]
    assert row[7].startswith("'=HYPERLINK")
    assert all(not cell.startswith(("=", "+", "-", "@")) for cell in row)


@pytest.mark.django_db(transaction=True)
def test_events_are_append_only_and_only_retention_deletes_them() -> None:
    Group.objects.create(name="old")
    event = _events()[0]
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).update(actor="someone else")
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).delete()
    with pytest.raises(AuditLogIsAppendOnly):
        event.save()
    if connection.vendor == "postgresql":
        for statement in (
            "UPDATE agents_app_auditevent SET actor = 'x'",
            "DELETE FROM agents_app_auditevent",
        ):
            with (
                pytest.raises(DatabaseError, match="append-only"),
                transaction.atomic(),
                connection.cursor() as cursor,
            ):
                cursor.execute(statement)
    AuditEvent.objects.create(
        at=timezone.now() - timedelta(days=40),
        actor_kind="system",
        actor="system",
        action="created",
        target_type="group",
        target_id="1",
        target="ancient",
    )
    with override_settings(STUDIO_AUDIT_RETENTION_DAYS=0):
        assert audit.purge_expired() == 0
    with override_settings(STUDIO_AUDIT_RETENTION_DAYS=30):
        assert audit.purge_expired() == 1
    assert list(AuditEvent.objects.values_list("target", flat=True)) == ["old"]
