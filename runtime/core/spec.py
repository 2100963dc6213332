"""Definition objects exactly as the spec writes them (camelCase on the wire).

These pydantic models are the one shape of an agent, prompt or model definition:
file import/export, the HTTP catalog, the admin studio and the engine all use
them. Python code uses snake_case attributes; ``dump()`` produces the spec's
camelCase JSON with defaults left out, so exported files stay minimal.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

# A provider name: a native adapter, an OpenAI-compatible vendor, a ``define_provider``
# definition or ``test``. Which names exist is known only once code is discovered, so the
# save rules check it (``runtime.definitions.validation.validate_model``), not the shape.
Provider = str
PROVIDERS: tuple[str, ...] = ("openai", "openrouter", "anthropic", "google", "test")
# Tools each provider runs itself are ``provider:<name>`` in a prompt's tools; what each
# vendor offers is ``runtime.providers.offers`` (docs/providers.md#provider-tools).
PROVIDER_TOOL_PREFIX = "provider:"
AgentType = Literal["ai_human", "dual_ai"]
# The two generations of definitions we read (shared/reference/README.md, decision 1): the
# 0.1.0 texts (an agent's ``type``) and the reference's 0.2.0 (each side's backing).
SpecVersion = Literal["0.1.0", "0.2.0"]
SPEC_0_1: SpecVersion = "0.1.0"
SPEC_0_2: SpecVersion = "0.2.0"
SPEC_VERSIONS: tuple[SpecVersion, ...] = (SPEC_0_1, SPEC_0_2)
Backing = Literal["prompt", "human", "handler"]
ToolChoice = Literal["auto", "none", "required"]
MAX_SESSION_TURNS_CAP = 250


class Definition(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True
    )

    def dump(self) -> dict[str, Any]:
        """The spec's camelCase JSON, without unset or default-valued keys."""
        return self.model_dump(by_alias=True, exclude_defaults=True, mode="json")


# --- models -----------------------------------------------------------------


# 0.1.0 capability name → its 0.2.0 name (the reference's, what ``POST /api/models/capabilities``
# answers); either is read, both with different values is refused.
CAPABILITY_ALIASES = {
    "vision": "supportsImages",
    "functionCalling": "supportsToolCalls",
    "structuredOutputs": "supportsJsonMode",
}
# 0.2.0 capabilities 0.1.0 has no name for.
CAPABILITIES_0_2_ONLY = (
    "supportsStreaming",
    "maxContextTokens",
    "maxOutputTokens",
    "reasoningLevels",
)


class ModelCapabilities(Definition):
    # Spec 0.1.0 names.
    vision: bool | None = None
    function_calling: bool | None = None
    structured_outputs: bool | None = None
    # Spec 0.2.0 names.
    supports_images: bool | None = None
    supports_tool_calls: bool | None = None
    supports_streaming: bool | None = None
    supports_json_mode: bool | None = None
    max_context_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    # Reasoning level (0-100) → the model's own effort name, ``null``: no reasoning.
    reasoning_levels: dict[int, str | None] | None = None

    @field_validator("reasoning_levels")
    @classmethod
    def _levels(cls, value: dict[int, str | None] | None) -> dict[int, str | None] | None:
        if value is not None and any(not 0 <= level <= 100 for level in value):
            raise ValueError("reasoning levels are numbers from 0 to 100")
        return value

    @model_validator(mode="after")
    def _one_name_each(self) -> ModelCapabilities:
        written = self.dump()
        for old, new in CAPABILITY_ALIASES.items():
            given = (written.get(old), written.get(new))
            if None not in given and given[0] != given[1]:
                raise PydanticCustomError(
                    "capability_alias",
                    f"{old} is the 0.1.0 name of {new}; give one of them, not both.",
                )
        return self

    # What the runtime reads: the 0.2.0 name, else its 0.1.0 alias (None: not said).
    @property
    def images(self) -> bool | None:
        return self.supports_images if self.supports_images is not None else self.vision

    @property
    def tool_calls(self) -> bool | None:
        if self.supports_tool_calls is not None:
            return self.supports_tool_calls
        return self.function_calling

    @property
    def json_mode(self) -> bool | None:
        if self.supports_json_mode is not None:
            return self.supports_json_mode
        return self.structured_outputs

    def tool_calls_name(self) -> str:
        """The name this definition says it under (error messages quote the author's word)."""
        return "supportsToolCalls" if self.supports_tool_calls is not None else "functionCalling"

    def effort_names(self) -> list[str] | None:
        """The efforts ``reasoningLevels`` offers (None: the model does not say)."""
        if self.reasoning_levels is None:
            return None
        return [v for _, v in sorted(self.reasoning_levels.items()) if v is not None]


class ScriptedToolCall(Definition):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None


class ScriptedUsage(Definition):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


class ScriptedError(Definition):
    message: str
    code: str | None = None
    status: int | None = None


class ToolResultExpectation(Definition):
    tool_name: str
    result_contains: str | None = None


class InputExpectation(Definition):
    contains_message: str | None = None
    contains_tool_result: ToolResultExpectation | None = None
    message_count: int | None = None
    system_prompt_contains: str | None = None
    # Extensions (not in the reference): what the request carried as pixels or documents.
    image_count: int | None = Field(default=None, ge=0)
    document_count: int | None = Field(default=None, ge=0)
    attachment_names: list[str] | None = None
    attachment_types: list[str] | None = None


class ScriptedImage(Definition):
    """An image the scripted model "generates" (ours, not the reference's)."""

    mime_type: str = "image/png"
    data: str  # base64

    @field_validator("data")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("data must be base64 (the image's bytes)") from None
        return value


class ScriptedResponse(Definition):
    """One scripted reply of the ``test`` provider (the reference's ``ScriptedResponse``)."""

    content: str | None = None
    tool_calls: list[ScriptedToolCall] | None = None
    reasoning_content: str | None = None
    finish_reason: Literal["stop", "tool_calls", "length", "content_filter"] | None = None
    usage: ScriptedUsage | None = None
    error: ScriptedError | None = None
    delay_ms: int | None = Field(default=None, ge=0)
    expect_input: InputExpectation | None = None
    images: list[ScriptedImage] | None = None


class StreamingSimulation(Definition):
    chunk_size: int = Field(default=8, ge=1)
    chunk_delay_ms: int = Field(default=0, ge=0)


class ModelDefinition(Definition):
    name: str
    provider: Provider
    model: str
    included_providers: list[str] | None = None
    fallbacks: list[str] | None = None
    input_price: float | None = Field(default=None, ge=0)
    output_price: float | None = Field(default=None, ge=0)
    cached_price: float | None = Field(default=None, ge=0)
    capabilities: ModelCapabilities | None = None
    base_url: str | None = None
    # Spec 0.15: the vendor-run tools (``provider.getTools()`` names) this model may use.
    provider_tools: list[str] | None = None
    # Our extension, OpenAI only: which OpenAI API serves the model, Chat Completions or
    # Responses (docs/providers.md#openai-responses).
    api: Literal["chat", "responses"] | None = None
    # Extensions for the ``test`` provider (not in the spec): see docs/definitions.md.
    script: list[ScriptedResponse] | None = None
    streaming: StreamingSimulation | None = None


# --- prompts ----------------------------------------------------------------


class PromptTextPart(Definition):
    type: Literal["text"] = "text"
    content: str

    def dump(self) -> dict[str, Any]:
        return {"type": "text", "content": self.content}


class PromptIncludePart(Definition):
    type: Literal["include"] = "include"
    prompt: str

    def dump(self) -> dict[str, Any]:
        return {"type": "include", "prompt": self.prompt}


class PromptEnvPart(Definition):
    """Replaced at render time by ``state.env(property)`` (empty when unresolved)."""

    type: Literal["env"] = "env"
    property: str

    def dump(self) -> dict[str, Any]:
        return {"type": "env", "property": self.property}


PromptPart = PromptTextPart | PromptIncludePart | PromptEnvPart


class ReasoningConfig(Definition):
    effort: Literal["low", "medium", "high"] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    exclude: bool | None = None
    include: bool | None = None


class ResumableConfig(Definition):
    receives_messages: Literal["side_a", "side_b"] = "side_a"
    max_instances: int | None = Field(default=None, ge=1)

    def dump(self) -> dict[str, Any]:
        # receives_messages is meaningful even at its default: keep it explicit.
        out: dict[str, Any] = {"receives_messages": self.receives_messages}
        if self.max_instances is not None:
            out["maxInstances"] = self.max_instances
        return out


class ToolConfig(Definition):
    """A prompt ``tools`` entry given as an object.

    Covers the spec's ``SubpromptConfig`` (include flags), ``PromptToolConfig``
    (``env``, ``optional``, ``immediate``) and ``SubagentToolConfig``
    (``blocking``, ``resumable``); which one applies depends on what ``name``
    resolves to (a tool, a prompt or an agent).
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True
    )

    name: str
    include_text_response: bool = True
    include_tool_calls: bool = True
    include_errors: bool = True
    init_user_message_property: str | None = None
    init_attachments_property: str | None = None
    init_agent_name_property: str | None = None
    env: dict[str, str] | None = None
    optional: str | None = None
    immediate: bool | None = None
    blocking: bool | None = None
    resumable: ResumableConfig | Literal[False] | None = None
    # Subagent relationship options of the reference (``SubagentRelationship``):
    # ``scopedEnv`` names parent env values copied into each child, ``parentCommunication``
    # 'explicit' delivers nothing when the child ends (it talks through notify_parent),
    # ``hidden`` keeps the relationship out of the ``subagents`` listing.
    scoped_env: list[str] | None = None
    parent_communication: Literal["implicit", "explicit"] | None = None
    hidden: bool | None = None
    # Our extension: the call waits for a person (``requiresApproval``) or for the client
    # to run it (``client``, the reference's forwarded tools); see ``runtime.core.waits``.
    requires_approval: bool | None = None
    client: bool | None = None
    wait_timeout_seconds: int | None = None
    # Ours: a ``provider:<name>`` entry's options, in the vendor's own names, checked against
    # the tool's offer (``runtime.providers.offers``) when the prompt is saved.
    options: dict[str, Any] | None = None

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        if isinstance(self.resumable, ResumableConfig):
            out["resumable"] = self.resumable.dump()
        return out

    @property
    def is_plain(self) -> bool:
        """True when the entry carries nothing beyond its name (export it as a bare string)."""
        return self.dump() == {"name": self.name}


ToolEntry = str | ToolConfig


class PromptVariable(Definition):
    """A value the prompt needs (spec 0.2.0 ``VariableDefinition``), declared as code tools
    declare theirs (``define_tool(variables=...)``): listed by the variable scans and, when
    required, checked before a session's first request."""

    name: str
    type: Literal["text", "secret"] = "secret"
    required: bool = True
    scoped: bool = False
    description: str = ""

    def dump(self) -> dict[str, Any]:
        # Type and required are written even at their defaults: a reader should not guess.
        out: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        if self.scoped:
            out["scoped"] = True
        if self.description:
            out["description"] = self.description
        return out


class PromptDefinition(Definition):
    name: str
    tool_description: str = ""
    prompt: str | list[PromptPart] = ""
    model: str
    include_chat: bool = False
    include_past_tools: bool = False
    parallel_tool_calls: bool | None = None
    tool_choice: ToolChoice = "auto"
    required_schema: dict[str, Any] | None = None
    # Ours (docs/providers.md#structured-output): a JSON Schema the final answer must match;
    # needs a model whose capabilities allow ``structuredOutputs``.
    response_schema: dict[str, Any] | None = None
    tools: list[ToolEntry] | None = None
    reasoning: ReasoningConfig | None = None
    recent_image_threshold: int = Field(default=10, ge=0)
    hooks: list[str] | None = None
    # Prompt-level env values. On export secret values are withheld as null;
    # importing null keeps the stored value.
    env: dict[str, str | None] | None = None
    # Ours: the spec SHOULD of §5.4 (budget warning before maxSteps); a prompt may turn it off.
    step_budget_warning: bool = True
    # Spec 0.2.0: the env values this prompt needs.
    variables: list[PromptVariable] | None = None
    # Spec 0.2.0, deprecated there: every prompt may be named as a tool, so ``true`` changes
    # nothing (``false`` is refused at save time); never stored or exported.
    expose_as_tool: bool | None = None
    # Spec 0.2.0, deprecated there: the old name of ``env`` (moved there when read).
    tenvs: dict[str, str | None] | None = None

    @model_validator(mode="after")
    def _tenvs_is_env(self) -> PromptDefinition:
        if self.tenvs is not None and self.env is None:
            self.__dict__["env"], self.__dict__["tenvs"] = self.tenvs, None
        return self

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        for deprecated in ("exposeAsTool", "tenvs"):
            out.pop(deprecated, None)
        if self.variables is not None:
            out["variables"] = [v.dump() for v in self.variables]
        if isinstance(self.prompt, list):
            out["prompt"] = [part.dump() for part in self.prompt]
        if self.tools is not None:
            out["tools"] = [
                t if isinstance(t, str) else (t.name if t.is_plain else t.dump())
                for t in self.tools
            ]
        return out

    def tool_names(self) -> list[str]:
        return [t if isinstance(t, str) else t.name for t in self.tools or []]

    def include_names(self) -> list[str]:
        if isinstance(self.prompt, str):
            return []
        return [p.prompt for p in self.prompt if isinstance(p, PromptIncludePart)]


# --- agents -----------------------------------------------------------------


class SessionToolBinding(Definition):
    """A side's session tool (spec ``SessionToolBinding``): ``messageProperty`` names the
    argument that is the session's result (or status) text, ``attachmentsProperty`` the
    argument listing thread files returned with it."""

    name: str
    message_property: str | None = None
    attachments_property: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        # The 0.1.0 form: a bare tool name.
        return {"name": value} if isinstance(value, str) else value


# AgentBuilder agents API names of side properties → the spec's (docs/definitions.md).
AGENTBUILDER_SIDE_ALIASES = {"endConversationTool": "endSessionTool"}


def agentbuilder_side(data: dict[str, Any]) -> dict[str, Any]:
    """A side written for the AgentBuilder agents API, in the spec's terms.

    ``endConversationTool`` is ``endSessionTool`` (``maxTurns`` is a field of its own: the
    turns the side may take, agents API "Maximum turns this side can take"), and
    ``manualStopCondition: true`` turns the automatic stop (``stopOnResponse``) off, leaving the stop to hooks and tools. Giving both names
    with different values, or ``manualStopCondition`` with ``stopOnResponse: true``,
    is refused rather than resolved silently.
    """
    out = dict(data)
    for old, new in AGENTBUILDER_SIDE_ALIASES.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new] != value:
            raise PydanticCustomError(
                "agentbuilder_alias",
                f"{old} is the AgentBuilder name of {new}; give one of them, not both.",
            )
        out[new] = value
    if "manualStopCondition" in out:
        manual = out.pop("manualStopCondition")
        if not isinstance(manual, bool):
            raise PydanticCustomError(
                "agentbuilder_alias", "manualStopCondition must be true or false."
            )
        if manual and out.get("stopOnResponse") is True:
            raise PydanticCustomError(
                "agentbuilder_alias",
                "manualStopCondition: true turns stopOnResponse off; remove stopOnResponse: true.",
            )
        if manual:
            out["stopOnResponse"] = False
    return out


class SubagentRelationship(Definition):
    """Spec 0.2.0 ``SubagentRelationship``: an agent this side may start as child threads.

    ``as`` names the relationship (what the model passes to ``subagent_create``; default
    the agent's name), ``description`` replaces the child's ``toolDescription`` there,
    ``blocking`` defaults to false. ``immediate`` is ``true`` only here (the reference's
    object form and the ``init*Property`` options are refused at save time,
    ``runtime.definitions.side_subagents``)."""

    agent: str
    as_: str | None = Field(default=None, alias="as")
    description: str | None = None
    blocking: bool = False
    max_instances: int | None = Field(default=None, ge=1)
    immediate: bool | dict[str, Any] | None = None
    optional: str | None = None
    scoped_env: list[str] | None = None
    hidden: bool | None = None
    parent_communication: Literal["implicit", "explicit"] | None = None
    init_user_message_property: str | None = None
    init_attachments_property: str | None = None
    init_agent_name_property: str | None = None

    @property
    def name(self) -> str:
        """The relationship's name: what the model calls it and the registry shows."""
        return self.as_ or self.agent


class SideConfig(Definition):
    # Exactly one backing: ``prompt`` (an AI), ``human: true`` (a person) or ``handler``
    # (code; spec 0.2.0, refused at save until handlers exist). ``prompt`` is required
    # unless another backing is named, so a side naming none says "Prompt is required".
    prompt: str | None
    human: bool | None = None
    handler: str | None = None
    label: str | None = None
    stop_on_response: bool = True
    stop_tool: str | None = None
    stop_tool_response_property: str | None = None
    max_steps: int | None = None
    # AgentBuilder agents API: "Maximum turns this side can take before stopping", counted per
    # side in a dual_ai session; in ai_human (a session is one turn) in the conversation.
    max_turns: int | None = None
    end_session_tool: str | None = None
    # Spec ``SessionToolConfig``: tools that end the session with a result (sessionStop),
    # end it as a failure (sessionFail) or set this child's status text (sessionStatus).
    session_stop: SessionToolBinding | None = None
    session_fail: SessionToolBinding | None = None
    session_status: SessionToolBinding | None = None
    # Spec 0.2.0: the agents this side may start as children (``docs/subagents.md``).
    subagents: list[SubagentRelationship] | None = None

    def session_tools(self) -> dict[str, SessionToolBinding]:
        """The side's session tools by kind (``session_stop``, ``session_fail``, ``session_status``)."""
        out: dict[str, SessionToolBinding] = {}
        for kind in ("session_stop", "session_fail", "session_status"):
            binding = getattr(self, kind)
            if binding is not None:
                out[kind] = binding
        return out

    @property
    def backing(self) -> Backing:
        if self.human:
            return "human"
        return "handler" if self.handler is not None else "prompt"

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        if self.prompt is None:
            out.pop("prompt", None)
        if self.subagents is not None:
            out["subagents"] = [r.dump() for r in self.subagents]
        return out

    @model_validator(mode="before")
    @classmethod
    def _agentbuilder_names(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = agentbuilder_side(data)
        if "prompt" not in data and ("human" in data or "handler" in data):
            data["prompt"] = None
        return data


# Agent keys only spec 0.2.0 has (camelCase and the Python names); ``env`` is in both.
AGENT_0_2_ONLY = {
    "primary": "primary",
    "packageName": "package_name",
    "version": "version",
    "author": "author",
    "license": "license",
    "parentHooks": "parent_hooks",
}
SIDE_0_2_ONLY = ("human", "handler", "subagents")


def _given(data: dict[str, Any], *keys: str) -> bool:
    return any(data.get(key) is not None for key in keys)


def _side_markers(side: Any, prefix: str) -> list[str]:
    if isinstance(side, SideConfig):
        return [f"{prefix}.{k}" for k in SIDE_0_2_ONLY if getattr(side, k) is not None]
    if isinstance(side, dict):
        return [f"{prefix}.{k}" for k in SIDE_0_2_ONLY if k in side]
    return []


def agent_generation(data: dict[str, Any]) -> tuple[SpecVersion, list[str]]:
    """Which spec an agent's raw input is written for, and the 0.2.0-only keys it uses.

    ``type`` is 0.1.0 (0.2.0 has none); a 0.2.0-only key, or a side B without ``type``
    (0.1.0's default ``ai_human`` has no side B), is 0.2.0. The rest is 0.1.0, whose side B
    may be absent. A ``type`` beside 0.2.0-only keys is refused at save time
    (``runtime.definitions.validation``), naming them.
    """
    markers = [camel for camel, snake in AGENT_0_2_ONLY.items() if _given(data, camel, snake)]
    markers += _side_markers(data.get("sideA", data.get("side_a")), "sideA")
    markers += _side_markers(data.get("sideB", data.get("side_b")), "sideB")
    if _given(data, "type"):
        return SPEC_0_1, markers
    if markers or _given(data, "sideB", "side_b"):
        return SPEC_0_2, markers
    return SPEC_0_1, []


class ParentHookRequirement(Definition):
    """Spec 0.2.0 ``ParentHookRequirement``: a hook a child agent requires on every direct
    parent side that declares it (``runtime.tools.parent_hooks``). ``stage`` unset runs it
    after the parent's own hooks (the reference's default, ``after_parent``)."""

    hook: str
    reason: str
    stage: Literal["before_parent", "after_parent"] | None = None


class AgentDefinition(Definition):
    name: str
    title: str | None = None
    type: AgentType = "ai_human"
    max_session_turns: int | None = None
    side_a: SideConfig
    side_b: SideConfig | None = None
    expose_as_tool: bool = False
    tool_description: str | None = None
    # Ours: what people in the chat see of tool calls (docs/chat.md, "Tool activity"):
    # nothing, one line per call, or the arguments and results; unset: a line per call
    # for people who are not staff, everything for staff.
    tool_activity: Literal["hidden", "summary", "full"] | None = None
    description: str | None = None
    icon: str | None = None
    tags: list[str] | None = None
    hooks: list[str] | None = None
    # The agent's env values (0.2.0 writes ``env``; 0.1.0's ``tenvs`` is moved here when read).
    env: dict[str, Any] | None = None
    tenvs: dict[str, Any] | None = None
    # Spec 0.2.0: ``false`` keeps the agent out of the chat's agent picker (an internal
    # handoff or subagent target), still reachable by name.
    primary: bool = True
    # Spec 0.2.0 packaging metadata: kept as written, read by nothing else.
    package_name: str | None = None
    version: str | None = None
    author: str | None = None
    license: str | None = None
    # Spec 0.2.0: hooks this agent (a subagent) requires on its parents' sides.
    parent_hooks: list[ParentHookRequirement] | None = None
    # Ours: the reasons a person may pick when rating a reply (docs/observability.md).
    feedback_reasons: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None, max_length=20
    )

    # Ours: a message posted while a session runs (docs/automation.md, "Mid-run messages").
    mid_run_messages: Literal["queue", "enqueue", "interrupt", "reject"] = "queue"

    # Ours: who the chat offers the agent to (docs/studio.md, "Publishing"): a draft to staff
    # only; a published one to everyone, or to members of the ``audience`` groups only.
    state: Literal["draft", "published"] = "published"
    audience: list[Annotated[str, Field(min_length=1, max_length=150)]] | None = None

    _spec: SpecVersion = PrivateAttr(default=SPEC_0_1)
    _mixed: list[str] = PrivateAttr(default_factory=list)  # 0.2.0 keys beside ``type``
    _env_key: str = PrivateAttr(default="env")  # how the author named the env values

    @model_validator(mode="wrap")
    @classmethod
    def _generation(cls, data: Any, handler: ModelWrapValidatorHandler[AgentDefinition]) -> Any:
        if not isinstance(data, dict):
            return handler(data)  # an instance being re-validated keeps its generation
        spec, markers = agent_generation(data)
        agent = handler(data)
        agent._spec = spec
        agent._mixed = markers if spec == SPEC_0_1 else []
        if agent.tenvs is not None and agent.env is None:
            agent.__dict__["env"], agent.__dict__["tenvs"] = agent.tenvs, None
            agent._env_key = "tenvs"
        if spec == SPEC_0_2:
            # 0.2.0 says who is on each side; ``type`` is what the rest of the code reads.
            both_ai = agent.side_b is not None and agent.side_b.backing != "human"
            both_ai = both_ai and agent.side_a.backing != "human"
            agent.__dict__["type"] = "dual_ai" if both_ai else "ai_human"
        return agent

    @property
    def spec(self) -> SpecVersion:
        """The spec generation this definition is written in (its shape, and the
        ``maxSessionTurns`` rule: turns in 0.1.0, exchanges in 0.2.0)."""
        return self._spec

    @property
    def mixed_keys(self) -> list[str]:
        return list(self._mixed)

    @property
    def env_key(self) -> str:
        """``tenvs`` when the author wrote the env values under 0.1.0's name."""
        return self._env_key

    def side(self, key: str) -> SideConfig | None:
        return self.side_a if key == "a" else self.side_b

    def backing(self, key: str) -> Backing:
        """Who acts on side ``key``; a 0.1.0 ``ai_human`` agent's missing side B is a person."""
        config = self.side(key)
        if config is None:
            return "human"
        return config.backing

    def human_side(self) -> Literal["a", "b"] | None:
        """The side a person takes (None: two AIs)."""
        if self.spec == SPEC_0_1:
            return "b" if self.type == "ai_human" else None
        for key in ("a", "b"):
            if self.backing(key) == "human":
                return key  # type: ignore[return-value]
        return None

    def sides(self) -> dict[str, SideConfig]:
        """The sides a prompt backs (the AIs), side A first."""
        if self.spec == SPEC_0_1:
            out = {"a": self.side_a}
            if self.type == "dual_ai" and self.side_b is not None:
                out["b"] = self.side_b
            return out
        return {
            key: config
            for key in ("a", "b")
            if (config := self.side(key)) is not None
            and config.backing == "prompt"
            and config.prompt
        }

    def side_prompts(self) -> list[str]:
        """The prompts of ``sides()``, side A first."""
        return [config.prompt or "" for config in self.sides().values()]

    def first_ai_side(self) -> Literal["a", "b"]:
        """The side whose prompt speaks for the agent (as a tool, for its env): A unless a
        person is on side A."""
        return "b" if self.human_side() == "a" else "a"

    def main_prompt(self) -> str:
        """The prompt of ``first_ai_side``, else the other side's (a handler on the first
        side); empty when the definition names none."""
        first = self.first_ai_side()
        for key in (first, "b" if first == "a" else "a"):
            config = self.side(key)
            if config is not None and config.prompt:
                return config.prompt
        return ""

    def dump(self) -> dict[str, Any]:
        out = super().dump()
        for key, config in (("sideA", self.side_a), ("sideB", self.side_b)):
            if config is not None and key in out:
                out[key] = config.dump()
        if self.spec == SPEC_0_2:
            out.pop("type", None)
            return out
        # 0.1.0 names the agent's env values ``tenvs``.
        return {("tenvs" if k == "env" else k): v for k, v in out.items()}
