"""The audit log: every change to configuration, access and accounts, with who, when, from
where and what changed (docs/identity.md, "The audit log").

Recorded from the models' signals, so every writer is covered whatever path it takes (the
studio, the API, SCIM, a sign-in that syncs groups, ``import_definitions``): ``pre_save``
reads the stored row, ``post_save`` writes one ``AuditEvent`` with the fields that changed
(``[before, after]``). The event is written by the same connection as the change, so inside
the change's transaction when it has one (the studio's forms, the services and the
definition saves all write in one). Definitions are recorded from their versions
(``DefinitionVersion``: one per save), with the top-level fields of the definition that
changed.

Never recorded: a secret's value. Env values, a schedule's env, passwords and token hashes
appear as ``"(changed)"``; MCP headers and env as their names only. ``SECRET_MARK`` is all
that reaches the log.

Who: the request's person or API key (``AuditContextMiddleware`` puts the request in
``_request``), or an actor set with ``acting_as`` (SCIM, a sign-in through the identity
provider), or the management command being run, or "system" (workers, sweeps).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import decimal
import socket
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection, models, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.http import HttpRequest
from django.utils import timezone

from agents_app.base.spreadsheets import csv_text
from agents_app.models import (
    Agent,
    ApiKey,
    AuditEvent,
    CredentialGrant,
    DefinitionKind,
    DefinitionVersion,
    EnvValue,
    IdentityLink,
    LanguageModel,
    McpServer,
    Prompt,
    RetentionPolicy,
    Schedule,
    ScimToken,
    SpendBudget,
    Trigger,
    UsageLimit,
    WebhookSubscription,
)
from agents_app.services.access import limits

SECRET_MARK = "(changed)"
MAX_VALUE_CHARS = 500
Kind = AuditEvent.ActorKind


# --- who -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    kind: str
    label: str
    user_id: int | None = None
    source: str = ""


_actor: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("audit_actor", default=None)
_request: contextvars.ContextVar[HttpRequest | None] = contextvars.ContextVar(
    "audit_request", default=None
)


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Changes made inside are recorded as ``actor``'s."""
    token = _actor.set(actor)
    try:
        yield actor
    finally:
        _actor.reset(token)


@contextlib.contextmanager
def serving(request: HttpRequest) -> Iterator[None]:
    """Changes made while ``request`` is served are its person's or API key's."""
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


def request_source(request: HttpRequest) -> str:
    return limits.client_address(request)


def _from_request(request: HttpRequest) -> Actor:
    user: Any = getattr(request, "auth", None)
    if not getattr(user, "is_authenticated", False):
        user = getattr(request, "user", None)
    source = request_source(request)
    if user is None or not getattr(user, "is_authenticated", False):
        return Actor(Kind.SYSTEM, "anonymous request", None, source)
    name = user.get_username()
    key_id = getattr(request, "api_key_id", None)
    if key_id is not None:
        return Actor(Kind.API_KEY, f"{name} (API key #{key_id})", user.pk, source)
    return Actor(Kind.PERSON, name, user.pk, source)


def current_actor() -> Actor:
    explicit = _actor.get()
    if explicit is not None:
        return explicit
    request = _request.get()
    if request is not None:
        return _from_request(request)
    argv = sys.argv
    if len(argv) > 1 and argv[0].endswith("manage.py"):
        return Actor(Kind.COMMAND, f"manage.py {argv[1]}", None, socket.gethostname())
    return Actor(Kind.SYSTEM, "system", None, socket.gethostname())


# --- what ----------------------------------------------------------------------------------


def record(
    action: str,
    target_type: str,
    target_id: Any,
    target: str,
    changes: dict[str, Any] | None = None,
    *,
    actor: Actor | None = None,
) -> AuditEvent:
    who = actor or current_actor()
    return AuditEvent.objects.create(
        actor_kind=who.kind,
        actor_id=who.user_id,
        actor=who.label[:300],
        source=who.source[:200],
        action=action,
        target_type=target_type,
        target_id=str(target_id)[:64],
        target=str(target)[:300],
        changes=changes or {},
    )


def _plain(value: Any) -> Any:
    """A JSON value, cut to ``MAX_VALUE_CHARS`` when it is long text."""
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, models.Model):
        return f"{value} (#{value.pk})"
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        return value[:MAX_VALUE_CHARS] + "…"
    return value


def _url_without_credentials(value: Any) -> Any:
    """A URL without its user:password and query (either may hold a token)."""
    if not isinstance(value, str) or not value:
        return value
    parts = urlsplit(value)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Policy:
    """How one model is recorded: its name in the log, the fields kept with their values,
    the secret ones (only "changed"), the ones kept as their names (a dict's keys), the ones
    whose change alone is not worth an event (bookkeeping), and what it is called."""

    kind: str
    fields: tuple[str, ...]
    secret: tuple[str, ...] = ()
    names_only: tuple[str, ...] = ()
    noise: tuple[str, ...] = ()
    label: Callable[[Any], str] = str
    shown: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    skip: Callable[[Any], bool] = lambda row: False

    def snapshot(self, row: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        names = {f.name: f for f in row._meta.concrete_fields}
        for name in self.fields:
            model_field = names.get(name)
            if model_field is None:
                continue  # a field another version of the model does not have
            if model_field.is_relation:
                related_id = getattr(row, model_field.attname)
                value = None if related_id is None else _plain(getattr(row, name))
            else:
                value = getattr(row, name)
            out[name] = _plain(self.shown[name](value) if name in self.shown else value)
        for name in self.names_only:
            if name in names:
                value = getattr(row, name) or {}
                out[name] = sorted(str(k) for k in value) if isinstance(value, dict) else []
        for name in self.secret:
            if name in names:
                # Compared, never shown: the diff turns a difference into SECRET_MARK.
                raw = getattr(row, name)
                out[name] = ("secret", bool(raw), hash(str(raw)))
        return out


def _diff(before: dict[str, Any], after: dict[str, Any], policy: Policy) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for name in after:
        if before.get(name) == after[name]:
            continue
        if name in policy.secret:
            changes[name] = SECRET_MARK
        else:
            changes[name] = [before.get(name), after[name]]
    return changes


def _created(after: dict[str, Any], policy: Policy) -> dict[str, Any]:
    return {
        name: (SECRET_MARK if name in policy.secret else [None, value])
        for name, value in after.items()
        if (value[1] if name in policy.secret else value not in (None, "", [], {}))
    }


def _user_label(user: Any) -> str:
    return str(user.get_username())


def _env_label(row: EnvValue) -> str:
    owner = row.user or row.agent or row.prompt
    return f"{row.scope} {row.key}" + (f" ({owner})" if owner is not None else "")


POLICIES: dict[type[models.Model], Policy] = {}


def _policies() -> dict[type[models.Model], Policy]:
    if POLICIES:
        return POLICIES
    user_model = get_user_model()
    POLICIES.update(
        {
            user_model: Policy(
                "user",
                (
                    "username",
                    "email",
                    "first_name",
                    "last_name",
                    "is_active",
                    "is_staff",
                    "is_superuser",
                ),
                secret=("password",),
                noise=("last_login",),
                label=_user_label,
            ),
            Group: Policy("group", ("name",)),
            ApiKey: Policy(
                "api key",
                ("name", "user", "key_prefix", "last_five", "revoked_at"),
                noise=("last_used_at",),
            ),
            EnvValue: Policy(
                "env value",
                ("scope", "key", "value_type", "user", "agent", "prompt"),
                secret=("ciphertext",),
                noise=("updated_at", "updated_by"),
                label=_env_label,
                # A thread's values are the conversation's data, not configuration.
                skip=lambda row: row.scope == EnvValue.Scope.THREAD,
            ),
            Schedule: Policy(
                "schedule",
                (
                    "name",
                    "agent",
                    "owner",
                    "cron",
                    "timezone",
                    "interval_seconds",
                    "message",
                    "target",
                    "paused",
                    "paused_reason",
                    "catch_up",
                    "env_names",
                ),
                secret=("env_ciphertext",),
                noise=("next_run_at", "updated_at", "standing_thread"),
            ),
            Trigger: Policy(
                "trigger",
                (
                    "name",
                    "agent",
                    "owner",
                    "token_prefix",
                    "template",
                    "secret_env",
                    "revoked_at",
                    "disabled_reason",
                ),
                secret=("token_hash",),
                noise=("last_used_at",),
            ),
            WebhookSubscription: Policy(
                "webhook",
                ("agent", "owner", "url", "secret_env", "events", "active", "disabled_reason"),
                shown={"url": _url_without_credentials},
                label=lambda row: _url_without_credentials(row.url),
            ),
            SpendBudget: Policy("budget", ("user", "agent", "monthly_limit_usd")),
            UsageLimit: Policy("usage limit", ("user", "api_key", "action", "limit", "period")),
            RetentionPolicy: Policy(
                "retention",
                ("thread_days", "log_days", "log_body_days", "effect_days"),
                noise=(
                    "log_bodies_trimmed_before",
                    "last_run_at",
                    "last_run_summary",
                    "updated_at",
                ),
                label=lambda row: "retention policy",
            ),
            McpServer: Policy(
                "mcp server",
                (
                    "name",
                    "transport",
                    "url",
                    "command",
                    "timeout_ms",
                    "allowed_tools",
                    "enabled",
                ),
                secret=("args",),
                names_only=("headers", "env"),
                noise=("tools", "tools_refreshed_at", "last_error", "updated_at"),
                shown={"url": _url_without_credentials},
            ),
            CredentialGrant: Policy(
                "credential grant",
                ("name", "kind", "user", "config"),
                secret=("ciphertext",),
                noise=("updated_at", "updated_by"),
                label=lambda row: row.name + (f" ({row.user})" if row.user_id else ""),
            ),
            ScimToken: Policy(
                "scim token", ("name", "last_four", "revoked_at"), noise=("last_used_at",)
            ),
            IdentityLink: Policy(
                "identity link",
                (
                    "user",
                    "issuer",
                    "subject",
                    "provisioned_by_scim",
                    "scim_external_id",
                    "staff_from_provider",
                ),
                noise=("last_sign_in_at",),
                label=lambda row: str(row.user),
            ),
        }
    )
    return POLICIES


def _on_pre_save(
    sender: Any, instance: Any, raw: bool = False, update_fields: Any = None, **kw: Any
) -> None:
    policy = _policies().get(sender)
    if policy is None or raw:
        return
    if (update_fields is not None and set(update_fields) <= set(policy.noise)) or policy.skip(
        instance
    ):
        instance._audit_skip = True
        return
    instance._audit_skip = False
    before = None
    if instance.pk is not None and not instance._state.adding:
        stored = sender._base_manager.filter(pk=instance.pk).first()
        before = policy.snapshot(stored) if stored is not None else None
    instance._audit_before = before


def _on_post_save(
    sender: Any, instance: Any, created: bool = False, raw: bool = False, **kw: Any
) -> None:
    policy = _policies().get(sender)
    if policy is None or raw or getattr(instance, "_audit_skip", False) or policy.skip(instance):
        return
    after = policy.snapshot(instance)
    before = getattr(instance, "_audit_before", None)
    if created or before is None:
        record(
            AuditEvent.Action.CREATED,
            policy.kind,
            instance.pk,
            policy.label(instance),
            _created(after, policy),
        )
    else:
        changes = _diff(before, after, policy)
        if changes:
            record(
                AuditEvent.Action.CHANGED, policy.kind, instance.pk, policy.label(instance), changes
            )
    instance._audit_before = after


def _on_post_delete(sender: Any, instance: Any, **kw: Any) -> None:
    policy = _policies().get(sender)
    if policy is not None and not policy.skip(instance):
        try:
            label = policy.label(instance)
        except models.ObjectDoesNotExist:  # a related row went first in a cascade
            label = f"#{instance.pk}"
        before: dict[str, Any] = {}
        with contextlib.suppress(models.ObjectDoesNotExist):
            before = {
                k: [v, None]
                for k, v in policy.snapshot(instance).items()
                if k not in policy.secret and v not in (None, "", [], {})
            }
        record(AuditEvent.Action.DELETED, policy.kind, instance.pk, label, before)


# --- memberships and permissions (many-to-many) -----------------------------------------------


def _names(model: Any, ids: Iterable[Any]) -> list[str]:
    if model is Permission:
        rows = Permission.objects.filter(pk__in=list(ids)).select_related("content_type")
        return sorted(f"{p.content_type.app_label}.{p.codename}" for p in rows)
    if model is Group:
        return sorted(Group.objects.filter(pk__in=list(ids)).values_list("name", flat=True))
    user_model = get_user_model()
    return sorted(
        str(n)
        for n in user_model._default_manager.filter(pk__in=list(ids)).values_list(
            user_model.USERNAME_FIELD, flat=True
        )
    )


def _m2m_handler(
    kind: str, field_name: str, reverse_kind: str, reverse_field: str
) -> Callable[..., None]:
    """``m2m_changed`` of one relation: an event on the side that was changed (a user's
    groups, or a group's members), its list before and after."""

    def handler(
        sender: Any, instance: Any, action: str, reverse: bool, model: Any, pk_set: Any, **kw: Any
    ) -> None:
        if action not in (
            "pre_add",
            "pre_remove",
            "pre_clear",
            "post_add",
            "post_remove",
            "post_clear",
        ):
            return
        side_kind, side_field = (reverse_kind, reverse_field) if reverse else (kind, field_name)
        if not side_kind:
            return
        manager = getattr(instance, side_field)
        if action.startswith("pre_"):
            instance._audit_m2m = {
                side_field: sorted(_names(model, manager.values_list("pk", flat=True)))
            }
            return
        before = getattr(instance, "_audit_m2m", {}).get(side_field)
        after = _names(model, manager.values_list("pk", flat=True))
        if before is None or before == after:
            return
        added = sorted(set(after) - set(before))
        removed = sorted(set(before) - set(after))
        label = _user_label(instance) if side_kind == "user" else str(instance)
        shown = "members" if side_field == "user_set" else side_field
        record(
            AuditEvent.Action.CHANGED,
            side_kind,
            instance.pk,
            label,
            {shown: {"before": before, "after": after, "added": added, "removed": removed}},
        )

    return handler


# --- definitions (one event per saved version) ------------------------------------------------

_SECRET_WORDS = ("secret", "password", "apikey", "api_key", "token")


def _scrubbed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (
                SECRET_MARK
                if any(w in str(k).lower() for w in _SECRET_WORDS) and v
                else _scrubbed(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


def _on_version_saved(
    sender: Any, instance: DefinitionVersion, created: bool = False, raw: bool = False, **kw: Any
) -> None:
    if not created or raw or instance.source == DefinitionVersion.Source.BASELINE:
        return  # a baseline records what already was (a definition's first use), not a change
    previous = (
        DefinitionVersion.objects.filter(
            kind=instance.kind, name=instance.name, number__lt=instance.number
        )
        .order_by("-number")
        .values_list("definition", flat=True)
        .first()
    )
    old = _scrubbed(previous or {})
    new = _scrubbed(instance.definition or {})
    changes = {
        key: [_plain(old.get(key)), _plain(new.get(key))]
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    }
    changes["version"] = [None if previous is None else instance.number - 1, instance.number]
    if instance.source:
        changes["via"] = [None, instance.source]
    record(
        AuditEvent.Action.CREATED if previous is None else AuditEvent.Action.CHANGED,
        str(DefinitionKind(instance.kind).label),
        instance.name,
        instance.name,
        changes,
    )


def _definition_deleted(kind: str) -> Callable[..., None]:
    def handler(sender: Any, instance: Any, **kw: Any) -> None:
        record(AuditEvent.Action.DELETED, kind, instance.name, instance.name, {})

    return handler


_DEFINITIONS = {Agent: "agent", Prompt: "prompt", LanguageModel: "model"}


def connect() -> None:
    """Wire the signals (``AgentsAppConfig.ready``)."""
    for model in _policies():
        uid = f"agents_app.audit.{model._meta.label_lower}"
        pre_save.connect(_on_pre_save, sender=model, dispatch_uid=uid)
        post_save.connect(_on_post_save, sender=model, dispatch_uid=uid)
        post_delete.connect(_on_post_delete, sender=model, dispatch_uid=uid)
    post_save.connect(
        _on_version_saved, sender=DefinitionVersion, dispatch_uid="agents_app.audit.versions"
    )
    for model, kind in _DEFINITIONS.items():
        post_delete.connect(
            _definition_deleted(kind),
            sender=model,
            dispatch_uid=f"agents_app.audit.del.{kind}",
            weak=False,
        )
    user_model = get_user_model()
    relations = [
        (user_model.groups.through, "user", "groups", "group", "user_set"),
        (user_model.user_permissions.through, "user", "user_permissions", "", ""),
        (Group.permissions.through, "group", "permissions", "", ""),
    ]
    for through, kind, name, reverse_kind, reverse_name in relations:
        m2m_changed.connect(
            _m2m_handler(kind, name, reverse_kind, reverse_name),
            sender=through,
            dispatch_uid=f"agents_app.audit.m2m.{through._meta.label_lower}",
            weak=False,
        )


# --- reading, exporting, retention ------------------------------------------------------------

EXPORT_HEADER = (
    "time (UTC)",
    "actor kind",
    "actor",
    "source",
    "action",
    "target type",
    "target id",
    "target",
    "changes",
)


def export_csv(events: Iterable[AuditEvent]) -> str:
    """The events as CSV; every cell through ``spreadsheets.spreadsheet_cell`` (no formulas)."""
    import json

    rows = (
        (
            e.at.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S"),
            e.actor_kind,
            e.actor,
            e.source,
            e.action,
            e.target_type,
            e.target_id,
            e.target,
            json.dumps(e.changes, ensure_ascii=False, sort_keys=True),
        )
        for e in events
    )
    return csv_text(EXPORT_HEADER, rows)


def purge_expired(now: datetime.datetime | None = None) -> int:
    """Delete events older than ``STUDIO_AUDIT_RETENTION_DAYS`` (0: none); how many."""
    days = settings.STUDIO_AUDIT_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - datetime.timedelta(days=days)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL studio.audit_purge = 'on'")
        deleted, _ = AuditEvent.objects.filter(at__lt=cutoff)._purge()
    return deleted
