from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class CredentialGrant(models.Model):
    """A credential a person (or the instance) lends to agent code without showing it
    (spec 0.2.0 credential grants): ``state.fetch(grant, url)`` injects the secret into a
    request to one of ``origins`` for the callers ``allow`` names, so the code never reads
    it (``agents_app.services.users.grants``). The secret is write-only: encrypted at rest
    (AES-256-GCM, ``agents_app.base.encryption``) and never returned by any route.

    ``user`` null: an instance-wide grant, used when the thread's owner has none of that name.
    ``config``: the validated ``GrantConfig`` (``origins``, ``inject``, ``allow``, ``metadata``).
    ``updated_by``: who last wrote it (the studio's person or the API's caller; null: code).
    """

    class Kind(models.TextChoices):
        BEARER = "bearer"
        HEADER = "header"
        QUERY = "query"
        BASIC = "basic"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="credential_grants",
    )
    name = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    ciphertext = models.TextField(editable=False)
    config = models.JSONField(default=dict)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "credential grant"
        # Also serve the one lookup: a user's grant by name, then the instance's.
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"], condition=Q(user__isnull=False), name="uniq_grant_user"
            ),
            models.UniqueConstraint(
                fields=["name"], condition=Q(user__isnull=True), name="uniq_grant_instance"
            ),
        ]

    def __str__(self) -> str:
        return self.name
