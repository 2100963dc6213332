"""Response schemas of a thread's runs: tool results, scheduled effects, logs, execution
health. Built as ``responses.py`` explains: every value passes through unchanged."""

from __future__ import annotations

from agents_app.api.responses import (
    Bool,
    Int,
    IntOrNull,
    Null,
    Number,
    NumberOrNull,
    Object,
    Objects,
    Out,
    Str,
    StrOrNull,
    Value,
)


class ToolResultOut(Out):
    """``resumed`` (with the side and, for a decision, the call id) or ``ignored``."""

    status: Str


class VariablesRequestOut(Out):
    """A variables request: what it asks for (names, never values) and whether it was answered."""

    request_id: Str
    parent_thread_id: Str
    child_thread_id: StrOrNull
    agent_name: StrOrNull
    registry_agent_name: StrOrNull
    tool_call_id: StrOrNull
    required: Value
    missing: Value
    status: Str
    requested_at: IntOrNull
    expires_at: IntOrNull


class VariablesAnswerOut(Out):
    """``success`` (values stored on the child, the call resumed) or ``resumed`` (declined)."""

    request_id: Str
    child_thread_id: Str
    status: Str


class InputRequestOut(Out):
    """An MCP server's question to the person: its message and the fields it asks for."""

    request_id: Str
    thread_id: Str
    tool_call_id: StrOrNull
    tool: StrOrNull
    questions: Value
    status: Str
    requested_at: IntOrNull
    expires_at: IntOrNull


class InputAnswerOut(Out):
    """``resumed``: the answer was recorded and the waiting call goes on."""

    request_id: Str
    status: Str


class EffectOut(Out):
    id: Str
    name: Str
    scheduledAt: IntOrNull
    createdAt: IntOrNull
    status: Str
    attempts: Int
    error: StrOrNull
    completedAt: IntOrNull
    manualRun: Bool
    manualRunAt: IntOrNull
    replayedFrom: StrOrNull


class EffectPageOut(Out):
    effects: list[EffectOut]
    total: Int
    upcomingCount: Int
    limit: Int
    offset: Int


class EffectCanceledOut(Out):
    action: Str
    id: Str
    canceledBy: Str


class EffectRanOut(Out):
    """``ran``, or ``replayed`` with ``replayedId``; then the run's ``status`` and ``error``."""

    action: Str
    id: Str


class LogOut(Out):
    id: Str
    kind: Str
    message_id: StrOrNull
    provider: StrOrNull
    actual_provider: Null
    standard_agents_router_used: Bool
    model: StrOrNull
    model_name: StrOrNull
    prompt_name: StrOrNull
    tool_name: StrOrNull
    tool_call_id: StrOrNull
    tools_called: StrOrNull
    queued_tools: Null
    provider_tools: Value
    parent_log_id: StrOrNull
    retry_of_log_id: StrOrNull
    attempt: Int
    error: StrOrNull
    error_type: StrOrNull
    error_origin: StrOrNull
    finish_reason: StrOrNull
    cost_total: NumberOrNull
    input_tokens: IntOrNull
    cached_tokens: IntOrNull
    output_tokens: IntOrNull
    reasoning_tokens: IntOrNull
    total_tokens: IntOrNull
    latency_ms: IntOrNull
    time_to_first_token_ms: IntOrNull
    is_complete: Bool
    created_at: Value
    definition_versions: Value
    stopped_by_user: Bool


class LogPageOut(Out):
    logs: list[LogOut]
    total: Int
    hasMore: Bool


class LogDetailOut(LogOut):
    status_code: IntOrNull
    cost_input: NumberOrNull
    cost_cached: NumberOrNull
    cost_output: NumberOrNull
    cost_router_fee: Number
    request_body: StrOrNull
    response_body: StrOrNull
    system_prompt: StrOrNull
    source_message_content: Value
    source_message_role: StrOrNull
    source_message_created_at: Value


class DiagnosticsThreadOut(Out):
    executing: Bool
    lastProgressAt: IntOrNull
    silenceMs: IntOrNull
    watchdogStrikes: Int
    watchdogCeilingMs: Null
    stopped: Bool
    incompleteLogs: Objects
    alarmQueue: Objects
    alarmQueueCounts: Object
    messageQueueCount: Int
    contextUsage: Null


class ThreadDiagnosticsOut(Out):
    thread: DiagnosticsThreadOut
    watchdog: Null
    terminated: Bool


class ThreadRevivedOut(Out):
    verdict: Str
    action: Str
    executing: Bool
    incompleteLogs: Int
    queuedMessages: Int
    silenceMs: IntOrNull
    ceilingMs: Int
    strikes: Int
    requestRestart: Bool
