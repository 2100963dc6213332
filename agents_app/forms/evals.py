"""Eval forms for people (issue #55): a case's conversation, checks and env values are edited
as rows (``static/studio/eval_cases.js`` draws them over the JSON, which stays the value the
form posts), and every mistake is a sentence that names the message or the check
("Check 1: the text to look for is required"), never ``checks.0.contains.text: Field
required``. An eval run's versions are written as lines (``support-prompt = 4``)."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from agents_app.base.errors import DomainError
from agents_app.base.people_format import REASONS
from agents_app.forms.fields import PrettyJSONField
from agents_app.models import Agent, EvalCase, EvalRun
from agents_app.services.definitions import versions as definition_versions
from agents_app.services.evals import pins as eval_pins
from agents_app.services.evals.words import check_problems, env_problems, message_problems
from runtime.core.progress import STOP_REASONS


def _builder(kind: str, **data: Any) -> forms.Textarea:
    """The JSON the form posts, which the case editor draws as rows (``data-eval-builder``)."""
    attrs = {"data-eval-builder": kind, "rows": 4, "class": "studio-code"}
    attrs.update({f"data-{k.replace('_', '-')}": json.dumps(v) for k, v in data.items()})
    return forms.Textarea(attrs=attrs)


def stop_reason_choices() -> list[tuple[str, str]]:
    skip = {"awaiting_tool", "awaiting_human"}  # a wait, not an end of the case
    return [(code, REASONS.get(code, code)) for code in STOP_REASONS if code not in skip]


class CaseForm(forms.ModelForm):
    class Meta:
        model = EvalCase
        fields = ("name", "messages", "checks", "env", "notes")
        labels = {
            "messages": "The conversation",
            "checks": "What the answer must do",
            "env": "Env values for this case",
        }
        help_texts = {
            "messages": "What is said before the agent answers: the last message is the "
            "person's question; earlier ones (the person's and the agent's) are the history.",
            "checks": "Each check is one thing the agent's answer must do; the case passes "
            "when all pass.",
            "env": "Optional values the case's conversation gets (an order id, a customer's "
            "name), as an agent's env values.",
            "notes": "For you: why this case exists.",
        }
        # Not Django's JSONField: a lone surrogate typed as an escape is refused in words and
        # shown back as typed (re-encoding it into the page was a 500).
        field_classes = {
            "messages": PrettyJSONField,
            "checks": PrettyJSONField,
            "env": PrettyJSONField,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agents = list(Agent.objects.order_by("name").values_list("name", flat=True))
        self.fields["messages"].widget = _builder("messages")
        self.fields["checks"].widget = _builder(
            "checks", agents=agents, stop_reasons=stop_reason_choices()
        )
        self.fields["env"].widget = _builder("env")
        for name in ("messages", "checks", "env"):
            field = self.fields[name]
            field.error_messages["invalid"] = (
                "This could not be read. Reload the page and enter it again."
            )
        self.fields["messages"].error_messages["required"] = (
            "Add the person's message: what the case asks the agent."
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for name, problems in (
            ("messages", message_problems),
            ("checks", check_problems),
            ("env", env_problems),
        ):
            if name in data and name not in self.errors:
                value = data[name] if data[name] is not None else ([] if name != "env" else {})
                data[name] = value
                for problem in problems(value):
                    self.add_error(name, problem)
        return data


PIN_LINE = re.compile(r"^\s*([A-Za-z0-9_./:\-]+)\s*(?:=|:|\s+v(?:ersion)?\s*)\s*(\d+)\s*$")


def parse_pins(text: str) -> dict[str, int]:
    """``support-prompt = 4`` per line (or ``prompts/support-prompt: 4``, ``… v4``, or the
    API's JSON object) → ``{"support-prompt": 4}``; kinds are resolved against the agent when
    the run starts (``services.evals.pins``)."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValidationError("Write one version per line, like support-prompt = 4.") from None
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int) for k, v in value.items()
        ):
            return value
        raise ValidationError("Write one version per line, like support-prompt = 4.")
    pins: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        found = PIN_LINE.match(line)
        if found is None:
            raise ValidationError(
                f"Line {number} (“{line.strip()}”): write a name, “=” and a version number, "
                "like support-prompt = 4."
            )
        pins[found.group(1)] = int(found.group(2))
    return pins


class RunForm(forms.ModelForm):
    agent = forms.ChoiceField(choices=())
    pins = forms.CharField(
        required=False,
        label="Versions",
        help_text="Leave empty to run everything at its newest version. To try older ones, "
        "write one per line: a prompt's, model's or agent's name, “=” and its version number, "
        "like support-prompt = 4 (each definition's Versions page lists its numbers).",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 50}),
    )

    class Meta:
        model = EvalRun
        fields = ("dataset", "agent", "label", "concurrency")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.fields["agent"]
        assert isinstance(agent, forms.ChoiceField)
        agent.choices = [(a, a) for a in Agent.objects.values_list("name", flat=True)]

    def clean_pins(self) -> dict[str, int]:
        return parse_pins(self.cleaned_data.get("pins") or "")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        agent, pins = data.get("agent"), data.get("pins")
        if agent and pins:
            # The run checks them again when it starts; here the reason lands on the field.
            try:
                data["pins"] = eval_pins.resolve(agent, pins)
                definition_versions.pins_at(agent, data["pins"])
            except DomainError as exc:
                why = exc.message.removeprefix("versions: ")
                self.add_error("pins", why[:1].upper() + why[1:] + ".")
        return data
