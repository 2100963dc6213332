"""The remote A2A agent form: builds the definition and applies the same rules as import
and every other save (``services.definitions.saves``)."""

from __future__ import annotations

from typing import Any

from django import forms

from agents_app.base.permissions import may_read_instance_env
from agents_app.forms.fields import KeyValueLinesField
from agents_app.models import A2aAgent, EnvValue
from agents_app.services.definitions.rows import build_catalog, validate_definition
from runtime.core.a2a_agents import A2aAgentDefinition
from runtime.core.env_refs import references
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
        """Headers name env values that threads resolve down to the instance's: whoever
        points them somewhere (a new agent, a changed URL or header) could send the
        instance's secret to a host of their choosing, so that takes the right to read
        instance env values, as the studio's own "Fetch the card" does."""
        if self.actor is None or may_read_instance_env(self.actor):
            return
        unchanged = self.instance.pk is not None and (
            self.instance.url == d.url and dict(self.instance.headers or {}) == dict(d.headers)
        )
        if unchanged:
            return
        names = {n for value in d.headers.values() for n in references(value)}
        instance = set(
            EnvValue.objects.filter(scope="instance", key__in=names).values_list("key", flat=True)
        )
        for key, value in d.headers.items():
            for name in sorted(set(references(value)) & instance):
                self.add_error(
                    "headers",
                    f"Header {key} uses {name}, an instance env value you may not read: this "
                    "save would send it to the URL given here. Ask someone who may read "
                    "instance env values to save this agent, or use an env value of your own.",
                )
