"""Version pins chosen from a list on the eval run form (issue #55): a select per definition
the chosen agent uses, each offering "current" and its recorded versions. A plain form: the
selects post ``version:<kind>/<name>`` fields, read back here, and a button lists another
agent's definitions (``static/studio/eval_pins.js`` presses it when the agent changes, so
without JavaScript the form works the same, one click slower)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents_app.pages.eval_pin_choices import PinChoice

PREFIX = "version:"  # a select's name: "version:prompts/support-prompt"
AGENT_FIELD = "versions_agent"  # which agent the selects were listed for
LIST_BUTTON = "_list_versions"


class Listed(TypedDict):
    agent: str
    pins: dict[str, str]


class PinSelects(forms.Widget):
    """One ``<select>`` per definition of ``choices``, "current" first."""

    def __init__(self, agent: str = "", choices: Sequence[PinChoice] = ()) -> None:
        super().__init__()
        self.agent = agent
        self.choices = list(choices)

    def value_from_datadict(self, data: Mapping[str, Any], files: Any, name: str) -> Listed:
        pins = {k.removeprefix(PREFIX): str(v) for k, v in data.items() if k.startswith(PREFIX)}
        return {"agent": str(data.get(AGENT_FIELD, "")), "pins": pins}

    def value_omitted_from_data(self, data: Mapping[str, Any], files: Any, name: str) -> bool:
        return False

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> SafeString:
        chosen = (value or {}).get("pins", {}) if isinstance(value, dict) else {}
        rows = format_html_join(
            "",
            '<div class="eval-pin"><label for="id_pin_{}">{}</label>'
            '<select id="id_pin_{}" name="{}">{}</select></div>',
            (
                (n, c.label, n, PREFIX + c.key, self._options(c, chosen.get(c.key, "")))
                for n, c in enumerate(self.choices)
            ),
        )
        return format_html(
            '<div class="eval-pins" data-eval-pins>'
            '<input type="hidden" name="{}" value="{}">'
            '<p class="studio-quiet">What agent <strong>{}</strong> uses, each at the '
            "version to run; “current” is what is saved now.</p>{}"
            '<p class="eval-pins-list"><button type="submit" class="button" name="{}" '
            'value="1">List what the chosen agent uses</button></p></div>',
            AGENT_FIELD,
            self.agent,
            self.agent,
            rows,
            LIST_BUTTON,
        )

    @staticmethod
    def _options(choice: PinChoice, chosen: str) -> SafeString:
        options = [("", choice.current), *((str(n), words) for n, words in choice.versions)]
        return format_html_join(
            "",
            '<option value="{}"{}>{}</option>',
            ((v, " selected" if v == chosen else "", words) for v, words in options),
        )


class PinListField(forms.Field):
    """The selects' value: the agent they were listed for and each ``kind/name``'s choice."""

    widget = PinSelects

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> Listed:
        if not isinstance(value, dict):
            return {"agent": "", "pins": {}}
        return {"agent": value.get("agent", ""), "pins": dict(value.get("pins") or {})}


def chosen_numbers(listed: Listed, labels: Mapping[str, str]) -> tuple[dict[str, int], list[str]]:
    """The versions chosen (``"current"`` left out) and a sentence per value that is not one."""
    numbers: dict[str, int] = {}
    problems = []
    for key, raw in listed["pins"].items():
        if not raw.strip():
            continue
        if raw.strip().isdigit():
            numbers[key] = int(raw)
        else:
            problems.append(f"{labels.get(key, key)}: choose a version from its list.")
    return numbers, problems
