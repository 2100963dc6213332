"""The audit log: who changed what, when, from where (docs/identity.md, "The audit log").

Append-only: a row is never updated, and only the retention purge deletes rows
(``services.access.audit.purge_expired``). The ORM refuses both (``AuditEventQuerySet``,
``AuditEvent.save``/``delete``), and on PostgreSQL a trigger refuses them too unless the
purge's transaction says it is the purge. The actor is kept as text and an id, never as a
foreign key: deleting a user must not rewrite the history of what they did.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone


class AuditLogIsAppendOnly(Exception):
    pass


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditLogIsAppendOnly("Audit events are never changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly(
            "Audit events are deleted only by their retention (services.access.audit.purge_expired)."
        )

    def _purge(self) -> tuple[int, dict[str, int]]:
        return super().delete()


class AuditEvent(models.Model):
    class ActorKind(models.TextChoices):
        PERSON = "person", "Person"
        API_KEY = "api_key", "API key"
        SCIM = "scim", "SCIM client"
        SIGN_IN = "sign_in", "Identity provider sign-in"
        COMMAND = "command", "Command"
        SYSTEM = "system", "System"

    class Action(models.TextChoices):
        CREATED = "created", "created"
        CHANGED = "changed", "changed"
        DELETED = "deleted", "deleted"
        ADDED = "added", "added to"
        REMOVED = "removed", "removed from"

    # Listed newest first, filtered by time (index "audit_time").
    at = models.DateTimeField(default=timezone.now)
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor = models.CharField(max_length=300)
    source = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=8, choices=Action.choices)
    target_type = models.CharField(max_length=40)
    target_id = models.CharField(max_length=64)
    target = models.CharField(max_length=300)
    # {field: [before, after]}; secret fields say only that they changed ("(changed)"),
    # env values and secrets never appear.
    changes = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "audit event"
        indexes = [
            models.Index(fields=["at"], name="audit_time"),
            # One target's history (the studio's filter by target).
            models.Index(fields=["target_type", "target_id", "at"], name="audit_target"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.get_action_display()} {self.target_type} {self.target}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise AuditLogIsAppendOnly("Audit events are never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("Audit events are deleted only by their retention.")
