"""Inbound triggers: tokens, the sender's signature, the message template
(docs/automation.md, "Triggers"). Starting the thread is ``agents_app.orchestration.trigger_fire``."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from typing import Any

from django.db.models import Q
from django.utils import timezone

from agents_app.base.errors import DomainError, Invalid, NotFound
from agents_app.base.storable_text import text_problem
from agents_app.models import Agent, EnvValue, Trigger
from agents_app.selectors import is_offered
from agents_app.services.threads.messages import CONTENT_MAX

REPLAY_WINDOW_SECONDS = 300
# Deeper than any event a sender means to send, shallow enough that walking it (and the
# JSON of a field the template takes) stays far from the recursion limit.
BODY_DEPTH_MAX = 64
_FIELD = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class Unauthorized(DomainError):
    status = 401


class UnsupportedMediaType(DomainError):
    status = 415


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def trigger_create(
    *, owner: Any, agent_name: str, template: str, name: str = "", secret_env: str = ""
) -> tuple[Trigger, str]:
    """A new trigger and its token (shown once: only its hash is kept)."""
    agent = Agent.objects.filter(name=agent_name).first()
    if agent is None or not is_offered(owner, agent.pk):
        # As POST /api/threads: a draft's or another group's agent is not confirmed to exist.
        raise NotFound(f"Agent not found: {agent_name}")
    row = Trigger(agent=agent, owner=owner, name=name, template=template, secret_env=secret_env)
    return row, trigger_issue(row)


def trigger_check(row: Trigger) -> None:
    """Refuse a trigger that could never fire: no template, or a signing secret's env value
    that does not exist (checked now rather than at every request)."""
    if not row.template.strip():
        raise Invalid("template: required (the message, with {{ field }} placeholders)")
    row.secret_env = row.secret_env.strip()
    if row.secret_env:
        _secret(row)


def trigger_issue(row: Trigger) -> str:
    """Check and save a new trigger (the API's or the studio's) with a fresh token; the token,
    which is shown once and never again (only its hash is kept)."""
    trigger_check(row)
    token = "trg_" + secrets.token_urlsafe(32)
    row.token_hash, row.token_prefix = _hash(token), token[:10]
    row.save()
    return token


def trigger_revoke(trigger_id: Any, rows: Any = None) -> Trigger:
    """Revoke the trigger ``trigger_id`` among ``rows`` (those the caller may manage)."""
    row = (Trigger.objects.all() if rows is None else rows).filter(pk=trigger_id).first()
    if row is None:
        raise NotFound(f"Trigger not found: {trigger_id}")
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
    return row


def trigger_for_token(token: str) -> Trigger:
    """The live trigger of ``token``; revoked, disabled (its owner deactivated) and unknown
    tokens are the same 404."""
    row = (
        Trigger.objects.select_related("agent", "owner")
        .filter(token_hash=_hash(token), revoked_at__isnull=True, disabled_reason="")
        .first()
    )
    if row is None:
        raise NotFound("Not found")
    return row


def _secret(row: Trigger) -> bytes:
    scoped = Q(scope=EnvValue.Scope.INSTANCE) | Q(scope=EnvValue.Scope.AGENT, agent_id=row.agent_id)
    found = sorted(
        EnvValue.objects.filter(scoped, key=row.secret_env),
        key=lambda r: r.scope != EnvValue.Scope.AGENT,
    )
    if not found:
        raise Invalid(f"secretEnv: no env value named {row.secret_env}")
    return found[0].value.encode()


def verify_sender(row: Trigger, headers: Any, body: bytes, now: float | None = None) -> None:
    """With a ``secret_env``: ``Webhook-Signature: v1=<hex HMAC-SHA256(secret,
    "<Webhook-Timestamp>.<body>")>`` within the replay window, else ``Unauthorized``."""
    if not row.secret_env:
        return
    stamp = headers.get("Webhook-Timestamp") or ""
    given = headers.get("Webhook-Signature") or ""
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    if (
        not _TIMESTAMP.fullmatch(stamp)
        or abs((now or time.time()) - int(stamp)) > REPLAY_WINDOW_SECONDS
    ):
        raise Unauthorized(
            f"Webhook-Timestamp missing or more than {REPLAY_WINDOW_SECONDS} s from now"
        )
    mac = hmac.new(_secret(row), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    # As bytes: compare_digest raises TypeError on a str with non-ASCII characters.
    if not hmac.compare_digest(f"v1={mac}".encode(), given.encode("utf-8", "replace")):
        raise Unauthorized("Webhook-Signature does not match")


def message_from_request(row: Trigger, content_type: str | None, body: bytes) -> str:
    """The message a trigger request asks for: its JSON body through the template, or the
    refusal (415, 400) before anything is created.

    JSON only (``application/json``, any parameters): an HTML form on another site can
    post ``text/plain`` or form data across origins without a preflight, never JSON."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise UnsupportedMediaType(
            "A trigger takes a JSON body: send it with Content-Type: application/json"
        )
    content = render(row.template, _json_body(body))
    if not content.strip():
        raise Invalid("The message the template makes from this request is empty")
    return content


def _json_body(body: bytes) -> Any:
    too_deep = f"The body is nested deeper than {BODY_DEPTH_MAX} levels"
    try:
        data = json.loads(body or b"{}")
    except RecursionError:  # the parser's own limit, far past ours
        raise Invalid(too_deep) from None
    except ValueError:  # also UnicodeDecodeError and an integer of too many digits
        raise Invalid("The body must be JSON in UTF-8") from None
    if _nested_deeper_than(data, BODY_DEPTH_MAX):
        raise Invalid(too_deep)
    return data


def _nested_deeper_than(data: Any, limit: int) -> bool:
    # Level by level rather than recursively: the walk itself must not hit the limit.
    level = [data] if isinstance(data, dict | list) else []
    for _ in range(limit):
        level = [
            child
            for value in level
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, dict | list)
        ]
    return bool(level)


def render(template: str, data: Any) -> str:
    """``{{ a.b }}`` → the JSON field ``a.b`` (text as is, anything else as JSON).

    ``Invalid`` for a missing field, a field's text PostgreSQL cannot store (NUL, a lone
    surrogate), or a message longer than a message may be."""
    # Counted as it grows: a template that repeats a large field stops at the limit rather
    # than building a message many times the body's size.
    length = len(_FIELD.sub("", template))

    def field(match: re.Match[str]) -> str:
        nonlocal length
        name = match.group(1)
        value = data
        for part in name.split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise Invalid(f"The request has no field {name!r} the template uses")
        if isinstance(value, str):
            text, problem = value, text_problem(value)
            if problem:
                raise Invalid(f"The request's field {name!r}: {problem}")
        else:
            text = json.dumps(value)  # ASCII: NUL and surrogates come out as escapes
        length += len(text)
        if length > CONTENT_MAX:
            raise Invalid(f"The message the template makes is longer than {CONTENT_MAX} characters")
        return text

    return _FIELD.sub(field, template)


def trigger_wire(row: Trigger, token: str | None = None) -> dict[str, Any]:
    out = {
        "id": str(row.pk),
        "agent": row.agent.name,
        "name": row.name,
        "tokenPrefix": row.token_prefix,
        "template": row.template,
        "secretEnv": row.secret_env or None,
        "revoked": row.revoked_at is not None,
        "disabledReason": row.disabled_reason or None,
        "owner": row.owner.get_username() if row.owner_id else None,
        "lastUsedAt": row.last_used_at.isoformat() if row.last_used_at else None,
    }
    if token is not None:
        out["token"] = token
        out["path"] = f"/api/inbound/{token}"
    return out
