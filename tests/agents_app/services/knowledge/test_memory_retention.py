"""Memories under retention and export (issue #59; docs/knowledge.md, "Memory"): retention's
rules are per kind of row (threads, logs, effects, log bodies), none per person or per value,
so a memory outlives the expired thread it was told in; the person reads (exports) their
memories with their other account-wide values, never someone else's; they go with the
account."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.models import Thread, UserValue
from agents_app.services.knowledge.memory import memories_of
from agents_app.services.operations.retention import retention_apply
from tests.agents_app.api.api_support import _api_hosts, as_  # noqa: F401
from tests.agents_app.services.retention_support import make_agent, make_threads

FACT = "Alice's bicycle is a green Brompton called Kermit."
BOBS = "Bob takes his coffee black."


def _memory(user: Any, key: str, text: str, thread: Thread) -> None:
    UserValue.objects.create(
        user=user,
        key=f"memory/{key}",
        value={"text": text, "vector": "", "thread": str(thread.pk)},
        updated_at=1,
    )


@pytest.mark.django_db
def test_issue59_memories_outlive_thread_retention_are_exported_per_person_and_go_with_the_account(
    settings: Any,
    alice: Any,
    bob: Any,
    as_: Any,  # noqa: F811
) -> None:
    settings.STUDIO_RETENTION_THREAD_DAYS = 30
    [old] = make_threads(make_agent(), 1, idle_days=90)
    Thread.objects.filter(pk=old.pk).update(owner=alice)
    _memory(alice, "m1", FACT, old)
    _memory(bob, "m2", BOBS, old)

    report = retention_apply()
    assert not Thread.objects.filter(pk=old.pk).exists(), report.lines()
    assert [m.text for m in memories_of(user_id=alice.pk)] == [FACT]

    exported = as_(alice).get("/api/users/me/kv?prefix=memory/")
    assert exported.status_code == 200, exported.content
    text = exported.content.decode()
    assert FACT in text and BOBS not in text

    alice_id = alice.pk
    alice.delete()
    assert not UserValue.objects.filter(user_id=alice_id).exists()
    assert [m.text for m in memories_of(user_id=bob.pk)] == [BOBS]
