"""Accounts and groups that the organisation's identity provider manages (docs/identity.md).

``IdentityLink`` ties a Django user to the provider: the OpenID Connect ``sub`` claim (with
its issuer) it signs in with, and, for accounts a SCIM client provisioned, the client's
``externalId``. ``ManagedGroup`` marks the Django groups the provider manages (named in a
sign-in's group claim, or created over SCIM): only their memberships follow the provider;
groups made in the studio are never touched. ``ScimToken`` is the bearer token a SCIM client
presents, stored only as a SHA-256 hash.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q


class IdentityLink(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="identity_link"
    )
    # The provider's issuer and the ``sub`` claim: empty until the first OpenID sign-in.
    issuer = models.CharField(max_length=500, blank=True)
    subject = models.CharField(max_length=255, blank=True)
    # Made by a SCIM client (its ``externalId``, when it sent one).
    provisioned_by_scim = models.BooleanField(default=False)
    scim_external_id = models.CharField(max_length=255, blank=True)
    # Deleted by the SCIM client: deactivated and renamed, the data kept for an administrator
    # (its threads, schedules), no longer seen over SCIM.
    scim_deleted_at = models.DateTimeField(null=True, blank=True)
    # Staff because the provider put them in an admin group (taken back when it no longer does).
    staff_from_provider = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "identity provider link"
        constraints = [
            # One account per (issuer, sub): a sign-in finds its account by this pair only.
            models.UniqueConstraint(
                fields=["issuer", "subject"],
                condition=~Q(subject=""),
                name="identity_link_one_account_per_subject",
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} ↔ {self.subject or '(not signed in yet)'}"


class ManagedGroup(models.Model):
    class Source(models.TextChoices):
        OIDC = "oidc", "OpenID Connect group claim"
        SCIM = "scim", "SCIM"

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="managed_by")
    source = models.CharField(max_length=8, choices=Source.choices)
    scim_external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "group managed by the identity provider"

    def __str__(self) -> str:
        return f"{self.group} ({self.get_source_display()})"


class ScimToken(models.Model):
    """A SCIM client's bearer token (``scim_`` + 64 hex); only its SHA-256 is kept."""

    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    last_four = models.CharField(max_length=4, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "SCIM token"

    def __str__(self) -> str:
        return f"{self.name} (scim_…{self.last_four})"
