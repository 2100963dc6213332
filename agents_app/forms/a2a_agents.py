"""The remote A2A agent form: builds the definition and applies the same rules as import
and every other save (``services.definitions.saves``)."""

from __future__ import annotations

from typing import Any

from django import forms

from agents_app.forms.fields import KeyValueLinesField
from agents_app.models import A2aAgent
from agents_app.services.definitions.a2a_agents import instance_secret_errors
from agents_app.services.definitions.rows import build_catalog, validate_definition
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.definitions.validation import parse

_FIELDS = {"timeoutMs": "timeout_ms"}


class A2aAgentForm(forms.ModelForm):
    headers = KeyValueLinesField(
        label="Headers",
        help_text="One Name=value per line. Write credentials as ${NAME}, e.g. "
        "Authorization=Bearer ${PARTNER_KEY}, and keep NAME as a secret env value.",
    )
    # The definition ``clean`` built and checked: what the admin saves.
    definition: A2aAgentDefinition | None = None
    # The studio user saving (set per request by the admin's ``get_form``).
    actor: Any = None

    class Meta:
        model = A2aAgent
        fields = ["name", "enabled", "url", "description", "headers", "timeout_ms"]
        labels = {"url": "URL", "timeout_ms": "Timeout (ms)"}
        help_texts = {
            "name": "Prompts list it as a2a:NAME; the model sees a tool called NAME. Letters, "
            "digits, '_', '-', '.'.",
            "url": "The remote agent's Agent Card URL (…/.well-known/agent-card.json) or the base "
            "URL it is found under, e.g. https://agents.example.com/a2a/researcher.",
            "description": "What the model is told the tool does. Empty: the card's description "
            "and skills.",
            "timeout_ms": "How long one call may wait for the remote task before the model gets "
            "an error.",
        }

    def clean(self) -> dict[str, Any]:
        cd = super().clean() or {}
        if self.errors:
            return cd
        data = {
            # The name is fixed once saved (the admin shows it read-only): prompts use it.
            "name": cd.get("name") or self.instance.name or "",
            "url": (cd.get("url") or "").strip(),
            "description": cd.get("description") or "",
            "headers": cd.get("headers") or {},
            "timeoutMs": cd.get("timeout_ms"),
            "enabled": bool(cd.get("enabled")),
        }
        definition, errors = parse(A2aAgentDefinition, data)
        if definition is not None:
            errors = validate_definition(definition, build_catalog([definition]))
        for error in errors:
            head = error.path.split(".", 1)[0]
            field = _FIELDS.get(head, head)
            self.add_error(field if field in self.fields else None, error.message)
        if definition is not None and not errors:
            self._refuse_unreadable_secrets(definition)
        self.definition = definition if not errors and not self.errors else None
        cd["headers"] = cd.get("headers") or {}
        return cd

    def _refuse_unreadable_secrets(self, d: A2aAgentDefinition) -> None:
        stored = self.instance if self.instance.pk is not None else None
        for error in instance_secret_errors(d, self.actor, stored):
            self.add_error("headers", error.message)
