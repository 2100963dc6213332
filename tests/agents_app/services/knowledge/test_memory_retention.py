"""Memories under retention and export (issue #59; docs/knowledge.md, "Memory"): retention's
rules are per kind of row (threads, logs, effects, log bodies), none per person or per value,
so a memory outlives the expired thread it was told in; the person reads (exports) their
memories with their other account-wide values, never someone else's; they go with the
account."""

from __future__ import annotations

import time
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


@pytest.mark.django_db
def test_issue59_the_memory_period_forgets_memories_not_told_again_and_nothing_else(
    settings: Any, alice: Any, bob: Any
) -> None:
    """``memory_days`` (the studio's retention page, ``STUDIO_RETENTION_MEMORY_DAYS``): a
    memory not changed for that long is forgotten, for every person; one told again (a
    recent ``updated_at``) stays, and the account's other values are not memories."""
    [thread] = make_threads(make_agent(), 1, idle_days=0)
    _memory(alice, "old", FACT, thread)  # updated_at 1 ms after the epoch
    _memory(bob, "old", BOBS, thread)
    recent = "Alice moved to Leeds."
    _memory(alice, "new", recent, thread)
    UserValue.objects.filter(key="memory/new").update(updated_at=int(time.time() * 1000))
    UserValue.objects.create(user=alice, key="settings/theme", value="dark", updated_at=1)

    settings.STUDIO_RETENTION_MEMORY_DAYS = 0  # the default: kept until forgotten
    retention_apply()
    assert UserValue.objects.filter(key__startswith="memory/").count() == 3

    settings.STUDIO_RETENTION_MEMORY_DAYS = 30
    dry = retention_apply(dry_run=True)
    assert dry.deleted == {"agents_app.UserValue": 2}, dry.lines()
    report = retention_apply()
    assert "deleted 2 agents_app.UserValue" in report.lines(), report.lines()
    assert [m.text for m in memories_of(user_id=alice.pk)] == [recent]
    assert memories_of(user_id=bob.pk) == []
    assert UserValue.objects.filter(key="settings/theme").exists()
