"""Response schemas of the routes about definitions (agents, prompts, tools): what OpenAPI
shows for each answer. Built like agents_app.api.responses: keys passed through unchanged,
keys not declared kept, so the JSON stays the reference's wire format."""

from __future__ import annotations

from agents_app.api.responses import (
    Bool,
    Int,
    Null,
    Object,
    Objects,
    Out,
    Str,
    Strings,
    StrOrNull,
    Value,
)


class VariablesOut(Out):
    variables: Objects


class AgentOut(Out):
    """An agent as the catalog lists it; staff also get its sides and definition (kept as
    sent, after these)."""

    id: Str
    name: Str
    title: Str
    type: Str
    side_a_backing: Str
    side_b_backing: StrOrNull
    description: StrOrNull
    tool_description: StrOrNull
    icon: StrOrNull
    primary: Bool
    parentHooks: Objects
    created_at: Int
    packed: Bool
    reasoning: Bool
    feedback_reasons: Strings
    tool_activity: Value
    mid_run_messages: Str


class AgentsOut(Out):
    agents: list[AgentOut]


class AgentOneOut(Out):
    agent: AgentOut


class PromptOut(Out):
    id: Str
    name: Str
    tool_description: StrOrNull
    prompt: Str
    required_schema: Value
    model_id: Str
    model_name: Str
    model_provider: Str
    include_chat: Bool
    include_past_tools: Bool
    parallel_tool_calls: Bool
    tool_choice: Value
    tools: Strings
    reasoning: Value
    hooks: Strings
    variables: Objects
    created_at: Int
    definition: Object


class PromptsOut(Out):
    prompts: list[PromptOut]


class PromptOneOut(Out):
    prompt: PromptOut


class ModelOut(Out):
    id: Str
    name: Str
    provider: Str
    model: Str
    input_price: Value
    output_price: Value
    cached_price: Value
    included_providers: Strings
    fallbacks: Strings
    capabilities: Object
    created_at: Int
    definition: Object


class ModelsOut(Out):
    models: list[ModelOut]


class ModelOneOut(Out):
    model: ModelOut


class CurlOut(Out):
    curl: Value


class ToolEntryOut(Out):
    """A tool, prompt or agent callable by name; ``schema`` with ``?schema=true``."""

    description: StrOrNull
    type: Str


class ToolOneOut(Out):
    name: Str
    hasError: Bool
    description: StrOrNull
    type: Str


class HookOut(Out):
    id: Str
    hook: Str
    description: StrOrNull


class HooksOut(Out):
    hooks: list[HookOut]


class HandlersOut(Out):
    handlers: Objects


class DefinitionWrittenOut(Out):
    """A create or update: ``agent``, ``prompt`` or ``model`` (by the route) follows
    ``success``, then ``filePath``; a rename adds ``renamed`` and the updated names."""

    success: Bool


class DefinitionDeletedOut(Out):
    success: Bool
    deleted: Str
    filePath: Null


class RejectedOut(Out):
    error: Str
    fieldErrors: Object


class ProviderModelsOut(Out):
    provider: Str


class ModelOptionsOut(Out):
    models: Objects
    hasNextPage: Bool
    page: Int
    total: Value


class CapabilitiesOut(Out):
    capabilities: Value


class EndpointsOut(Out):
    endpoints: Objects
