"""The agent form: general settings, two sides and "as a tool", validated as one definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.html import format_html

from agents_app.forms.agent_subagents import (
    SIDES,
    SubagentFormSet,
    route_subagent_errors,
    side_formset,
)
from agents_app.forms.definition_check import (
    DefinitionForm,
    DefinitionRowsFormSet,
    ErrorRoutes,
    without_none,
)
from agents_app.forms.fields import CommaSeparatedField, LinesField, SuggestionsInput
from agents_app.forms.suggestions import callable_names, handler_names, hooks_help
from agents_app.models import Agent
from agents_app.models.agents import AgentState, ToolActivity
from runtime.core.spec import MAX_SESSION_TURNS_CAP, AgentDefinition
from runtime.definitions.validation import DefinitionError

_NEEDS_0_2 = "%s needs spec 0.2.0: choose it under Spec (max session turns then counts exchanges)."

SIDE_FIELDS = ("label", "prompt", "handler", "stop_on_response", "stop_tool", "stop_tool_response_property",
               "max_steps", "max_turns", "end_session_tool")  # fmt: skip


def _side_help(side: str) -> dict[str, str]:
    """Help texts of one side: each stop condition explained next to its field."""
    who = "Side A (the AI)" if side == "a" else "Side B (the second AI)"
    return {
        f"side_{side}_label": "A name for this side shown in conversations (optional).",
        f"side_{side}_prompt": f"The prompt {who} runs on: its instructions, model and tools.",
        f"side_{side}_handler": "Spec 0.2.0: code takes this side's turns instead of a model "
        "(a side handler, defined in code under agents/handlers/): it is handed each message the "
        "side receives, once. Leave Prompt empty and the stop conditions below unset.",
        f"side_{side}_stop_on_response": "End this side's turn as soon as the model answers "
        "with text and calls no tool. Untick to let it keep working until another stop "
        "condition below is met.",
        f"side_{side}_stop_tool": "End the turn when the model calls this tool. Requires the "
        "response property below.",
        f"side_{side}_stop_tool_response_property": "Which property of the stop tool's "
        "result holds the outcome of the turn. Required when a stop tool is set.",
        f"side_{side}_max_steps": "How many steps this side may take in one session (a step "
        "is one model request plus the tools it called). When they are used its turn ends "
        "(in an AI ↔ human agent: the reply ends); in an AI ↔ AI session each later turn of "
        "this "
        "side is one step. Empty: no limit. Must be 1 or more.",
        f"side_{side}_max_turns": "How many turns this side may take: in an AI ↔ AI "
        "session, after that many turns it takes no more; in an AI ↔ human agent, counted "
        "over the whole "
        "conversation. Empty: no limit. Must be 1 or more.",
        f"side_{side}_end_session_tool": "End the whole session (not only the turn) when the "
        "model calls this tool.",
    }


def subagents_summary(stored: list[dict[str, Any]]) -> str:
    """A side's stored relationships in one line of plain text (escaped where rendered)."""
    parts = []
    for r in stored:
        name, agent = r.get("as") or r.get("agent"), r.get("agent")
        options = [k for k in ("blocking", "immediate", "hidden") if r.get(k) is True]
        if r.get("maxInstances"):
            options.append(f"max {r['maxInstances']}")
        head = f"{name} → {agent}" if name != agent else str(agent)
        parts.append(head + (f" ({', '.join(options)})" if options else ""))
    return "; ".join(parts)


def _side_labels(side: str) -> dict[str, str]:
    return {
        f"side_{side}_label": "Label",
        f"side_{side}_prompt": "Prompt",
        f"side_{side}_handler": "Handler",
        f"side_{side}_stop_on_response": "Stop on response",
        f"side_{side}_stop_tool": "Stop tool",
        f"side_{side}_stop_tool_response_property": "Stop tool response property",
        f"side_{side}_max_steps": "Max steps",
        f"side_{side}_max_turns": "Max turns",
        f"side_{side}_end_session_tool": "End session tool",
    }


class AgentForm(DefinitionForm):
    definition_model = AgentDefinition

    human_side = forms.ChoiceField(
        label="The person",
        choices=[
            ("b", "Side B: the AI (side A) answers the person"),
            ("a", "Side A: the person writes first, the AI answers as side B (spec 0.2.0)"),
        ],
        initial="b",
        required=False,
        help_text="For AI ↔ human agents: which side the person takes. On side A, side B "
        "below is the AI.",
    )
    tags = CommaSeparatedField(label="Tags", help_text="Separate tags with commas.")
    hooks = CommaSeparatedField(label="Hooks")
    feedback_reasons = LinesField(
        label="Feedback reasons",
        help_text="Reasons a person can pick when rating a reply in the chat, one per line "
        "(up to 20). Empty: a rating with a free comment only.",
    )
    tool_activity = forms.ChoiceField(
        label="Tool activity in the chat",
        choices=[("", "Default: one line per call, everything for staff"), *ToolActivity.choices],
        required=False,
        help_text="What people chatting with this agent see of its tool calls: nothing, a "
        "line per call (“Used lookup order”), or each call's arguments and result.",
    )

    class Meta:
        model = Agent
        fields = [
            "name",
            "title",
            "type",
            "spec_version",
            "description",
            "icon",
            "tags",
            "hooks",
            "feedback_reasons",
            "mid_run_messages",
            "state",
            "audience_groups",
            "primary",
            "max_session_turns",
            *(f"side_a_{f}" for f in SIDE_FIELDS),
            *(f"side_b_{f}" for f in SIDE_FIELDS),
            "expose_as_tool",
            "tool_description",
        ]
        labels = {
            **_side_labels("a"),
            **_side_labels("b"),
            "type": "Type",
            "spec_version": "Spec",
            "primary": "In the chat's agent picker",
            "max_session_turns": "Max session turns",
            "mid_run_messages": "Messages during a session",
            "expose_as_tool": "Expose as a tool",
            "state": "State",
            "audience_groups": "Audience",
        }
        help_texts = {
            **_side_help("a"),
            **_side_help("b"),
            "name": "How prompts and the API refer to this agent. Letters, digits, '_', '-' "
            "and '.'.",
            "title": "A human-friendly name shown in lists.",
            "type": "AI ↔ human: a person talks to side A. AI ↔ AI: side A and side B talk "
            "to each other; side B below is then required.",
            "icon": "An absolute path starting with '/' or an http(s) URL.",
            "spec_version": "The Standard Agents generation this agent is written in. 0.1.0: "
            "max session turns counts turns, on AI ↔ AI agents only. 0.2.0 (the reference's "
            "current one): it counts exchanges (a turn of each side, a person's message "
            "included) on every agent, and allows a person on side A and agents left out of "
            "the picker.",
            "primary": "Untick for an agent only other agents hand off to or start (spec "
            "0.2.0): the chat's picker leaves it out; threads and prompts still reach it.",
            "max_session_turns": "End a session after this many turns (spec 0.1.0: a turn "
            "is one side finishing its work; AI ↔ AI only) or exchanges (spec 0.2.0: a turn "
            f"of each side, on any agent). Empty: {MAX_SESSION_TURNS_CAP} in 0.1.0, none in "
            f"0.2.0. Values above {MAX_SESSION_TURNS_CAP} are capped at "
            f"{MAX_SESSION_TURNS_CAP} (a hard maximum).",
            "mid_run_messages": "What a message posted while a session runs does: read at "
            "the next step (default), wait and run as a new turn after the session, stop the "
            "session (keeping what it wrote) and answer it, or be refused (the person is told to "
            "send it again once the reply is complete; API clients get HTTP 409).",
            "state": "A draft is for staff only: try it under Try this agent on this page while "
            "people using the chat don't see it. Publish it when it is ready.",
            "audience_groups": "Who sees this agent in the chat once published. None ticked: "
            "everyone who can sign in. Ticked: members of those groups only (staff always "
            "see every agent). Groups are under Authentication › Groups.",
            "expose_as_tool": "Let prompts call this agent as a tool (a handoff or subagent).",
            "tool_description": "Required when exposed as a tool: tells the calling model what "
            "this agent does and when to use it.",
        }
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "audience_groups": forms.CheckboxSelectMultiple,
            "tool_description": forms.Textarea(attrs={"rows": 3}),
            **{
                f"side_{s}_{f}": SuggestionsInput(callable_names)
                for s in ("a", "b")
                for f in ("stop_tool", "end_session_tool")
            },
            **{f"side_{s}_handler": SuggestionsInput(handler_names) for s in ("a", "b")},
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.instance.pk and "state" not in (kwargs.get("initial") or {}):
            # A new agent starts as a draft: staff try it before the chat offers it to anyone
            # (the model's default, published, is what a definition file without a state means).
            self.initial["state"] = AgentState.DRAFT
        if self.instance.pk:  # a declared field: Django fills only model fields from the row
            self.fields["tool_activity"].initial = self.instance.tool_activity
            self.fields["human_side"].initial = "a" if self.instance.side_a_human else "b"
        # Each side's relationships as rows (templates/admin/agents_app/agent/subagents.html).
        self.subagent_sets: dict[str, SubagentFormSet] = {
            s: side_formset(s, self.data if self.is_bound else None, self._stored_subagents(s))
            for s in SIDES
        }
        for s in SIDES:
            stored = self._stored_subagents(s)
            if stored and f"side_{s}_prompt" in self.fields:  # not on a view-only page
                field = self.fields[f"side_{s}_prompt"]
                field.help_text = format_html(
                    "{} Subagents of this side (spec 0.2.0; edited under Subagents of side "
                    "{} below): {}",
                    field.help_text,
                    s.upper(),
                    subagents_summary(stored),
                )
        self.fields["hooks"].help_text = hooks_help(
            "Code hooks that run for this agent's prompts that list none of their own (a "
            "prompt's hooks replace the agent's); hooks none of its prompts would run are refused."
        )

    def _stored_subagents(self, side: str) -> list[dict[str, Any]]:
        return list(getattr(self.instance, f"side_{side}_subagents", None) or [])

    def subagents_enabled(self) -> bool:
        """Whether the page offers the rows: spec 0.2.0 as the form shows it now."""
        if "spec_version" not in self.fields:  # a view-only page: as stored
            return bool(self.instance.spec_version == Agent.Spec.V0_2)
        return bool(self["spec_version"].value() == Agent.Spec.V0_2)

    def subagents_in_words(self) -> dict[str, str]:
        """Each side's stored relationships in words, for a page that may only view them."""
        return {s: subagents_summary(self._stored_subagents(s)) or "None" for s in SIDES}

    def _subagents(self, side: str) -> list[dict[str, Any]] | None:
        """The side's relationships: the posted rows, or the stored ones when none were
        posted. Validated with the rest, so a side that becomes a person's is refused while
        it has some; posted rows on a 0.1.0 agent are refused by ``extra_errors``."""
        formset = self.subagent_sets[side]
        if not formset.posted:
            return self._stored_subagents(side) or None
        if self.cleaned_data.get("spec_version") != Agent.Spec.V0_2:
            return None
        return formset.relationships() or None

    def clean(self) -> dict[str, Any]:
        # Rows are well-formed before the definition rules run, as the form's own fields are.
        for side, formset in self.subagent_sets.items():
            if formset.posted and not formset.is_valid():
                self.add_error(
                    None,
                    f"Side {side.upper()}'s subagents: correct the rows marked under "
                    f"Subagents of side {side.upper()}.",
                )
        return super().clean()

    def locate_errors(
        self, errors: list[DefinitionError], defn: Any, catalog: Any
    ) -> list[DefinitionError]:
        return route_subagent_errors(errors, self.subagent_sets)

    def _side(self, side: str) -> dict[str, Any] | None:
        cd = self.cleaned_data
        prompt = cd.get(f"side_{side}_prompt")
        handler = cd.get(f"side_{side}_handler") or None
        if handler is not None:
            return self._coded(side, handler)
        if prompt is None:
            return None
        return without_none(
            {
                "prompt": prompt.name,
                "label": cd.get(f"side_{side}_label") or None,
                "stopOnResponse": cd.get(f"side_{side}_stop_on_response"),
                "stopTool": cd.get(f"side_{side}_stop_tool") or None,
                "stopToolResponseProperty": cd.get(f"side_{side}_stop_tool_response_property")
                or None,
                "maxSteps": cd.get(f"side_{side}_max_steps"),
                "maxTurns": cd.get(f"side_{side}_max_turns"),
                "endSessionTool": cd.get(f"side_{side}_end_session_tool") or None,
                "subagents": self._subagents(side),
            }
        )

    def _coded(self, side: str, handler: str) -> dict[str, Any]:
        """A handler's side: the handler, its label, and whatever else was filled in
        (validation says a handler's side takes none of it, rather than dropping it)."""
        cd = self.cleaned_data
        prompt = cd.get(f"side_{side}_prompt")
        filled = {
            "prompt": prompt.name if prompt is not None else None,
            "stopTool": cd.get(f"side_{side}_stop_tool") or None,
            "stopToolResponseProperty": cd.get(f"side_{side}_stop_tool_response_property") or None,
            "maxSteps": cd.get(f"side_{side}_max_steps"),
            "maxTurns": cd.get(f"side_{side}_max_turns"),
            "endSessionTool": cd.get(f"side_{side}_end_session_tool") or None,
            "label": cd.get(f"side_{side}_label") or None,
            "subagents": self._subagents(side),
        }
        if cd.get(f"side_{side}_stop_on_response") is False:
            filled["stopOnResponse"] = False
        return without_none({**filled, "handler": handler})

    def _person(self, side: str) -> dict[str, Any]:
        """A person's side: its label, and whatever else was filled in (validation says a
        person's side takes none of it, rather than dropping it)."""
        filled = self._side(side) or {"subagents": self._subagents(side)}
        if filled.get("stopOnResponse") is True:
            filled.pop("stopOnResponse")
        label = self.cleaned_data.get(f"side_{side}_label") or None
        return without_none({**filled, "human": True, "label": label})

    def _shape(self) -> dict[str, Any]:
        """Who is on each side, written in the agent's spec generation."""
        cd = self.cleaned_data
        kind = cd.get("type")
        if cd.get("spec_version") != Agent.Spec.V0_2:
            return {
                "type": kind,
                "sideA": self._side("a") or {"prompt": ""},
                "sideB": self._side("b"),
            }
        if kind == Agent.Type.AI_HUMAN and cd.get("human_side") == "a":
            return {"sideA": self._person("a"), "sideB": self._side("b") or {"prompt": ""}}
        if kind == Agent.Type.AI_HUMAN:
            return {"sideA": self._side("a") or {"prompt": ""}, "sideB": self._person("b")}
        return {
            "sideA": self._side("a") or {"prompt": ""},
            "sideB": self._side("b") or {"prompt": ""},
        }

    def extra_errors(self, rows: Mapping[str, DefinitionRowsFormSet]) -> list[DefinitionError]:
        cd = self.cleaned_data
        if cd.get("spec_version") == Agent.Spec.V0_2:
            return []
        errors = []
        if cd.get("type") == Agent.Type.AI_HUMAN and cd.get("human_side") == "a":
            errors.append(DefinitionError("humanSide", _NEEDS_0_2 % "A person on side A"))
        if cd.get("primary") is False:
            errors.append(DefinitionError("primary", _NEEDS_0_2 % "Leaving it out of the picker"))
        for side in ("a", "b"):
            if cd.get(f"side_{side}_handler"):
                path = f"side{side.upper()}.handler"
                errors.append(DefinitionError(path, _NEEDS_0_2 % "A handler on a side"))
            formset = self.subagent_sets[side]
            if formset.posted and formset.relationships():
                path = f"side{side.upper()}.subagents"
                errors.append(DefinitionError(path, _NEEDS_0_2 % "Starting subagents from a side"))
        return route_subagent_errors(errors, self.subagent_sets)

    def definition_data(self, rows: Mapping[str, DefinitionRowsFormSet]) -> dict[str, Any]:
        cd = self.cleaned_data
        v0_2 = cd.get("spec_version") == Agent.Spec.V0_2
        # Env values (tenvs) are left out: no rule reads them, and secrets stay sealed.
        return without_none(
            {
                "name": cd.get("name"),
                "title": cd.get("title") or None,
                **self._shape(),
                "primary": cd.get("primary") if v0_2 else None,
                "maxSessionTurns": cd.get("max_session_turns"),
                "exposeAsTool": cd.get("expose_as_tool"),
                "toolDescription": cd.get("tool_description") or None,
                "toolActivity": cd.get("tool_activity") or None,
                "description": cd.get("description") or None,
                "icon": cd.get("icon") or None,
                "tags": cd.get("tags") or None,
                "hooks": cd.get("hooks") or None,
                "feedbackReasons": cd.get("feedback_reasons") or None,
                "midRunMessages": cd.get("mid_run_messages") or None,
                "state": cd.get("state") or None,
                "audience": sorted(g.name for g in cd.get("audience_groups") or []) or None,
            }
        )

    def error_routes(self, rows: Mapping[str, DefinitionRowsFormSet]) -> ErrorRoutes:
        return ErrorRoutes(
            fields={
                "sideA": "side_a_prompt",
                "sideB": "side_b_prompt",
                "sideA.human": "human_side",
                "sideB.human": "human_side",
                "sideA.handler": "side_a_handler",
                "sideB.handler": "side_b_handler",
            }
        )
