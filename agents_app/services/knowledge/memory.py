"""Long-term memory per person (docs/knowledge.md, "Memory").

A prompt listing ``memory:person`` gives its model ``remember``, ``recall`` and ``forget``
(``runtime/tools/memory_tools.py``); each memory is one of the thread owner's account-wide
values (``services/threads/user_values.py``) under ``memory/<id>``, so it is that person's
alone, leaves with their account, and is part of whatever covers their values. Here: the
engine's embedder (the local model) and what the person sees and deletes in the chat
("What the agents remember about you").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import sync_to_async

from agents_app.models import UserValue
from agents_app.services.knowledge.embedding import embed_passages, embed_query
from runtime.knowledge.memory_names import MEMORY_KEY_PREFIX

SHOWN_MAX = 500


@dataclass(frozen=True)
class Memory:
    """One memory as the person sees it."""

    id: str
    text: str
    updated_at: int  # ms


def _embed(text: str, kind: Literal["passage", "query"]) -> list[float]:
    vector = embed_passages([text])[0] if kind == "passage" else embed_query(text)
    return [float(x) for x in vector]


class LocalMemoryEmbedder:
    """``MemoryEmbedder`` over the local model (off the shared sync thread: embedding takes a
    CPU's tenth of a second or more, and the session's ORM calls wait behind that thread)."""

    async def embed(self, text: str, kind: Literal["passage", "query"]) -> list[float]:
        return await sync_to_async(_embed, thread_sensitive=False)(text, kind)


def _text(value: Any) -> str:
    return str(value.get("text", "")) if isinstance(value, dict) else str(value)


def memories_of(*, user_id: Any) -> list[Memory]:
    """The person's memories, newest first (the shown form: secrets redacted)."""
    rows = (
        UserValue.objects.filter(user_id=user_id, key__startswith=MEMORY_KEY_PREFIX)
        .order_by("-updated_at", "key")
        .values_list("key", "value", "updated_at")[:SHOWN_MAX]
    )
    return [Memory(key[len(MEMORY_KEY_PREFIX) :], _text(value), at) for key, value, at in rows]


def memory_forget(*, user_id: Any, memory_id: str) -> bool:
    """Delete one of the person's memories; False when they have none with that id."""
    deleted, _ = UserValue.objects.filter(
        user_id=user_id, key=MEMORY_KEY_PREFIX + memory_id
    ).delete()
    return deleted > 0


def memories_forget_all(*, user_id: Any) -> int:
    """Delete every memory of the person; how many there were."""
    deleted, _ = UserValue.objects.filter(
        user_id=user_id, key__startswith=MEMORY_KEY_PREFIX
    ).delete()
    return deleted
