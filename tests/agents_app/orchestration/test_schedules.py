"""Recurring schedules: due times, claims (one run per due time whatever races), catch-up,
starting runs (docs/automation.md, "Schedules")."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from agents_app.models import Message, QueuedMessage, Schedule, ScheduleRun, Thread
from agents_app.orchestration import schedule_runner
from agents_app.services.automation import schedules
from agents_app.services.automation.schedules import ScheduleSpec
from tests.agents_app.api.api_support import _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def _schedule(user: Any, **kw: Any) -> Schedule:
    define_agent("helper", [{"content": "report sent"}] * 20)
    fields = {"interval_seconds": 60, "message": "Send the daily report", **kw}
    return schedules.schedule_create(owner=user, agent_name="helper", **fields)


def _due_now(row: Schedule, ago: timedelta = timedelta(0)) -> datetime:
    due = datetime.now(UTC) - ago
    Schedule.objects.filter(pk=row.pk).update(next_run_at=due)
    return due


def test_cron_times_follow_the_zone_across_a_dst_gap() -> None:
    spec = ScheduleSpec("30 2 * * *", "Europe/Berlin", None)
    start = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
    times = schedules.next_times(spec, 3, after=start)
    # 02:30 does not exist on 29 March in Berlin: cronsim runs it once at 03:00 local.
    assert [t.isoformat() for t in times] == [
        "2026-03-28T01:30:00+00:00",
        "2026-03-29T01:00:00+00:00",
        "2026-03-30T00:30:00+00:00",
    ]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"cron": "* * *"}, "cron:"),
        ({"cron": "0 9 * * *", "tz": "Mars/Olympus"}, "unknown time zone"),
        ({"cron": "0 9 * * *", "interval_seconds": 5}, "either cron"),
        ({"interval_seconds": 0}, "from 60"),
    ],
)
def test_a_bad_schedule_is_refused_at_save(alice: Any, fields: dict[str, Any], error: str) -> None:
    define_agent("helper")
    with pytest.raises(Exception, match=error):
        schedules.schedule_create(
            owner=alice, agent_name="helper", message="hi", **{"interval_seconds": None, **fields}
        )
    assert not Schedule.objects.exists()


def test_two_claimers_of_one_due_time_make_one_run(alice: Any) -> None:
    row = _schedule(alice)
    due = _due_now(row)
    now = datetime.now(UTC)
    barrier = threading.Barrier(2)
    results: dict[str, list[ScheduleRun]] = {}

    def claim(me: str) -> None:
        try:
            barrier.wait()
            results[me] = schedules.schedule_claim(row.pk, due, now, me)
        finally:
            connection.close()

    workers = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(len(runs) for runs in results.values()) == [0, 1]
    assert list(ScheduleRun.objects.values_list("due_at", flat=True)) == [due]
    assert Schedule.objects.get(pk=row.pk).next_run_at == due + timedelta(seconds=60)
    # A claimer that read the old due time later finds nothing either.
    assert schedules.schedule_claim(row.pk, due, now, "w3") == []


def test_after_an_outage_only_the_latest_due_time_runs_unless_catch_up_says(alice: Any) -> None:
    quiet = _schedule(alice)
    _due_now(quiet, timedelta(seconds=10 * 60 + 5))  # 11 due times were missed
    catching = _schedule(alice, catch_up=3)
    _due_now(catching, timedelta(seconds=10 * 60 + 5))
    schedule_runner.sweep_once("me")
    assert quiet.runs.count() == 1 and quiet.runs.get().skipped == 10
    assert catching.runs.count() == 4
    assert sorted(r.skipped for r in catching.runs.all()) == [0, 0, 0, 7]
    for row in (quiet, catching):
        assert Schedule.objects.get(pk=row.pk).next_run_at > datetime.now(UTC)


def test_a_run_starts_a_thread_with_the_message_and_links_it(alice: Any) -> None:
    row = _schedule(alice, env={"REGION": "eu"})
    _due_now(row)
    assert schedule_runner.sweep_once("me") == 1
    run = row.runs.get()
    assert run.status == "started" and run.thread is not None
    queued = QueuedMessage.objects.filter(thread=run.thread).values_list("content", flat=True)
    stored = Message.objects.filter(thread=run.thread).values_list("content", flat=True)
    assert [*queued, *stored] == ["Send the daily report"]
    assert run.thread.owner_id == alice.pk and run.thread.agent.name == "helper"


def test_a_standing_thread_gets_every_run(alice: Any) -> None:
    row = _schedule(alice, target="standing_thread")
    _due_now(row)
    schedule_runner.sweep_once("me")
    _due_now(row)
    schedule_runner.sweep_once("me")
    threads = set(row.runs.values_list("thread", flat=True))
    assert len(threads) == 1
    assert Schedule.objects.get(pk=row.pk).standing_thread_id in threads


def test_a_claim_whose_worker_died_is_started_once_by_another(alice: Any, settings: Any) -> None:
    settings.STUDIO_SCHEDULE_STALE_SECONDS = 0
    row = _schedule(alice)
    due = _due_now(row)
    [run] = schedules.schedule_claim(row.pk, due, datetime.now(UTC), "dead")
    # The dead claimer had created the thread (tagged with the run) but not posted.
    schedule_runner.thread_create(user=alice, agent_name="helper", tags=[schedules.run_tag(run)])
    assert schedule_runner.sweep_once("alive") == 1
    run.refresh_from_db()
    assert run.status == "started" and run.claimed_by == "alive"
    assert Thread.objects.count() == 1  # the orphan was reused, not duplicated
    # The dead worker coming back cannot start it again.
    assert schedules.run_start(run, "dead", run.thread) is False
    assert schedule_runner.sweep_once("alive") == 0


def test_a_paused_schedule_is_not_claimed_and_resumes_from_now(alice: Any) -> None:
    row = _schedule(alice)
    _due_now(row, timedelta(hours=1))
    schedules.schedule_pause(row, True)
    assert schedule_runner.sweep_once("me") == 0
    resumed = schedules.schedule_pause(row, False)
    assert resumed.next_run_at > datetime.now(UTC)
    assert schedule_runner.sweep_once("me") == 0 and not ScheduleRun.objects.exists()


def test_the_api_creates_previews_pauses_runs_now_and_deletes(alice: Any, settings: Any) -> None:
    alice.is_superuser = True
    alice.save()
    define_agent("helper", [{"content": "done"}])
    client = client_for(alice)
    preview = client.post_json(
        "/api/schedules/preview", {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}
    )
    assert preview.status_code == 200 and len(preview.json()["nextRuns"]) == 5
    bad = client.post_json("/api/schedules", {"agent": "helper", "message": "x", "cron": "nope"})
    assert bad.status_code == 400 and bad.json()["error"].startswith("cron:")
    created = client.post_json(
        "/api/schedules",
        {"agent": "helper", "message": "Daily digest", "cron": "0 9 * * *", "timezone": "UTC"},
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["nextRunAt"] == body["nextRuns"][0] and len(body["nextRuns"]) == 5
    url = f"/api/schedules/{body['id']}"
    assert client.post_json(f"{url}/pause").json()["nextRunAt"] is None
    assert client.post_json(f"{url}/resume").json()["paused"] is False
    ran = client.post_json(f"{url}/run").json()
    assert ran["status"] == "started" and ran["manual"] is True
    thread = client.get(f"/api/threads/{ran['threadId']}/messages").json()
    assert [m["content"] for m in thread["messages"]] == ["Daily digest"]
    runs = client.get(url).json()["runs"]
    assert [r["threadId"] for r in runs] == [ran["threadId"]]
    assert [s["id"] for s in client.get("/api/schedules").json()["schedules"]] == [body["id"]]
    assert client.delete(url).json() == {"deleted": True, "id": body["id"]}
    assert client.get(url).status_code == 404


def test_the_studio_shows_the_next_five_runs_before_saving(admin_client: Any) -> None:
    define_agent("helper")
    from agents_app.models import Agent

    form = {
        "name": "weekday digest",
        "agent": Agent.objects.get(name="helper").pk,
        "message": "Digest please",
        "cron": "0 9 * * 1-5",
        "timezone": "Europe/Paris",
        "interval_seconds": "",
        "target": "new_thread",
        "catch_up": "0",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    first = admin_client.post("/admin/agents_app/schedule/add/", form)
    assert first.status_code == 200 and not Schedule.objects.exists()
    page = first.content.decode()
    assert page.count("09:00</li>") == 5 and "save again" in page
    previewed = first.context["adminform"].form.data["previewed"]
    saved = admin_client.post("/admin/agents_app/schedule/add/", {**form, "previewed": previewed})
    assert saved.status_code == 302, saved.content.decode()[-2000:]
    row = Schedule.objects.get()
    assert row.next_run_at is not None and row.next_run_at.astimezone(UTC).hour in (7, 8)
    change = admin_client.get(f"/admin/agents_app/schedule/{row.pk}/change/")
    assert change.status_code == 200 and "Next five runs" in change.content.decode()


def test_a_run_carries_the_schedules_attachments_and_env(alice: Any) -> None:
    import base64

    from agents_app.models import ThreadFile, ThreadValue  # noqa: F401

    report = b"date,total\n2026-11-28,42\n"
    row = _schedule(
        alice,
        env={"REGION": "eu"},
        attachments=[
            {
                "name": "report.csv",
                "mimeType": "text/csv",
                "data": base64.b64encode(report).decode(),
            }
        ],
    )
    wire = schedules.schedule_wire(row)
    assert wire["attachments"] == [{"name": "report.csv", "mimeType": "text/csv"}]
    assert "data" not in str(wire["attachments"])
    _due_now(row)
    assert schedule_runner.sweep_once("me") == 1
    run = row.runs.get()
    queued = QueuedMessage.objects.filter(thread=run.thread).first()
    stored = Message.objects.filter(thread=run.thread, role="user").first()
    message = queued or stored
    assert message is not None and [a["name"] for a in message.attachments] == ["report.csv"]
    files = ThreadFile.objects.filter(thread=run.thread, is_directory=False)
    assert [f.mime_type for f in files] == ["text/csv"]
    with files[0].blob.open("rb") as blob:
        assert blob.read() == report


@pytest.mark.parametrize(
    ("attachments", "error"),
    [
        ([{"name": "a.txt", "data": "not base64!"}], "attachments.0.data: not valid base64"),
        ([{"name": "", "data": "aGk="}], "attachments.0.name"),
        ([{"name": f"{i}.txt", "data": "aGk="} for i in range(11)], "at most 10 files"),
    ],
)
def test_bad_schedule_attachments_are_refused_naming_the_item(
    alice: Any, attachments: list[dict[str, Any]], error: str
) -> None:
    from agents_app.base.errors import Invalid

    with pytest.raises(Invalid, match=error):
        _schedule(alice, attachments=attachments)
    assert not Schedule.objects.exists()


def test_the_studio_attaches_files_and_sets_env_without_showing_values(admin_client: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from agents_app.models import Agent

    define_agent("helper")
    form = {
        "name": "with files",
        "agent": Agent.objects.get(name="helper").pk,
        "message": "Read the file",
        "cron": "",
        "timezone": "UTC",
        "interval_seconds": "3600",
        "target": "new_thread",
        "catch_up": "0",
        "env_lines": "REPORT_TOKEN=planted-secret-value",
        "runs-TOTAL_FORMS": "0",
        "runs-INITIAL_FORMS": "0",
    }
    first = admin_client.post("/admin/agents_app/schedule/add/", form)
    previewed = first.context["adminform"].form.data["previewed"]
    upload = SimpleUploadedFile("notes.txt", b"hello", content_type="text/plain")
    saved = admin_client.post(
        "/admin/agents_app/schedule/add/", {**form, "previewed": previewed, "upload": upload}
    )
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    row = Schedule.objects.get()
    assert [a["name"] for a in row.attachments] == ["notes.txt"]
    assert row.env == {"REPORT_TOKEN": "planted-secret-value"}
    page = admin_client.get(f"/admin/agents_app/schedule/{row.pk}/change/").content.decode()
    assert "notes.txt" in page and "REPORT_TOKEN" in page
    assert "planted-secret-value" not in page
