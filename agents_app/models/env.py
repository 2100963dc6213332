from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents_app.models.agents import Agent
from agents_app.models.prompts import Prompt
from agents_app.models.threads import Thread


class EnvValue(models.Model):
    """An env value at one scope, encrypted at rest (AES-256-GCM, see ``agents_app.base.encryption``).

    Resolution order: thread → agent → prompt → user → instance. ``secret`` values
    are write-only everywhere outside the engine.
    """

    class Scope(models.TextChoices):
        INSTANCE = "instance"
        USER = "user"
        AGENT = "agent"
        PROMPT = "prompt"
        THREAD = "thread"

    class Type(models.TextChoices):
        TEXT = "text"
        SECRET = "secret"

    scope = models.CharField(max_length=8, choices=Scope.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="env_values",
    )
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="env_values"
    )
    prompt = models.ForeignKey(
        Prompt, on_delete=models.CASCADE, null=True, blank=True, related_name="env_values"
    )
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="env_values"
    )
    key = models.CharField(max_length=128)
    ciphertext = models.TextField(editable=False)
    value_type = models.CharField(max_length=8, choices=Type.choices, default=Type.SECRET)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["scope", "key"]
        verbose_name = "env value"
        constraints = [
            models.UniqueConstraint(
                fields=["key"], condition=Q(scope="instance"), name="uniq_env_instance"
            ),
            models.UniqueConstraint(
                fields=["user", "key"], condition=Q(scope="user"), name="uniq_env_user"
            ),
            models.UniqueConstraint(
                fields=["agent", "key"], condition=Q(scope="agent"), name="uniq_env_agent"
            ),
            models.UniqueConstraint(
                fields=["prompt", "key"], condition=Q(scope="prompt"), name="uniq_env_prompt"
            ),
            models.UniqueConstraint(
                fields=["thread", "key"], condition=Q(scope="thread"), name="uniq_env_thread"
            ),
            models.CheckConstraint(
                condition=(
                    Q(
                        scope="instance",
                        user__isnull=True,
                        agent__isnull=True,
                        prompt__isnull=True,
                        thread__isnull=True,
                    )
                    | Q(scope="user", user__isnull=False)
                    | Q(scope="agent", agent__isnull=False)
                    | Q(scope="prompt", prompt__isnull=False)
                    | Q(scope="thread", thread__isnull=False)
                ),
                name="env_scope_owner",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.key}"

    @property
    def value(self) -> str:
        from agents_app.base.encryption import decrypt

        return decrypt(self.ciphertext)

    @value.setter
    def value(self, plaintext: str) -> None:
        from agents_app.base.encryption import encrypt

        self.ciphertext = encrypt(plaintext)
