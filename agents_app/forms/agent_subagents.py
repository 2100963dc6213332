"""A side's spec 0.2.0 subagents (``sideX.subagents[]``) as ordinary form rows.

The agent form owns one formset per side (prefix ``side_a_subagents`` / ``side_b_subagents``)
and puts its rows into the definition it validates, so the studio stores exactly what import
and the API store for the same relationships (``Definition.dump`` drops unset and default
keys; the rows leave out what is unticked or empty for the same reason). The validator's
paths (``sideA.subagents[0].agent``) are turned into an error on that row's field here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django import forms
from django.forms import BaseFormSet, formset_factory

from agents_app.forms.definition_check import without_none
from agents_app.forms.fields import CommaSeparatedField
from agents_app.models import Agent
from runtime.definitions.validation import DefinitionError

SIDES = ("a", "b")
_SUMMARY_PATH = "subagents"  # a path no form field has: the sentence shows above the form
_PATH = re.compile(r"^side([AB])\.subagents(?:\[(\d+)\]|\.(\d+))?(?:\.(\w+))?$")
# The validator's camelCase keys → this form's field names.
_FIELDS = {
    "agent": "agent",
    "as": "as_name",
    "description": "description",
    "blocking": "blocking",
    "maxInstances": "max_instances",
    "immediate": "immediate",
    "optional": "optional",
    "scopedEnv": "scoped_env",
    "hidden": "hidden",
    "parentCommunication": "parent_communication",
}
PARENT_COMMUNICATION = [
    ("", "Default (implicit)"),
    ("implicit", "Implicit: the child's end is delivered to this side"),
    ("explicit", "Explicit: nothing is delivered; the child's code writes to this side"),
]


def prefix(side: str) -> str:
    return f"side_{side}_subagents"


class SubagentRowForm(forms.Form):
    """One relationship: which agent this side may start as child threads, and how."""

    agent = forms.ChoiceField(
        label="Agent",
        help_text="The agent started as a child thread (agents exposed as a tool).",
    )
    as_name = forms.CharField(
        label="Name (as)",
        required=False,
        max_length=200,
        help_text="What the model calls this relationship when it starts a child. Empty: the "
        "agent's name.",
    )
    description = forms.CharField(
        label="Description",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What the model is told this subagent does. Empty: the agent's tool description.",
    )
    blocking = forms.BooleanField(
        label="Blocking",
        required=False,
        help_text="Wait for the child's result inside the call. Unticked: the result arrives "
        "later as a message.",
    )
    max_instances = forms.IntegerField(
        label="Max instances",
        required=False,
        min_value=1,
        help_text="How many children of this relationship may exist. Empty: no limit.",
    )
    immediate = forms.BooleanField(
        label="Start immediately",
        required=False,
        help_text="Start one child before the model's first step of a new conversation.",
    )
    optional = forms.CharField(
        label="Only when env value",
        required=False,
        max_length=200,
        help_text="An env value's name: the relationship exists only while that value is "
        "true. Empty: always.",
    )
    hidden = forms.BooleanField(
        label="Hidden",
        required=False,
        help_text="Not offered to the model (start it with Start immediately or from code); "
        "its children are left out of the subagents listing.",
    )
    scoped_env = CommaSeparatedField(
        label="Scoped env",
        help_text="Env value names copied from this thread into each child, separated by commas.",
    )
    parent_communication = forms.ChoiceField(
        label="Parent communication",
        required=False,
        choices=PARENT_COMMUNICATION,
    )

    def __init__(self, *args: Any, targets: list[tuple[str, str]], **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")  # labels sit above their fields, as headings
        super().__init__(*args, **kwargs)
        agent = self.fields["agent"]
        assert isinstance(agent, forms.ChoiceField)
        agent.choices = [("", "Choose an agent"), *targets]

    def relationship(self) -> dict[str, Any]:
        """The row as a file would write it: unticked boxes and empty fields left out."""
        cd = self.cleaned_data
        return without_none(
            {
                "agent": cd["agent"],
                "as": cd.get("as_name") or None,
                "description": cd.get("description") or None,
                "blocking": True if cd.get("blocking") else None,
                "maxInstances": cd.get("max_instances"),
                "immediate": True if cd.get("immediate") else None,
                "optional": cd.get("optional") or None,
                "scopedEnv": cd.get("scoped_env") or None,
                "hidden": True if cd.get("hidden") else None,
                "parentCommunication": cd.get("parent_communication") or None,
            }
        )


def row_initial(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A stored relationship as a row's initial values."""
    return {
        "agent": stored.get("agent", ""),
        "as_name": stored.get("as") or "",
        "description": stored.get("description") or "",
        "blocking": stored.get("blocking") is True,
        "max_instances": stored.get("maxInstances"),
        "immediate": stored.get("immediate") is True,
        "optional": stored.get("optional") or "",
        "hidden": stored.get("hidden") is True,
        "scoped_env": list(stored.get("scopedEnv") or []),
        "parent_communication": stored.get("parentCommunication") or "",
    }


class SubagentFormSet(BaseFormSet):
    """One side's rows. ``posted`` is false when the request carried no rows for this side
    (a client that does not know the section): the stored relationships are then kept."""

    side: str = "a"
    posted: bool = True

    def live_rows(self) -> list[SubagentRowForm]:
        """Rows that become relationships, in page order (filled in and not deleted)."""
        return [
            form
            for form in self.forms
            if form.cleaned_data and not (self.can_delete and form.cleaned_data.get("DELETE"))
        ]

    def relationships(self) -> list[dict[str, Any]]:
        return [form.relationship() for form in self.live_rows()]


_RowFormSet = formset_factory(
    SubagentRowForm, formset=SubagentFormSet, extra=1, can_delete=True, can_delete_extra=False
)


def target_choices(stored: Iterable[str]) -> list[tuple[str, str]]:
    """Agents a relationship may start (exposed as a tool), plus any a stored row names, so
    the validator's sentence says what is wrong with it rather than "not a valid choice"."""
    rows = Agent.objects.filter(expose_as_tool=True).order_by("name").values_list("name", "title")
    choices = [(name, f"{title} ({name})" if title else name) for name, title in rows]
    known = {name for name, _ in choices}
    for name in stored:
        if name and name not in known:
            choices.append((name, f"{name} (not exposed as a tool)"))
            known.add(name)
    return choices


def side_formset(
    side: str, data: Mapping[str, Any] | None, stored: list[dict[str, Any]]
) -> SubagentFormSet:
    """The rows of one side: bound to ``data`` when it carries them, else the stored ones."""
    targets = target_choices(r.get("agent", "") for r in stored)
    posted = data is not None and f"{prefix(side)}-TOTAL_FORMS" in data
    formset = _RowFormSet(
        data if posted else None,
        initial=[row_initial(r) for r in stored],
        prefix=prefix(side),
        form_kwargs={"targets": targets},
    )
    assert isinstance(formset, SubagentFormSet)
    formset.side, formset.posted = side, posted
    return formset


def route_subagent_errors(
    errors: list[DefinitionError], sets: Mapping[str, SubagentFormSet]
) -> list[DefinitionError]:
    """Put each error about a posted side's relationships on its row and field, in words.

    Each side with such errors leaves one sentence above the form (the form must stay
    invalid, and people see there that something below needs them); other errors pass.
    """
    out: list[DefinitionError] = []
    flagged: set[str] = set()
    for err in errors:
        match = _PATH.match(err.path)
        side = match.group(1).lower() if match else ""
        formset = sets.get(side)
        if match is None or formset is None or not formset.posted:
            out.append(err)
            continue
        index, key = match.group(2) or match.group(3), match.group(4)
        rows = formset.live_rows()
        if index is not None and int(index) < len(rows):
            row = rows[int(index)]
            # An error about the whole relationship (no key) belongs next to its agent.
            name = _FIELDS.get(key) if key else "agent"
            row.add_error(name, err.message)
        else:
            formset.non_form_errors().append(err.message)
        if side not in flagged:
            flagged.add(side)
            out.append(
                DefinitionError(
                    _SUMMARY_PATH,
                    f"Side {side.upper()}'s subagents: correct the rows marked under "
                    f"Subagents of side {side.upper()}.",
                )
            )
    return out
