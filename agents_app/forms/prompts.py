"""The prompt form, its ordered parts and its tool entries, validated as one definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from agents_app.forms.definition_check import (
    DefinitionForm,
    DefinitionRowsFormSet,
    ErrorRoutes,
    OrderedRowForm,
    RowsTarget,
    row_data,
    without_none,
)
from agents_app.forms.fields import (
    CommaSeparatedField,
    DefaultYesNoSelect,
    KeyValueLinesField,
    PrettyJSONField,
    SuggestionsInput,
)
from agents_app.forms.suggestions import callable_names, hooks_help
from agents_app.models import Prompt, PromptPart, PromptTool
from agents_app.services.definitions.rows import prompt_definition
from runtime.core.spec import PromptDefinition, PromptIncludePart
from runtime.definitions.validation import Catalog, DefinitionError, find_cycle

TEXT_OR_PARTS = (
    "Use either the system prompt text or the parts below, not both: move the text into a "
    "text part, or delete the parts."
)


class PromptForm(DefinitionForm):
    definition_model = PromptDefinition

    required_schema = PrettyJSONField(
        label="Required schema",
        help_text="When this prompt is called as a tool: a JSON Schema object describing its "
        'arguments, for example {"type": "object", "properties": {"question": '
        '{"type": "string"}}, "required": ["question"]}. Leave empty for no arguments.',
    )
    response_schema = PrettyJSONField(
        label="Response schema",
        help_text="Structured output: a JSON Schema object the model's final answer must "
        'match, for example {"type": "object", "properties": {"city": {"type": "string"}}, '
        '"required": ["city"]}. The answer is checked; a wrong one is retried once, then the '
        "message fails. Leave empty for a free-text answer.",
    )
    hooks = CommaSeparatedField(label="Hooks")
    reasoning_effort = forms.ChoiceField(
        required=False,
        label="Reasoning effort",
        choices=[
            ("", "Not set (provider default)"),
            ("low", "Low"),
            ("medium", "Medium"),
            ("high", "High"),
        ],
        help_text="How much the model thinks before answering (reasoning models only).",
    )
    reasoning_max_tokens = forms.IntegerField(
        required=False,
        label="Max reasoning tokens",
        help_text="Upper limit of tokens spent on reasoning. Empty: no limit set.",
    )
    reasoning_exclude = forms.BooleanField(
        required=False,
        label="Exclude reasoning from the response",
        help_text="The model reasons but its reasoning is not returned.",
    )
    reasoning_include = forms.BooleanField(
        required=False,
        label="Send earlier reasoning back",
        help_text="Replay this prompt's stored reasoning to the model in later steps.",
    )

    class Meta:
        model = Prompt
        fields = [
            "name",
            "model",
            "tool_description",
            "text",
            "include_chat",
            "include_past_tools",
            "recent_image_threshold",
            "tool_choice",
            "parallel_tool_calls",
            "required_schema",
            "response_schema",
            "hooks",
            "step_budget_warning",
        ]
        labels = {
            "model": "Model",
            "text": "System prompt",
            "include_chat": "Include the conversation",
            "include_past_tools": "Include past tool calls",
            "recent_image_threshold": "Recent image threshold",
            "parallel_tool_calls": "Parallel tool calls",
            "step_budget_warning": "Step budget warning",
        }
        help_texts = {
            "name": "How agents and other prompts refer to this prompt. Letters, digits, "
            "'_', '-' and '.'.",
            "model": "The model that answers this prompt.",
            "tool_description": "When another prompt may call this one as a tool: what it "
            "does, so the calling model knows when to use it.",
            "text": "The instructions sent to the model. Leave empty when you build the prompt "
            "from parts below (text, other prompts, env values).",
            "recent_image_threshold": "Images in this many most recent messages are sent to the "
            "model; older ones are described in words.",
            "tool_choice": "Whether the model may, must or must not call tools.",
        }
        widgets = {
            "parallel_tool_calls": DefaultYesNoSelect("Provider default"),
            "tool_description": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["hooks"].help_text = hooks_help("Code hooks that run for this prompt.")
        reasoning = self.instance.reasoning or {}
        self.fields["reasoning_effort"].initial = reasoning.get("effort") or ""
        self.fields["reasoning_max_tokens"].initial = reasoning.get("maxTokens")
        self.fields["reasoning_exclude"].initial = bool(reasoning.get("exclude"))
        self.fields["reasoning_include"].initial = bool(reasoning.get("include"))

    # --- the definition ---------------------------------------------------------

    def _parts(self, rows: Mapping[str, DefinitionRowsFormSet]) -> list[dict[str, Any]]:
        if "parts" in rows:
            return [_part(f) for f in rows["parts"].rows()]
        stored = prompt_definition(self.instance).prompt if self.instance.pk else ""
        return [p.dump() for p in stored] if isinstance(stored, list) else []

    def _tools(self, rows: Mapping[str, DefinitionRowsFormSet]) -> list[Any]:
        if "tools" in rows:
            return [_tool(f) for f in rows["tools"].rows()]
        stored = prompt_definition(self.instance).tools if self.instance.pk else None
        return [t if isinstance(t, str) else t.dump() for t in stored or []]

    def _reasoning(self) -> dict[str, Any] | None:
        cd = self.cleaned_data
        reasoning = without_none(
            {
                "effort": cd.get("reasoning_effort") or None,
                "maxTokens": cd.get("reasoning_max_tokens"),
                # An unticked box means "not set", the definition default.
                "exclude": cd.get("reasoning_exclude") or None,
                "include": cd.get("reasoning_include") or None,
            }
        )
        return reasoning or None

    def definition_data(self, rows: Mapping[str, DefinitionRowsFormSet]) -> dict[str, Any]:
        cd = self.cleaned_data
        model = cd.get("model")
        parts = self._parts(rows)
        return without_none(
            {
                "name": cd.get("name"),
                "toolDescription": cd.get("tool_description", ""),
                "prompt": parts or cd.get("text", ""),
                "model": model.name if model else None,
                "includeChat": cd.get("include_chat"),
                "includePastTools": cd.get("include_past_tools"),
                "parallelToolCalls": cd.get("parallel_tool_calls"),
                "toolChoice": cd.get("tool_choice"),
                "requiredSchema": cd.get("required_schema"),
                "responseSchema": cd.get("response_schema"),
                "tools": self._tools(rows) or None,
                "reasoning": self._reasoning(),
                "recentImageThreshold": cd.get("recent_image_threshold"),
                "hooks": cd.get("hooks") or None,
                "stepBudgetWarning": cd.get("step_budget_warning"),
            }
        )

    def extra_errors(self, rows: Mapping[str, DefinitionRowsFormSet]) -> list[DefinitionError]:
        # A definition's prompt is text *or* parts, so it cannot express both being filled in.
        if not (self.cleaned_data.get("text") or "").strip() or not self._parts(rows):
            return []
        errors = [DefinitionError("text", TEXT_OR_PARTS)]
        if "parts" in rows:
            errors.append(DefinitionError("prompt", TEXT_OR_PARTS))
        return errors

    def locate_errors(
        self, errors: list[DefinitionError], defn: Any, catalog: Catalog
    ) -> list[DefinitionError]:
        """Put an include cycle on the include rows that close it."""
        if not isinstance(defn.prompt, list):
            return errors
        out: list[DefinitionError] = []
        for e in errors:
            if e.path != "prompt":
                out.append(e)
                continue
            closing = [
                i
                for i, part in enumerate(defn.prompt)
                if isinstance(part, PromptIncludePart)
                and find_cycle(defn.name, {**catalog.prompt_includes, defn.name: [part.prompt]})
            ]
            out += [DefinitionError(f"prompt.{i}.prompt", e.message) for i in closing] or [e]
        return out

    def error_routes(self, rows: Mapping[str, DefinitionRowsFormSet]) -> ErrorRoutes:
        targets: dict[str, RowsTarget] = {}
        fields = {}
        if "parts" in rows and rows["parts"].rows():
            targets["prompt"] = RowsTarget(
                rows["parts"],
                rows["parts"].rows(),
                fields={"prompt": "include", "property": "env_key"},
            )
        else:
            fields["prompt"] = "text"
        if "tools" in rows:
            targets["tools"] = RowsTarget(rows["tools"], rows["tools"].rows(), default_field="name")
        return ErrorRoutes(fields=fields, rows=targets)

    def save(self, commit: bool = True) -> Any:
        d: PromptDefinition | None = self.definition
        if d is not None:
            # Stored exactly as services.definitions.rows.prompt_from_definition stores it.
            self.instance.reasoning = d.reasoning.dump() if d.reasoning else None
        return super().save(commit)


def _part(form: forms.BaseForm) -> dict[str, Any]:
    kind = form.cleaned_data["type"]
    if kind == PromptPart.Kind.INCLUDE:
        return {"type": "include", "prompt": form.cleaned_data["include"].name}
    if kind == PromptPart.Kind.ENV:
        return {"type": "env", "property": form.cleaned_data["env_key"]}
    return {"type": "text", "content": form.cleaned_data.get("content", "")}


def _tool(form: forms.BaseForm) -> dict[str, Any]:
    cd = form.cleaned_data
    resumable = (
        without_none(
            {
                "receivesMessages": cd.get("receives_messages"),
                "maxInstances": cd.get("max_instances"),
            }
        )
        if cd.get("resumable")
        else None
    )
    return without_none(
        {
            "name": cd.get("name"),
            "includeTextResponse": cd.get("include_text_response"),
            "includeToolCalls": cd.get("include_tool_calls"),
            "includeErrors": cd.get("include_errors"),
            "initUserMessageProperty": row_data(form, "init_user_message_property"),
            "initAttachmentsProperty": row_data(form, "init_attachments_property"),
            "initAgentNameProperty": row_data(form, "init_agent_name_property"),
            "env": cd.get("env"),
            "optional": row_data(form, "optional"),
            "immediate": cd.get("immediate"),
            "blocking": cd.get("blocking"),
            "resumable": resumable,
            "requiresApproval": cd.get("requires_approval"),
            "client": cd.get("client"),
            "waitTimeoutSeconds": cd.get("wait_timeout_seconds"),
            "options": cd.get("options"),
        }
    )


class PromptPartForm(OrderedRowForm):
    class Meta:
        model = PromptPart
        fields = ["order", "type", "content", "include", "env_key"]
        labels = {
            "type": "Kind",
            "content": "Text",
            "include": "Included prompt",
            "env_key": "Env value name",
        }
        help_texts = {
            "content": "For a text part.",
            "include": "For an include part: this prompt's text is inserted here.",
            "env_key": "For an env part: the value's name, e.g. COMPANY_NAME (empty when unset).",
        }
        widgets = {"content": forms.Textarea(attrs={"rows": 3, "cols": 60})}

    def clean(self) -> dict[str, Any]:
        super().clean()
        cd = self.cleaned_data
        kind = cd.get("type")
        # Only the field of the chosen kind is kept, so stale input never lingers in the row.
        if kind == PromptPart.Kind.INCLUDE:
            if not cd.get("include"):
                self.add_error("include", "Choose the prompt to include.")
            cd["content"], cd["env_key"] = "", ""
        elif kind == PromptPart.Kind.ENV:
            if not (cd.get("env_key") or "").strip():
                self.add_error("env_key", "Enter the name of the env value to insert.")
            cd["content"], cd["include"] = "", None
        elif kind == PromptPart.Kind.TEXT:
            cd["include"], cd["env_key"] = None, ""
        return cd


class PromptPartFormSet(DefinitionRowsFormSet):
    """The system prompt built from parts, in order."""

    role = "parts"


class PromptToolForm(OrderedRowForm):
    env = KeyValueLinesField(
        label="Env for the tool",
        help_text="Values the tool sees, one NAME=value per line. Never a secret in clear: "
        "write STRIPE_SECRET_KEY=${STRIPE_LIVE} and keep STRIPE_LIVE as a secret env value.",
    )
    options = PrettyJSONField(
        label="Tool options",
        help_text="A provider tool's options, a JSON object in the vendor's names, for example "
        '{"max_uses": 3, "allowed_domains": ["example.com"]} for Anthropic web_search '
        "(GET /api/providers/NAME/tools lists each tool's options); or, for a knowledge:NAME "
        'tool, {"retrieve": {"topK": 4, "maxTokens": 1000}} to search the base before every '
        "answer (docs/knowledge.md).",
        widget=forms.Textarea(attrs={"rows": 3, "class": "studio-code"}),
    )

    class Meta:
        model = PromptTool
        fields = [
            "order",
            "name",
            "include_text_response",
            "include_tool_calls",
            "include_errors",
            "init_user_message_property",
            "init_attachments_property",
            "init_agent_name_property",
            "optional",
            "immediate",
            "blocking",
            "resumable",
            "receives_messages",
            "max_instances",
            "env",
            "requires_approval",
            "client",
            "wait_timeout_seconds",
            "options",
        ]
        labels = {
            "name": "Tool",
            "include_text_response": "Include its text response",
            "include_tool_calls": "Include its tool calls",
            "include_errors": "Include its errors",
            "init_user_message_property": "User message argument",
            "init_attachments_property": "Attachments argument",
            "init_agent_name_property": "Agent name argument",
            "optional": "Only when env value is true",
            "receives_messages": "Receives messages as",
        }
        help_texts = {
            "name": "A code tool, an MCP server's tool (mcp:SERVER/TOOL), a prompt (runs as "
            "a sub-prompt) or an agent (runs as a subagent). Start typing to see the known names. "
            "Provider-run tools: provider:NAME (for example provider:web_search), when every "
            "model of the prompt's chain offers it.",
            "include_text_response": "Sub-prompts and subagents: return their final text.",
            "include_tool_calls": "Sub-prompts and subagents: return the tool calls they made.",
            "include_errors": "Sub-prompts and subagents: return their errors.",
            "init_user_message_property": "Sub-prompts and subagents: the argument whose value "
            "becomes their first user message.",
            "init_attachments_property": "Sub-prompts and subagents: the argument holding "
            "attachments to pass on.",
            "init_agent_name_property": "Subagents: the argument holding the child's display name.",
            "optional": "Offer this tool only when this env value is true/1/yes. Empty: always.",
            "immediate": "Run the tool as soon as a thread starts.",
            "blocking": "Subagents: wait for the child to finish before continuing.",
            "resumable": "Subagents: keep the child so later calls continue the same thread.",
            "receives_messages": "Resumable subagents: which side of the child gets new messages.",
            "max_instances": "Resumable subagents: how many children may exist at once.",
            "requires_approval": "Code and MCP tools: each call waits for a person to approve "
            "or reject it (the session parks meanwhile).",
            "client": "Code tools: the client runs each call and sends the result back.",
            "wait_timeout_seconds": "How long such a call waits before the model gets a timeout "
            "result. Empty: the instance default.",
        }
        widgets = {
            "name": SuggestionsInput(callable_names, shared_list="studio-tool-names"),
            "immediate": DefaultYesNoSelect(),
            "blocking": DefaultYesNoSelect(),
            "requires_approval": DefaultYesNoSelect(),
            "client": DefaultYesNoSelect(),
        }


class PromptToolFormSet(DefinitionRowsFormSet):
    """The prompt's tools, in the order the model sees them."""

    role = "tools"
