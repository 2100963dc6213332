"""Eval forms for people (issue #55): a case's conversation, checks and env values are edited
as rows (``static/studio/eval_cases.js`` draws them over the JSON, which stays the value the
form posts), and every mistake is a sentence that names the message or the check
("Check 1: the text to look for is required"), never ``checks.0.contains.text: Field
required``. An eval run's versions are chosen from a list (``forms.eval_pins``: a select
per definition the agent uses) or, as an advanced option, written as lines
(``support-prompt = 4``); both end as the same ``{"prompts/support-prompt": 4}``."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from agents_app.base.errors import DomainError
from agents_app.base.people_format import REASONS
from agents_app.forms.eval_pins import Listed, PinListField, PinSelects, chosen_numbers
from agents_app.forms.fields import PrettyJSONField
from agents_app.models import Agent, EvalCase, EvalRun
from agents_app.pages.eval_pin_choices import definitions_of
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


def _sentence(exc: DomainError) -> str:
    why = exc.message.removeprefix("versions: ")
    return why[:1].upper() + why[1:] + "."


class RunForm(forms.ModelForm):
    agent = forms.ChoiceField(choices=())
    pin_list = PinListField(
        label="Versions",
        help_text="Leave each at “current” to run everything as saved now; choose an older "
        "version to try it (each definition's Versions page shows what changed).",
    )
    pins = forms.CharField(
        required=False,
        label="Versions as text (advanced)",
        help_text="Or write them, one per line: a prompt's, model's or agent's name, “=” and "
        "its version number, like support-prompt = 4.",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50}),
    )

    class Meta:
        model = EvalRun
        fields = ("dataset", "agent", "label", "concurrency")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        agent = self.fields["agent"]
        assert isinstance(agent, forms.ChoiceField)
        names = list(Agent.objects.order_by("name").values_list("name", flat=True))
        agent.choices = [(a, a) for a in names]
        # The selects list what the agent on the form uses: the one posted, else the one
        # asked for (``?agent=``), else the first the agent select shows.
        wanted = self.data.get("agent") if self.is_bound else self.initial.get("agent")
        listed = wanted if wanted in names else (names[0] if names else "")
        self.pin_choices = definitions_of(listed) if listed else []
        self.fields["pin_list"].widget = PinSelects(listed, self.pin_choices)

    def clean_pins(self) -> dict[str, int]:
        return parse_pins(self.cleaned_data.get("pins") or "")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        agent = data.get("agent")
        if not agent:
            return data
        from_list = self._listed_pins(agent, data.get("pin_list"))
        from_text: dict[str, int] = {}
        if data.get("pins"):
            # The run checks them again when it starts; here the reason lands on the field.
            try:
                from_text = eval_pins.resolve(agent, data["pins"])
                definition_versions.pins_at(agent, from_text)
            except DomainError as exc:
                self.add_error("pins", _sentence(exc))
        for key in sorted(set(from_list) & set(from_text)):
            if from_list[key] != from_text[key]:
                self.add_error(
                    "pins",
                    f"{key} is version {from_list[key]} in the list and {from_text[key]} "
                    "here: keep one.",
                )
        data["pins"] = {**from_list, **from_text}
        return data

    def _listed_pins(self, agent: str, listed: Listed | None) -> dict[str, int]:
        """The versions chosen in the selects, checked as the text's are."""
        labels = {c.key: c.label for c in self.pin_choices}
        listed = listed or Listed(agent="", pins={})
        numbers, problems = chosen_numbers(listed, labels)
        for problem in problems:
            self.add_error("pin_list", problem)
        if not numbers:
            return {}
        if listed["agent"] != agent:
            self.add_error(
                "pin_list",
                f"These versions were listed for agent {listed['agent']}, not {agent}: "
                "choose them again below.",
            )
            return {}
        try:
            resolved = eval_pins.resolve(agent, numbers)
            definition_versions.pins_at(agent, resolved)
        except DomainError as exc:
            self.add_error("pin_list", _sentence(exc))
            return {}
        return resolved
