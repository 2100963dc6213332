"""Feedback on replies: a person rates an assistant reply (👍 / 👎, an optional reason from
the agent's list, free text), changes or withdraws it; one rating per person and reply.

Each rating keeps the agent and the definition versions that produced the reply (from the
reply's request log), so the studio can compare versions after the definitions move on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from agents_app.base.errors import Invalid, NotFound
from agents_app.base.spreadsheets import csv_text
from agents_app.base.storable_text import find_unstorable
from agents_app.models import Agent, Feedback, Log, Message, Thread
from agents_app.services.env.redaction import RedactorCache

COMMENT_MAX = 2000


@dataclass(frozen=True)
class Rating:
    score: int
    reason: str = ""
    comment: str = ""


def _check(rating: Rating, agent: Agent | None) -> None:
    if rating.score not in (1, -1):
        raise Invalid("score must be 1 (thumbs up) or -1 (thumbs down)")
    if len(rating.comment) > COMMENT_MAX:
        raise Invalid(f"comment is longer than {COMMENT_MAX} characters")
    if find_unstorable(rating.comment) or find_unstorable(rating.reason):
        raise Invalid("reason and comment must be plain text (no NUL or lone surrogates)")
    reasons = list(agent.feedback_reasons) if agent else []
    if rating.reason and rating.reason not in reasons:
        offered = ", ".join(repr(r) for r in reasons) or "none (this agent lists no reasons)"
        raise Invalid(f"reason must be one of the agent's feedback reasons: {offered}")


def _reply(thread: Thread, message_id: str) -> Message:
    try:
        row = Message.objects.filter(thread=thread, pk=message_id).first()
    except (ValueError, TypeError):
        row = None
    if row is None:
        raise NotFound(f"Message not found: {message_id}")
    if row.role != Message.Role.ASSISTANT:
        raise Invalid("Only assistant replies can be rated")
    return row


def _versions(reply: Message) -> dict[str, Any]:
    if reply.log_id is None:
        return {}
    versions = Log.objects.filter(pk=reply.log_id).values_list("definition_versions", flat=True)
    return dict(versions.first() or {})


def feedback_set(*, thread: Thread, message_id: str, user: Any, rating: Rating) -> Feedback:
    """Rate the reply ``message_id`` as ``user``: a second call replaces the first."""
    reply = _reply(thread, message_id)
    agent = Agent.objects.filter(pk=thread.agent_id).first()
    _check(rating, agent)
    row, _ = Feedback.objects.update_or_create(
        message=reply,
        user=user,
        defaults={
            "agent": agent,
            "score": rating.score,
            "reason": rating.reason,
            "comment": rating.comment,
            "definition_versions": _versions(reply),
        },
    )
    return row


def feedback_withdraw(*, thread: Thread, message_id: str, user: Any) -> bool:
    """Withdraw ``user``'s rating of the reply; False when there was none."""
    reply = _reply(thread, message_id)
    deleted, _ = Feedback.objects.filter(message=reply, user=user).delete()
    return deleted > 0


def feedback_wire(row: Feedback | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {"score": row.score, "reason": row.reason or None, "comment": row.comment or None}


def attach_to_page(page: list[dict[str, Any]], user: Any) -> None:
    """Put ``user``'s own rating in each assistant message of a messages page (``feedback``:
    the rating or null). One query, and none for a page without replies."""
    replies = [m for m in page if m.get("role") == "assistant"]
    if not replies:
        return
    mine = {
        str(row.message_id): row
        for row in Feedback.objects.filter(
            user=user, message_id__in=[m["id"] for m in replies]
        ).only("message_id", "score", "reason", "comment")
    }
    for message in replies:
        message["feedback"] = feedback_wire(mine.get(str(message["id"])))


# --- the studio's views ----------------------------------------------------------------


def feedback_rows(
    *, agent: str | None = None, score: int | None = None, version: str | None = None
) -> QuerySet[Feedback]:
    """Ratings, newest first, filtered by agent name, score and agent version number."""
    qs = Feedback.objects.select_related("agent", "user", "message").order_by("-created_at")
    if agent:
        qs = qs.filter(agent__name=agent)
    if score in (1, -1):
        qs = qs.filter(score=score)
    if agent and version:
        qs = qs.filter(**{f"definition_versions__agents/{agent}": int(version)})
    return qs


def summary_by_version() -> list[dict[str, Any]]:
    """Per agent and agent version: 👍, 👎 and the share of 👍 (the dashboard's table)."""
    table: dict[tuple[str, Any], dict[str, Any]] = {}
    rows = Feedback.objects.values("agent__name", "definition_versions", "score")
    for row in rows:
        name = row["agent__name"] or "(deleted agent)"
        version = (row["definition_versions"] or {}).get(f"agents/{name}")
        entry = table.setdefault(
            (name, version), {"agent": name, "version": version, "up": 0, "down": 0}
        )
        entry["up" if row["score"] == 1 else "down"] += 1
    out = sorted(table.values(), key=lambda e: (e["agent"], e["version"] or 0))
    for entry in out:
        entry["share_up"] = entry["up"] / (entry["up"] + entry["down"])
    return out


def counts() -> dict[str, int]:
    agg = Feedback.objects.aggregate(
        up=Count("pk", filter=Q(score=1)), down=Count("pk", filter=Q(score=-1))
    )
    return {"up": agg["up"], "down": agg["down"]}


CSV_COLUMNS = [
    "created_at",
    "agent",
    "agent_version",
    "thread_id",
    "message_id",
    "user",
    "score",
    "reason",
    "comment",
    "reply",
]


def as_csv(rows: Iterable[Feedback]) -> str:
    """The rows as CSV (``csv_text``), the reply's text and the comment passed through their
    thread's redactor (a secret a tool echoed into a reply is exported as ``[REDACTED:NAME]``)."""
    redactors = RedactorCache()

    def line(row: Feedback) -> list[Any]:
        thread_id = str(row.message.thread_id)
        redact = redactors.get(thread_id).text
        name = row.agent.name if row.agent else ""
        return [
            row.created_at.isoformat(timespec="seconds"),
            name,
            (row.definition_versions or {}).get(f"agents/{name}", ""),
            thread_id,
            row.message_id,
            row.user.get_username(),
            row.score,
            row.reason,
            redact(row.comment),
            redact(row.message.content or ""),
        ]

    return csv_text(CSV_COLUMNS, (line(row) for row in rows))


# OWASP's "CSV injection" list: a spreadsheet runs a cell that starts with one of these.
