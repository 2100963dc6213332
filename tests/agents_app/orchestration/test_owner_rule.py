"""Issue #52: a schedule, a trigger, a webhook subscription and an eval run each act as their
owner, with the owner's rights as they are at that moment (``services.automation.owner_rights``).

Each test reads the edge a user sees: the thread that was or was not created, the run's
recorded reason, the API's answer, the row in the database read directly."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection

from agents_app.models import (
    Agent,
    EvalDataset,
    EvalResult,
    Schedule,
    ScheduleRun,
    Thread,
    Trigger,
    UsageLimit,
    WebhookDelivery,
    WebhookSubscription,
)
from agents_app.orchestration import eval_runs, schedule_runner
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.automation import schedules, webhooks
from agents_app.services.evals import checks as evals
from tests.agents_app.api.api_support import ApiClient, _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

AUTOMATION = [
    f"{action}_{model}"
    for model in ("schedule", "trigger", "webhooksubscription", "evalrun", "evaldataset")
    for action in ("add", "view", "change", "delete")
]


def _person(name: str, *codenames: str) -> User:
    user = User.objects.create_user(name, password="pw-for-tests-1", is_staff=bool(codenames))
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # no cached permissions


def _ann() -> User:
    """Holds every automation permission, and none that shows drafts (view_agent)."""
    return _person("ann", *AUTOMATION)


# --- the rights that change under a standing credential -------------------------------------


def _draft(owner: User) -> None:
    Agent.objects.filter(name="helper").update(state="draft")


def _other_audience(owner: User) -> None:
    Agent.objects.get(name="helper").audience_groups.add(Group.objects.create(name="Beta"))


def _deactivated(owner: User) -> None:
    # A bulk update sends no signal: the owner rule itself must refuse, not only offboarding.
    User.objects.filter(pk=owner.pk).update(is_active=False)


CHANGES: dict[str, Callable[[User], None]] = {
    "draft": _draft,
    "audience": _other_audience,
    "deactivated": _deactivated,
}


# --- each kind, acting once after the change ---------------------------------------------------


def _schedule_due(owner: User) -> tuple[Callable[[], None], Callable[[], str]]:
    row = schedules.schedule_create(
        owner=owner, agent_name="helper", message="Daily report", interval_seconds=3600
    )

    def act() -> None:
        Schedule.objects.filter(pk=row.pk).update(next_run_at=datetime.now(UTC))
        schedule_runner.sweep_once("sweeper")

    return act, lambda: ScheduleRun.objects.get(schedule=row).error


def _schedule_run_now(owner: User) -> tuple[Callable[[], None], Callable[[], str]]:
    row = schedules.schedule_create(
        owner=owner, agent_name="helper", message="Daily report", interval_seconds=3600
    )
    admin = User.objects.create_superuser("root", password="pw-for-tests-1")
    answers: list[Any] = []

    def act() -> None:
        answers.append(client_for(admin).post_json(f"/api/schedules/{row.pk}/run").json())

    return act, lambda: str(answers[0]["error"])


def _trigger(owner: User) -> tuple[Callable[[], None], Callable[[], str]]:
    created = client_for(owner).post_json(
        "/api/triggers", {"agent": "helper", "template": "Order {{ id }}"}
    )
    assert created.status_code == 201, created.content
    answers: list[Any] = []

    def act() -> None:
        body = json.dumps({"id": "A-1"})
        answers.append(
            ApiClient().post(created.json()["path"], body, content_type="application/json")
        )

    def reason() -> str:
        assert answers[0].status_code == 403, answers[0].content
        return str(answers[0].json()["error"])

    return act, reason


def _eval_case(owner: User) -> tuple[Callable[[], None], Callable[[], str]]:
    dataset = EvalDataset.objects.create(name="set")
    evals.case_save(
        dataset=dataset,
        name="hello",
        messages=[{"role": "user", "content": "Hello"}],
        checks=[{"type": "contains", "text": "Hello"}],
    )
    run = eval_runs.run_start(dataset="set", agent="helper", user=owner)

    def act() -> None:
        eval_runs.advance(str(run.pk))

    def reason() -> str:
        result = EvalResult.objects.get(run=run)
        assert result.status == EvalResult.Status.ERROR
        return str(result.checks[0]["detail"])

    return act, reason


KINDS = {
    "schedule due run": _schedule_due,
    "schedule run now": _schedule_run_now,
    "trigger request": _trigger,
    "eval case": _eval_case,
}


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_standing_credential_acts_with_its_owners_rights_at_that_moment(
    kind: str, change: str
) -> None:
    """Made while its owner could use the agent; then the agent becomes a draft, its
    audience a group the owner is not in, or the owner is deactivated: the next act starts
    no thread and says why."""
    define_agent("helper", [{"content": "Hello from the agent"}] * 5)
    owner = _ann()
    act, reason = KINDS[kind](owner)
    threads = Thread.objects.count()
    CHANGES[change](owner)
    act()
    assert Thread.objects.count() == threads, f"{kind} started a thread after: {change}"
    words = {"draft": "may not", "audience": "may not", "deactivated": "deactivated"}[change]
    if kind == "trigger request":
        words = "rights changed"  # the outside sender is not told whose account or why
    assert words in reason(), reason()


@pytest.mark.parametrize("kind", KINDS)
def test_a_standing_credential_whose_owner_keeps_their_rights_acts(kind: str) -> None:
    """The control: the same act, nothing changed, starts its thread as the owner."""
    define_agent("helper", [{"content": "Hello from the agent"}] * 5)
    owner = _ann()
    act, _ = KINDS[kind](owner)
    act()
    made = Thread.objects.filter(owner=owner)
    assert made.count() == 1 and made.get().agent.name == "helper"


@pytest.mark.parametrize("kind", ["schedule", "trigger", "eval"])
def test_automation_cannot_name_an_agent_its_creator_is_not_offered(kind: str) -> None:
    """As POST /api/threads: a draft's or another group's agent is answered as absent."""
    define_agent("helper")
    _draft(_ann())
    client = client_for(User.objects.get(username="ann"))
    assert client.post_json("/api/threads", {"agent_id": "helper"}).status_code == 404
    if kind == "schedule":
        body = {"agent": "helper", "message": "hi", "intervalSeconds": 3600}
        answer = client.post_json("/api/schedules", body)
    elif kind == "trigger":
        answer = client.post_json("/api/triggers", {"agent": "helper", "template": "x"})
    else:
        EvalDataset.objects.create(name="set")
        answer = client.post_json("/api/evals/runs", {"dataset": "set", "agent": "helper"})
    assert answer.status_code == 404, answer.content
    assert answer.json()["error"] == "Agent not found: helper"
    assert not Schedule.objects.exists() and not Trigger.objects.exists()


def test_a_reopened_chat_with_an_agent_no_longer_offered_cannot_post() -> None:
    """Narrowing an agent's audience closes the old chats of those left out: a post, an
    edit, a regenerate and a fork are refused, and nothing is queued."""
    define_agent("helper", [{"content": "first answer"}] * 3)
    alice = _person("alice")
    client = client_for(alice)
    thread = thread_create(user=alice, agent_name="helper")
    assert (
        client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "hi"}).status_code == 202
    )
    _other_audience(alice)
    some = "00000000-0000-0000-0000-000000000000"
    for path, body in (
        (f"/api/threads/{thread.pk}/messages", {"content": "still there?"}),
        (f"/api/threads/{thread.pk}/messages/{some}/edit", {"content": "still there?"}),
        (f"/api/threads/{thread.pk}/messages/{some}/regenerate", {}),
        (f"/api/threads/{thread.pk}/fork", {"message_id": some}),
    ):
        answer = client.post_json(path, body)
        assert answer.status_code == 403, answer.content
        assert "no longer available to you" in answer.json()["error"]
    from agents_app.models import QueuedMessage

    contents = list(QueuedMessage.objects.filter(thread=thread).values_list("content", flat=True))
    assert "still there?" not in contents
    # Put back in the audience, the chat works again: the rule reads rights now.
    Group.objects.get(name="Beta").user_set.add(alice)
    again = client.post_json(f"/api/threads/{thread.pk}/messages", {"content": "back"})
    assert again.status_code == 202, again.content


# --- ownership in management -------------------------------------------------------------------


def test_schedules_and_triggers_are_managed_by_their_owners() -> None:
    """ben holds the same permissions as ann: he sees and touches only his own; the
    manage-others permission is what reaches hers."""
    define_agent("helper")
    ann, ben = _ann(), _person("ben", *AUTOMATION)
    schedule = schedules.schedule_create(
        owner=ann, agent_name="helper", message="Ann's report", interval_seconds=3600
    )
    trigger = client_for(ann).post_json("/api/triggers", {"agent": "helper", "template": "x"})
    trigger_id = trigger.json()["id"]
    as_ben = client_for(ben)
    assert as_ben.get("/api/schedules").json()["schedules"] == []
    assert as_ben.get("/api/triggers").json()["triggers"] == []
    for method, path in (
        ("get", f"/api/schedules/{schedule.pk}"),
        ("post", f"/api/schedules/{schedule.pk}/pause"),
        ("post", f"/api/schedules/{schedule.pk}/resume"),
        ("post", f"/api/schedules/{schedule.pk}/run"),
        ("delete", f"/api/schedules/{schedule.pk}"),
        ("delete", f"/api/triggers/{trigger_id}"),
    ):
        answer = getattr(as_ben, method)(path)
        assert answer.status_code == 404, (path, answer.content)
    assert Schedule.objects.filter(pk=schedule.pk, paused=False).exists()
    assert not ScheduleRun.objects.exists() and not Thread.objects.exists()
    assert Trigger.objects.get(pk=trigger_id).revoked_at is None
    # With the manage-others permission he sees hers, and the owner is named.
    ben.user_permissions.add(
        *Permission.objects.filter(codename__in=["manage_others_schedule", "manage_others_trigger"])
    )
    listed = client_for(User.objects.get(pk=ben.pk)).get("/api/schedules").json()["schedules"]
    assert [(s["id"], s["owner"]) for s in listed] == [(str(schedule.pk), "ann")]


def test_an_edit_by_someone_else_holds_the_schedule_until_its_owner_resumes_it(
    client: Any,
) -> None:
    """ben (manage_others_schedule) changes ann's message in the studio: no run posts his
    words into her threads until she resumes it; he can neither resume it nor run it."""
    define_agent("helper", [{"content": "done"}] * 5)
    ann = _ann()
    ben = _person("ben", *AUTOMATION, "manage_others_schedule")
    row = schedules.schedule_create(
        owner=ann, agent_name="helper", message="Ann's report", interval_seconds=3600
    )
    client.force_login(ben)
    form = {
        "name": "",
        "agent": Agent.objects.get(name="helper").pk,
        "message": "Ben's words",
        "cron": "",
        "timezone": "UTC",
        "interval_seconds": "3600",
        "target": "new_thread",
        "catch_up": "0",
        "owner": ann.pk,
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    saved = client.post(f"/admin/agents_app/schedule/{row.pk}/change/", form)
    assert saved.status_code == 302, saved.content.decode()[-3000:]
    row.refresh_from_db()
    assert row.paused and "Edited by ben" in row.paused_reason
    Schedule.objects.filter(pk=row.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    schedule_runner.sweep_once("sweeper")
    as_ben = client_for(ben)
    assert as_ben.post_json(f"/api/schedules/{row.pk}/run").status_code == 403
    resumed = as_ben.post_json(f"/api/schedules/{row.pk}/resume")
    assert resumed.status_code == 403 and "Only its owner" in resumed.json()["error"]
    assert not Thread.objects.exists() and not ScheduleRun.objects.exists()
    # ann reads his words and resumes: her confirmation; now it runs as her.
    as_ann = client_for(ann)
    shown = as_ann.get(f"/api/schedules/{row.pk}").json()
    assert shown["message"] == "Ben's words" and "Edited by ben" in shown["pausedReason"]
    assert as_ann.post_json(f"/api/schedules/{row.pk}/resume").status_code == 200
    run = as_ann.post_json(f"/api/schedules/{row.pk}/run").json()
    assert run["status"] == "started", run
    assert Thread.objects.get(pk=run["threadId"]).owner_id == ann.pk


def _session_end_recorded(thread: Thread) -> None:
    """What a session's end records (``webhook_runner.session_ended`` without the send
    after commit, which would race this test's own claim)."""
    webhooks.session_events(
        thread_id=str(thread.pk),
        session_id=str(thread.pk),
        agent_id=thread.agent_id,
        agent=thread.agent.name,
        status="completed",
        error="",
    )


def test_a_subscription_delivers_only_what_its_owner_may_read() -> None:
    """hooky holds only the webhook permissions; his subscription names no agent (every
    agent's events): a session of alice's thread records nothing for him, his own does."""
    from agents_app.models import EnvValue

    define_agent("helper")
    secret = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    secret.value = "hook-secret-0123456789"
    secret.save()
    hooky = _person("hooky", "add_webhooksubscription", "view_webhooksubscription")
    alice = _person("alice")
    webhooks.subscription_create(
        owner=hooky,
        url="http://127.0.0.1:9/hook",
        secret_env="HOOK_SECRET",
        events=["session.finished"],
    )
    hers = thread_create(user=alice, agent_name="helper")
    his = thread_create(user=hooky, agent_name="helper")
    for thread in (hers, his):
        _session_end_recorded(thread)
    delivered = [d.payload["threadId"] for d in WebhookDelivery.objects.all()]
    assert delivered == [str(his.pk)]
    # Deactivated, he gets nothing more, not even what is already queued.
    queued = WebhookDelivery.objects.get()
    User.objects.filter(pk=hooky.pk).update(is_active=False)
    assert webhooks.claim(str(queued.pk)) is None
    assert WebhookDelivery.objects.get().status == "failed"
    other = thread_create(user=hooky, agent_name="helper")
    _session_end_recorded(other)
    assert WebhookDelivery.objects.count() == 1


# --- offboarding -----------------------------------------------------------------------------


def test_deactivating_a_user_stops_their_schedules_triggers_and_subscriptions(
    admin_client: Any,
) -> None:
    """erin's account is deactivated in the studio: her schedule pauses (run now refused),
    her trigger URL answers 404, her subscription is off; the studio lists why, and an
    admin hands the trigger to ann, as whom it then runs."""
    from agents_app.models import EnvValue

    define_agent("helper", [{"content": "done"}] * 5)
    secret = EnvValue(scope=EnvValue.Scope.INSTANCE, key="HOOK_SECRET")
    secret.value = "hook-secret-0123456789"
    secret.save()
    erin, ann = _person("erin", *AUTOMATION), _ann()
    schedule = schedules.schedule_create(
        owner=erin, agent_name="helper", message="Erin's report", interval_seconds=3600
    )
    created = client_for(erin).post_json("/api/triggers", {"agent": "helper", "template": "x"})
    path = created.json()["path"]
    subscription = webhooks.subscription_create(
        owner=erin, url="http://127.0.0.1:9/h", secret_env="HOOK_SECRET", events=["session.failed"]
    )
    page = admin_client.get(f"/admin/auth/user/{erin.pk}/change/")
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and not isinstance(v, list)}
    data.update(
        {
            "username": "erin",
            "is_active": "",
            "is_staff": "on",
            "date_joined_0": "2026-01-01",
            "date_joined_1": "00:00:00",
            "env_values-TOTAL_FORMS": "0",
            "env_values-INITIAL_FORMS": "0",
        }
    )
    data.pop("password", None)
    data.pop("last_login", None)
    data["user_permissions"] = [p.pk for p in erin.user_permissions.all()]
    saved = admin_client.post(f"/admin/auth/user/{erin.pk}/change/", data, follow=True)
    said = [str(m) for m in saved.context["messages"]]
    assert any(
        "erin is deactivated: 1 schedule(s) paused, 1 trigger(s) and 1 webhook subscription(s)" in m
        for m in said
    ), said
    assert not User.objects.get(pk=erin.pk).is_active
    schedule.refresh_from_db()
    assert schedule.paused and "was deactivated" in schedule.paused_reason
    root = User.objects.get(username="admin")
    as_root = client_for(root)
    assert as_root.post_json(f"/api/schedules/{schedule.pk}/run").status_code == 403
    fired = ApiClient().post(path, "{}", content_type="application/json")
    assert fired.status_code == 404 and fired.json() == {"error": "Not found"}
    subscription.refresh_from_db()
    assert not subscription.active and "was deactivated" in subscription.disabled_reason
    assert not Thread.objects.exists()
    listing = admin_client.get("/admin/agents_app/schedule/").content.decode()
    assert "was deactivated" in listing
    # The hand-over: the trigger now acts as ann.
    trigger = Trigger.objects.get()
    handed = admin_client.post(
        f"/admin/agents_app/trigger/{trigger.pk}/change/",
        {"name": "", "template": "x", "secret_env": "", "owner": ann.pk},
    )
    assert handed.status_code == 302, handed.context["adminform"].form.errors
    fired = ApiClient().post(path, "{}", content_type="application/json")
    assert fired.status_code == 202, fired.content
    assert Thread.objects.get(pk=fired.json()["threadId"]).owner_id == ann.pk


# --- frequency, limits and encrypted env ----------------------------------------------------------


@pytest.mark.parametrize(
    "timing",
    [
        {"intervalSeconds": 1},
        {"intervalSeconds": 59},
        {"intervalSeconds": 10**12},
        {"cron": "* * * * * *"},  # every second (six fields: seconds first)
        {"cron": "*/10 * * * * *"},
        {"cron": "0,30 * * * * *"},
    ],
)
def test_a_schedule_more_frequent_than_the_minimum_is_refused(timing: dict[str, Any]) -> None:
    define_agent("helper")
    client = client_for(_ann())
    for path in ("/api/schedules/preview", "/api/schedules"):
        body = {"agent": "helper", "message": "hi", **timing}
        answer = client.post_json(path, body)
        assert answer.status_code == 400, (path, answer.content)
        assert "every 1 min" in answer.json()["error"] or "from 60" in answer.json()["error"]
    assert not Schedule.objects.exists()
    assert client.post_json("/api/schedules/preview", {"cron": "* * * * *"}).status_code == 200


def test_the_studio_answers_a_bad_timing_with_a_sentence(admin_client: Any) -> None:
    define_agent("helper")
    form = {
        "name": "",
        "agent": Agent.objects.get(name="helper").pk,
        "message": "hi",
        "cron": "",
        "timezone": "UTC",
        "interval_seconds": str(10**12),
        "target": "new_thread",
        "catch_up": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    for timing in ({"interval_seconds": str(10**12)}, {"interval_seconds": "", "cron": "* * *"}):
        page = admin_client.post("/admin/agents_app/schedule/add/", {**form, **timing})
        assert page.status_code == 200
        assert page.context["adminform"].form.errors, page.content.decode()[-2000:]
    assert not Schedule.objects.exists()


def test_a_schedule_run_counts_its_owners_usage_limits() -> None:
    """carol may start no thread: her schedule's run fails with the limit's sentence."""
    define_agent("helper")
    carol = _ann()
    UsageLimit.objects.create(user=carol, action="thread_create", limit=0, period=60)
    row = schedules.schedule_create(
        owner=carol, agent_name="helper", message="hi", interval_seconds=3600
    )
    Schedule.objects.filter(pk=row.pk).update(next_run_at=datetime.now(UTC))
    schedule_runner.sweep_once("sweeper")
    run = ScheduleRun.objects.get()
    assert run.status == "failed" and "Too many new threads" in run.error
    assert not Thread.objects.exists()


def test_a_schedules_env_values_are_stored_encrypted() -> None:
    """The planted value is in no column of the schedule's row; the run's thread gets it."""
    from agents_app.models import EnvValue

    define_agent("helper")
    planted = "planted-secret-value-7f3a"
    row = schedules.schedule_create(
        owner=_ann(),
        agent_name="helper",
        message="hi",
        interval_seconds=3600,
        env={"REPORT_TOKEN": planted},
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Schedule._meta.db_table} WHERE id = %s", [row.pk])
        stored = " ".join(str(v) for v in cursor.fetchone())
    assert planted not in stored and "REPORT_TOKEN" in stored and "v1:" in stored
    assert schedules.schedule_wire(row)["envNames"] == ["REPORT_TOKEN"]
    Schedule.objects.filter(pk=row.pk).update(next_run_at=datetime.now(UTC))
    schedule_runner.sweep_once("sweeper")
    thread = ScheduleRun.objects.get().thread
    assert EnvValue.objects.get(thread=thread, key="REPORT_TOKEN").value == planted


def test_the_migration_encrypts_the_env_values_of_existing_schedules() -> None:
    """A schedule saved before the migration kept its env in clear: migrating forward seals
    it, and back opens it again."""
    from django.core.management import call_command

    define_agent("helper")
    owner = _ann()
    agent_id = Agent.objects.get(name="helper").pk  # read with today's model, before going back
    call_command("migrate", "agents_app", "0019", verbosity=0)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {Schedule._meta.db_table} (id, name, cron, timezone, "
                "interval_seconds, message, env, attachments, target, paused, catch_up, "
                "next_run_at, created_at, updated_at, agent_id, owner_id) VALUES "
                "(%s, '', '', 'UTC', 3600, 'hi', %s, '[]', 'new_thread', false, 0, NULL, "
                "%s, %s, %s, %s)",
                [
                    "7b0c4bd0-9a47-4a44-9d33-8d4c1b0a0001",
                    json.dumps({"OLD_TOKEN": "old-planted-value"}),
                    datetime.now(UTC),
                    datetime.now(UTC),
                    agent_id,
                    owner.pk,
                ],
            )
    finally:
        call_command("migrate", "agents_app", verbosity=0)
    row = Schedule.objects.get()
    assert row.env == {"OLD_TOKEN": "old-planted-value"} and row.env_names == ["OLD_TOKEN"]
    assert "old-planted-value" not in row.env_ciphertext


def test_a_migrated_subscription_without_owner_goes_to_the_first_superuser() -> None:
    """Subscriptions had no owner; the migration gives them one (or turns them off)."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("agents_app.migrations.0020_owner_rule")
    define_agent("helper")
    admin = User.objects.create_superuser("root", password="pw-for-tests-1")
    orphan = WebhookSubscription.objects.create(
        url="https://x.example/h", secret_env="S", events=["session.failed"]
    )
    migration.own_subscriptions(apps, None)
    orphan.refresh_from_db()
    assert orphan.owner_id == admin.pk and orphan.active
