"""Claiming a session and deciding what it starts with: each one fixed statement (issue #21),
with the rules the ORM version had (``agents_app/services/sessions/lifecycle.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents_app import wire
from agents_app.models import QueuedMessage, Thread, ThreadSession
from agents_app.services.sessions import lifecycle as sessions
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _session(thread: Thread, **fields: Any) -> ThreadSession:
    return ThreadSession.objects.create(thread=thread, **fields)


def test_a_queued_session_is_claimed_once(alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    row = _session(thread, side="b", progress={})
    claim = sessions.session_claim(str(row.pk), "worker-1")
    assert claim is not None
    assert (claim.session_id, claim.thread_id) == (str(row.pk), str(thread.pk))
    assert (claim.owner, claim.side, claim.root_message_id, claim.progress) == (
        "worker-1",
        "b",
        None,
        {},
    )
    # What the start's ``thread_activity`` announcement says of the thread, read with it.
    assert (claim.thread_owner_id, claim.thread_active_at) == (
        str(alice.pk),
        thread.last_activity_at,
    )
    row.refresh_from_db()
    assert (row.status, row.owner) == ("running", "worker-1")
    assert row.started_at is not None and row.heartbeat_at == row.started_at
    assert sessions.session_claim(str(row.pk), "worker-2") is None  # its owner beats


def test_a_session_whose_owner_stopped_beating_is_taken_over_with_its_progress(
    alice: Any, thread_of: Any, settings: Any
) -> None:
    thread = thread_of(alice)
    started = timezone.now() - timedelta(minutes=10)
    stale = timezone.now() - timedelta(seconds=settings.STUDIO_SESSION_STALE_SECONDS + 5)
    root = "6f1c1a52-8a3e-4d0e-9a55-6f0b3f3c9d21"
    row = _session(
        thread,
        status="running",
        owner="dead-worker",
        heartbeat_at=stale,
        started_at=started,
        root_message_id=root,
        progress={"steps": 2},
    )
    claim = sessions.session_claim(str(row.pk), "worker-2")
    assert claim is not None
    assert (claim.owner, claim.root_message_id, claim.progress) == ("worker-2", root, {"steps": 2})
    row.refresh_from_db()
    assert row.owner == "worker-2" and row.heartbeat_at > stale
    assert row.started_at == started  # the session started when it first ran


@pytest.mark.parametrize("status", ["completed", "failed", "stopped", "parked"])
def test_a_session_that_is_not_queued_or_running_is_not_claimed(
    alice: Any, thread_of: Any, status: str
) -> None:
    row = _session(thread_of(alice), status=status)
    assert sessions.session_claim(str(row.pk), "worker-1") is None
    row.refresh_from_db()
    assert (row.status, row.owner) == (status, "")


def test_an_unknown_or_malformed_session_id_claims_nothing() -> None:
    assert sessions.session_claim("6f1c1a52-8a3e-4d0e-9a55-6f0b3f3c9d21", "worker-1") is None
    assert sessions.session_claim("not-a-uuid", "worker-1") is None


def _queue(thread: Thread, content: str, created_at: int, **fields: Any) -> QueuedMessage:
    return QueuedMessage.objects.create(
        thread=thread, content=content, created_at=created_at, **fields
    )


def _queue_head(thread_id: str) -> tuple[bool, Any]:
    read = sessions.session_start_read(thread_id)
    return read.park, read.head


def test_a_session_starts_with_the_oldest_queued_message(alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    assert _queue_head(str(thread.pk)) == (False, None)
    _queue(thread, "second", 2_000)
    first = _queue(
        thread,
        "first",
        1_000,
        silent=True,
        attachments=[{"id": "f1"}],
        metadata={"origin": "test"},
    )
    park, head = _queue_head(str(thread.pk))
    assert park is False and head is not None
    assert (head.id, head.role, head.content, head.silent) == (str(first.pk), "user", "first", True)
    assert (head.attachments, head.metadata) == ([{"id": "f1"}], {"origin": "test"})


def test_a_stopped_thread_parks_its_session_until_a_message_resumes_it(
    alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    Thread.objects.filter(pk=thread.pk).update(stopped=True)
    _queue(thread, "queued before the stop", 1_000)
    assert _queue_head(str(thread.pk)) == (True, None)
    assert Thread.objects.get(pk=thread.pk).stopped
    resumes = _queue(
        thread, "posted after the stop", 2_000, metadata={wire.RESUME_MARK: wire.RESUME_VALUE}
    )
    park, head = _queue_head(str(thread.pk))
    assert park is False and head is not None
    assert head.content == "queued before the stop"  # the queue runs in order once resumed
    assert not Thread.objects.get(pk=thread.pk).stopped
    assert resumes.pk is not None


def test_the_queue_head_of_a_missing_thread_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="Thread not found"):
        _queue_head("6f1c1a52-8a3e-4d0e-9a55-6f0b3f3c9d21")


def _claimed(thread: Thread, owner: str = "worker-1") -> sessions.Claim:
    row = _session(thread)
    claim = sessions.session_claim(str(row.pk), owner)
    assert claim is not None
    return claim


def test_a_release_with_nothing_queued_ends_the_session_and_touches_the_thread(
    alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    before = Thread.objects.get(pk=thread.pk).last_activity_at
    claim = _claimed(thread)
    assert sessions.session_end(claim, status="completed").next is None
    row = ThreadSession.objects.get(pk=claim.session_id)
    assert (row.status, row.error) == ("completed", "") and row.ended_at is not None
    assert Thread.objects.get(pk=thread.pk).last_activity_at > before


def test_a_release_with_queued_work_opens_the_next_session_for_the_same_owner(
    alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    claim = _claimed(thread)
    _queue(thread, "posted meanwhile", 1_000)
    following = sessions.session_end(claim, status="completed").next
    assert following is not None and following.session_id != claim.session_id
    assert (following.thread_id, following.owner) == (str(thread.pk), "worker-1")
    assert ThreadSession.objects.get(pk=following.session_id).status == "running"
    touched = Thread.objects.get(pk=thread.pk).last_activity_at
    assert (following.thread_owner_id, following.thread_active_at) == (str(alice.pk), touched)


def test_a_failed_release_opens_nothing_and_keeps_its_error(alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    claim = _claimed(thread)
    _queue(thread, "posted meanwhile", 1_000)
    assert sessions.session_end(claim, status="failed", error="boom").next is None
    row = ThreadSession.objects.get(pk=claim.session_id)
    assert (row.status, row.error) == ("failed", "boom")
    assert ThreadSession.objects.filter(thread=thread).count() == 1


def test_a_release_by_a_worker_that_lost_the_session_changes_nothing(
    alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    claim = _claimed(thread)
    ThreadSession.objects.filter(pk=claim.session_id).update(owner="worker-2")
    _queue(thread, "posted meanwhile", 1_000)
    assert sessions.session_end(claim, status="completed").next is None
    row = ThreadSession.objects.get(pk=claim.session_id)
    assert (row.status, row.owner, row.ended_at) == ("running", "worker-2", None)
