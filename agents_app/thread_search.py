"""Search over threads by what a person remembers of them: the agent, a title, words said.

A plain ``icontains`` on every database we run (PostgreSQL, SQLite): the chat page searches
one user's threads, a set small enough that a scan of their messages is cheap, so no
full-text index is kept for it.
"""

from __future__ import annotations

from typing import TypeVar

from django.db.models import Exists, OuterRef, Q, QuerySet

from agents_app.models import Message, Thread

MAX_TERM = 200
Threads = TypeVar("Threads", bound=QuerySet[Thread])  # annotated querysets keep their type


def threads_matching(threads: Threads, term: str) -> Threads:
    """``threads`` whose title, agent, last message preview or any message text contains
    ``term`` (case-insensitive); all of them when ``term`` is blank."""
    term = term.strip()[:MAX_TERM]
    if not term:
        return threads
    said = Message.objects.filter(thread=OuterRef("pk"), content__icontains=term)
    return threads.filter(
        Q(display_name__icontains=term)
        | Q(agent__title__icontains=term)
        | Q(agent__name__icontains=term)
        | Q(last_message_preview__icontains=term)
        | Exists(said)
    )
