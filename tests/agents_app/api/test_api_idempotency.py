"""``Idempotency-Key`` on message posts: a retry never duplicates a message.

The key is stored with the message in one transaction, per user and thread; a repeated key
gets the first answer (``Idempotent-Replayed: true``) and writes nothing; the same key with
another body is a 422; concurrent duplicates (real threads, real connections) store once.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.db import connection

from agents_app.models import IdempotencyKey, QueuedMessage, ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import client_for

pytestmark = pytest.mark.django_db


def _post(client: Any, thread: Any, key: str | None, content: str = "hello") -> Any:
    headers = {"Idempotency-Key": key} if key is not None else {}
    return client.post_json(
        f"/api/threads/{thread.pk}/messages", {"content": content}, headers=headers
    )


def test_repeated_idempotency_key_replays_the_first_answer_and_stores_once(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    key = str(uuid.uuid4())
    first = _post(as_(alice), thread, key)
    again = _post(as_(alice), thread, key)
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert QueuedMessage.objects.filter(thread=thread).count() == 1
    assert ThreadSession.objects.filter(thread=thread).count() == 1


def test_idempotency_key_reused_with_another_body_is_a_422_json_error(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    key = str(uuid.uuid4())
    assert _post(as_(alice), thread, key, "one").status_code == 202
    other = _post(as_(alice), thread, key, "two")
    assert other.status_code == 422
    assert "different request body" in other.json()["error"]
    assert list(QueuedMessage.objects.filter(thread=thread).values_list("content", flat=True)) == [
        "one"
    ]


def test_idempotency_keys_are_scoped_per_user_and_thread(
    as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    key = "same-key"
    mine, other_thread, bobs = thread_of(alice), thread_of(alice), thread_of(bob)
    for client, thread in ((as_(alice), mine), (as_(alice), other_thread), (as_(bob), bobs)):
        assert _post(client, thread, key).status_code == 202
    assert QueuedMessage.objects.filter(thread__in=[mine, other_thread, bobs]).count() == 3
    assert IdempotencyKey.objects.filter(key=key).count() == 3


def test_posts_without_a_key_are_not_deduplicated(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    assert _post(as_(alice), thread, None).status_code == 202
    assert _post(as_(alice), thread, None).status_code == 202
    assert QueuedMessage.objects.filter(thread=thread).count() == 2
    assert not IdempotencyKey.objects.exists()


@pytest.mark.parametrize("key", ["", " ", "x" * 256, "caf\u00e9", "a\tb"])
def test_malformed_idempotency_key_is_a_400_json_error(
    as_: Any, alice: Any, thread_of: Any, key: str
) -> None:
    thread = thread_of(alice)
    answer = _post(as_(alice), thread, key)
    assert answer.status_code == 400
    assert "Idempotency-Key" in answer.json()["error"]
    assert not QueuedMessage.objects.filter(thread=thread).exists()


def test_a_failed_write_keeps_no_key_so_a_corrected_retry_is_stored(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    key = str(uuid.uuid4())
    assert _post(as_(alice), thread, key, content="   ").status_code == 400
    assert not IdempotencyKey.objects.exists()
    assert _post(as_(alice), thread, key, content="fixed").status_code == 202


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_with_one_key_store_one_message(
    alice: Any, thread_of: Any, as_: Any
) -> None:
    thread = thread_of(alice)
    key = str(uuid.uuid4())
    answers: list[Any] = []
    start = threading.Barrier(8)

    def post() -> None:
        client = client_for(alice)
        start.wait()
        try:
            answers.append(_post(client, thread, key))
        finally:
            connection.close()

    workers = [threading.Thread(target=post) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [a.status_code for a in answers] == [202] * 8
    assert len({a.json()["messageId"] for a in answers}) == 1
    assert QueuedMessage.objects.filter(thread=thread).count() == 1


def test_idempotency_keys_are_forgotten_after_their_retention(
    as_: Any, alice: Any, thread_of: Any, settings: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.services.threads.idempotency import idempotency_keys_purge

    settings.STUDIO_IDEMPOTENCY_KEY_HOURS = 24
    thread = thread_of(alice)
    assert _post(as_(alice), thread, "old").status_code == 202
    assert _post(as_(alice), thread, "new").status_code == 202
    IdempotencyKey.objects.filter(key="old").update(created_at=timezone.now() - timedelta(hours=25))
    assert idempotency_keys_purge() == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]


# --- thread creation ---------------------------------------------------------------------------


def _create(client: Any, agent: str, key: str, **body: Any) -> Any:
    return client.post_json(
        "/api/threads", {"agent_id": agent, **body}, headers={"Idempotency-Key": key}
    )


def test_thread_creation_with_a_repeated_key_creates_one_thread(
    as_: Any, alice: Any, agent: str
) -> None:
    from agents_app.models import Thread

    first = _create(as_(alice), agent, "create-1", tags=["x"])
    again = _create(as_(alice), agent, "create-1", tags=["x"])
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert Thread.objects.filter(owner=alice).count() == 1
    other = _create(as_(alice), agent, "create-1", tags=["y"])
    assert other.status_code == 422 and "different request body" in other.json()["error"]


def test_thread_creation_key_in_progress_is_a_409_and_a_stale_one_is_taken_over(
    as_: Any, alice: Any, agent: str
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.api.threads import ThreadIn
    from agents_app.models import Thread
    from agents_app.services.threads.idempotency import PENDING, idempotency_request

    request = idempotency_request(alice, "create-2", ThreadIn(agent_id=agent).model_dump())
    assert request is not None
    IdempotencyKey.objects.create(
        user=alice,
        key="create-2",
        operation="thread_create",
        fingerprint=request.fingerprint,
        status_code=PENDING,
        response={},
    )
    busy = _create(as_(alice), agent, "create-2")
    assert busy.status_code == 409 and "in progress" in busy.json()["error"]
    IdempotencyKey.objects.filter(key="create-2").update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    taken = _create(as_(alice), agent, "create-2")
    assert taken.status_code == 200, taken.content
    assert Thread.objects.filter(owner=alice).count() == 1
    assert _create(as_(alice), agent, "create-2").json() == taken.json()


def test_failed_thread_creation_releases_its_key(as_: Any, alice: Any, agent: str) -> None:
    missing = _create(as_(alice), "no-such-agent", "create-3")
    assert missing.status_code == 404
    assert not IdempotencyKey.objects.filter(key="create-3").exists()
    assert _create(as_(alice), agent, "create-3").status_code == 200
