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

from agents_app.errors import DomainError, Invalid, NotFound
from agents_app.models import Agent, EnvValue, Trigger

REPLAY_WINDOW_SECONDS = 300
_FIELD = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


class Unauthorized(DomainError):
    status = 401


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def trigger_create(
    *, owner: Any, agent_name: str, template: str, name: str = "", secret_env: str = ""
) -> tuple[Trigger, str]:
    """A new trigger and its token (shown once: only its hash is kept)."""
    agent = Agent.objects.filter(name=agent_name).first()
    if agent is None:
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


def trigger_revoke(trigger_id: Any) -> Trigger:
    row = Trigger.objects.filter(pk=trigger_id).first()
    if row is None:
        raise NotFound(f"Trigger not found: {trigger_id}")
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
    return row


def trigger_for_token(token: str) -> Trigger:
    """The live trigger of ``token``; revoked and unknown tokens are the same 404."""
    row = (
        Trigger.objects.select_related("agent", "owner")
        .filter(token_hash=_hash(token), revoked_at__isnull=True)
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
    if not stamp.isdigit() or abs((now or time.time()) - int(stamp)) > REPLAY_WINDOW_SECONDS:
        raise Unauthorized(
            f"Webhook-Timestamp missing or more than {REPLAY_WINDOW_SECONDS} s from now"
        )
    mac = hmac.new(_secret(row), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest("v1=" + mac, given):
        raise Unauthorized("Webhook-Signature does not match")


def render(template: str, data: Any) -> str:
    """``{{ a.b }}`` → the JSON field ``a.b`` (text as is, anything else as JSON)."""

    def field(match: re.Match[str]) -> str:
        value = data
        for part in match.group(1).split("."):
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise Invalid(f"The request has no field {match.group(1)!r} the template uses")
        return value if isinstance(value, str) else json.dumps(value)

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
        "lastUsedAt": row.last_used_at.isoformat() if row.last_used_at else None,
    }
    if token is not None:
        out["token"] = token
        out["path"] = f"/api/inbound/{token}"
    return out
