"""Search over threads by what a person remembers of them: the agent, a title, words said.

A plain ``icontains`` on every database we run (PostgreSQL, SQLite): the chat page searches
one user's threads, a set small enough that a scan of their messages is cheap, so no
full-text index is kept for it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery

from agents_app.models import Message, Thread

MAX_TERM = 200
SNIPPET = 120  # characters, about the thread list's two-line preview
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


def match_snippets(thread_ids: list[Any], term: str) -> dict[Any, str]:
    """For each thread, the newest message containing ``term``, cut around the match (one
    query), so the list can show why a thread was found."""
    term = term.strip()[:MAX_TERM]
    if not term or not thread_ids:
        return {}
    newest_hit = (
        Message.objects.filter(thread=OuterRef("pk"), content__icontains=term)
        .order_by("-created_at")
        .values("content")[:1]
    )
    rows = (
        Thread.objects.filter(pk__in=thread_ids)
        .annotate(hit=Subquery(newest_hit))
        .values_list("pk", "hit")
    )
    return {pk: snippet(hit, term) for pk, hit in rows if hit}


def snippet(text: str, term: str) -> str:
    """About ``SNIPPET`` characters of ``text`` around the first ``term``, with ellipses."""
    flat = " ".join(text.split())
    at = flat.lower().find(term.lower())
    start = max(0, min(at - SNIPPET // 3, len(flat) - SNIPPET)) if at >= 0 else 0
    cut = flat[start : start + SNIPPET]
    return f"{'…' if start else ''}{cut}{'…' if start + SNIPPET < len(flat) else ''}"
