"""Definition history: every saved agent, prompt or model as an immutable numbered version,
and prompt drafts tried in "Try this agent" before they are saved."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models

from agents_app.models.threads import Thread


class DefinitionKind(models.TextChoices):
    AGENTS = "agents", "agent"
    PROMPTS = "prompts", "prompt"
    MODELS = "models", "model"


class DefinitionVersion(models.Model):
    """One saved state of a definition, numbered 1, 2, 3… per (kind, name).

    Keyed by name, not by a foreign key, so the history outlives a deletion (and a definition
    created again under the same name continues its numbering). ``definition`` is the spec
    JSON as ``Definition.dump()`` gives it; secret env values are null in it, as in exports.
    Rows are never changed: ``save`` refuses an update.
    """

    class Source(models.TextChoices):
        ADMIN = "admin", "studio"
        API = "api", "API"
        IMPORT = "import", "import"
        RESTORE = "restore", "restore"
        DRAFT = "draft", "draft saved"
        BASELINE = "baseline", "first use"

    kind = models.CharField(max_length=8, choices=DefinitionKind.choices)
    name = models.CharField(max_length=128)
    number = models.PositiveIntegerField()
    definition = models.JSONField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Kept beside the foreign key: who it was stays readable after the user is deleted.
    author_name = models.CharField(max_length=150, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    note = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name", "-number"]
        constraints = [
            # Also the index of "the versions of one definition, newest first".
            models.UniqueConstraint(
                fields=["kind", "name", "number"], name="uniq_definition_version"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}/{self.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ValueError("Definition versions are immutable; save a new version instead.")
        super().save(*args, **kwargs)


class DefinitionDraft(models.Model):
    """An unsaved edit of a prompt, tried in its own thread (the thread is the draft's try).

    Sessions of ``thread`` use ``definition`` in place of the saved prompt; nothing else sees
    it. Saving the draft writes it as the prompt's next version (``saved_as``).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=8, choices=DefinitionKind.choices)
    name = models.CharField(max_length=128)
    definition = models.JSONField()
    # The version the draft was made from (the diff's left side when it is saved).
    base_number = models.PositiveIntegerField(null=True, blank=True)
    thread = models.ForeignKey(
        Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="drafts"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    saved_as = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"draft of {self.kind}/{self.name}"
