from __future__ import annotations

from typing import Any

from django.db import models

from runtime.core.spec import ModelCapabilities, ScriptedResponse, StreamingSimulation
from runtime.providers.registry import provider_label


class LanguageModel(models.Model):
    """An LLM definition (the spec's ``defineModel``); named to keep ``Model`` unambiguous."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI"
        OPENROUTER = "openrouter", "OpenRouter"
        ANTHROPIC = "anthropic", "Anthropic"
        GOOGLE = "google", "Google Gemini"
        TEST = "test", "Test (scripted, no API key)"

    name = models.CharField(max_length=128, unique=True)
    # No fixed choices: OpenAI-compatible vendors and ``define_provider`` definitions
    # (agents/providers/) are names too; the save rules refuse an unknown one with a
    # sentence (runtime.definitions.validation.validate_model), the form offers the known.
    provider = models.CharField(max_length=64)
    model = models.CharField("provider model id", max_length=200)
    included_providers = models.JSONField(
        default=list,
        blank=True,
        help_text="OpenRouter only: upstream providers to route through, in order.",
    )
    input_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million input tokens.",
    )
    output_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million output tokens.",
    )
    cached_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="USD per million cached input tokens.",
    )
    # Schema: runtime.core.spec.ModelCapabilities (camelCase keys).
    capabilities = models.JSONField(default=dict, blank=True)
    base_url = models.URLField(
        blank=True, help_text="Override the provider's API base URL (proxies, compatible servers)."
    )
    # The egress key rule (docs/security.md): the instance's key for the provider goes to a
    # base URL off the vendor's own host only when a superuser ticked this.
    send_instance_key_to_base_url = models.BooleanField(
        default=False,
        help_text="Send the instance's API key for this provider to the base URL above "
        "although it is not the vendor's own host (superusers only).",
    )
    # Not a column: set by the studio when a superuser saves the form.
    egress_approved = False
    # Spec 0.15 ``providerTools``: names from the provider's offer (runtime.core.provider_tools).
    provider_tools = models.JSONField(default=list, blank=True)
    # OpenAI only: "chat" (Chat Completions) or "responses"; blank is the adapter's default.
    api = models.CharField(
        max_length=16,
        blank=True,
        choices=[("chat", "Chat Completions"), ("responses", "Responses")],
        help_text="OpenAI only: which OpenAI API serves this model.",
    )
    # Schema: list[runtime.core.spec.ScriptedResponse]; only for the test provider.
    script = models.JSONField(null=True, blank=True)
    # Schema: runtime.core.spec.StreamingSimulation.
    streaming = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "model"

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The superuser's consent covers the base URL they saw: anyone else moving the
        # base URL takes it away (the instance key must not follow the move).
        if self.send_instance_key_to_base_url and self.pk and not self.egress_approved:
            stored = LanguageModel.objects.filter(pk=self.pk).values_list("base_url", flat=True)
            if stored.first() not in (None, self.base_url):
                self.send_instance_key_to_base_url = False
                fields = kwargs.get("update_fields")
                if fields is not None:
                    kwargs["update_fields"] = {*fields, "send_instance_key_to_base_url"}
        super().save(*args, **kwargs)

    def get_provider_display(self) -> str:
        """The provider as people read it (Django's name for a choices field's label)."""
        return provider_label(self.provider)

    def capabilities_obj(self) -> ModelCapabilities:
        return ModelCapabilities.model_validate(self.capabilities or {})

    def script_obj(self) -> list[ScriptedResponse] | None:
        if self.script is None:
            return None
        return [ScriptedResponse.model_validate(r) for r in self.script]

    def streaming_obj(self) -> StreamingSimulation | None:
        return StreamingSimulation.model_validate(self.streaming) if self.streaming else None

    def fallback_names(self) -> list[str]:
        return [
            f.fallback.name
            for f in self.fallback_links.select_related("fallback").order_by("position")
        ]

    def set_capabilities(self, caps: ModelCapabilities | dict[str, Any]) -> None:
        obj = (
            caps if isinstance(caps, ModelCapabilities) else ModelCapabilities.model_validate(caps)
        )
        self.capabilities = obj.dump()


class ModelFallback(models.Model):
    """One entry of a model's ordered fallback chain."""

    model = models.ForeignKey(
        LanguageModel, on_delete=models.CASCADE, related_name="fallback_links"
    )
    fallback = models.ForeignKey(
        LanguageModel, on_delete=models.PROTECT, related_name="fallback_of"
    )
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["model", "fallback"], name="uniq_model_fallback"),
        ]

    def __str__(self) -> str:
        return f"{self.model} → {self.fallback}"
