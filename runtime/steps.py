"""The LLM half of a step: build the request, open the step, get the response.

A ``Scope`` says where a step runs (which prompt and model, which side, at
which depth, with which hooks and tools). The ``Stepper`` turns a scope and
chat messages into a request, opens the step (the pending assistant message
and the incomplete log, one commit) and gets the response (the completed or
failed message and log, returned as a batch the caller commits, so a text
reply can be stored together with the step's progress).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.definitions import ModelDefinition, PromptDefinition
from runtime.deps import Deps
from runtime.events import message_chunk, telemetry
from runtime.hooks import HookRunner
from runtime.llm import (
    LLMReply,
    completed_log,
    failed_log,
    interrupted_log,
    opened_log,
    run_attempt,
)
from runtime.loader import DefinitionLoader
from runtime.messages import MESSAGE_FIELDS, Message, Side, make_tool_call, new_id, role_for_side
from runtime.progress import SessionProgress
from runtime.prompting import render_prompt
from runtime.providers.base import ProviderError, ProviderRequest
from runtime.recorder import Batch, Recorder
from runtime.state import ThreadState
from runtime.store import LogRecord, ThreadRecord
from runtime.toolset import OfferedTool

INVALID_RESPONSE_TOOL = "invalid_assistant_response"
EnvLookup = Callable[[str], Awaitable[str | None]]


@dataclass(slots=True)
class Scope:
    """Where a step runs. ``parent_id``/``depth`` are given to every message it writes."""

    thread: ThreadRecord
    prompt: PromptDefinition
    model: ModelDefinition
    side: Side
    hooks: HookRunner
    tools: dict[str, OfferedTool]
    state: ThreadState
    depth: int = 0
    parent_id: str | None = None
    root_message_id: str | None = None
    parent_log_id: str | None = None
    log_id: str | None = None

    @property
    def role(self) -> str:
        """Stored role of this scope's model messages (sub-prompts always write ``assistant``)."""
        return role_for_side(self.side) if self.depth == 0 else "assistant"


@dataclass(slots=True)
class Opened:
    """An opened step: the pending message, the incomplete log, the stop flag after the commit."""

    message: Message
    log: LogRecord
    stopped: bool = False


@dataclass(slots=True)
class Reply:
    """The outcome of the LLM call: the final message (completed or failed) and what to commit."""

    message: Message
    batch: Batch
    error: ProviderError | None = None
    reply: LLMReply | None = None


@dataclass(slots=True)
class _Cursor:
    counts: dict[tuple[str, str], int] = field(default_factory=dict)


class Stepper:
    """Builds requests, opens steps and calls the model for one session."""

    def __init__(self, deps: Deps, defs: DefinitionLoader, recorder: Recorder) -> None:
        self.deps, self.defs, self.recorder = deps, defs, recorder
        self._cursor = _Cursor()

    async def request(self, scope: Scope, messages: list[dict[str, Any]]) -> ProviderRequest:
        """The provider request for ``messages`` under ``scope`` (system prompt rendered, tools listed)."""
        system = await render_prompt(scope.prompt, self.defs.find_prompt, self._env(scope))
        system = await scope.hooks.after_system_message(scope.state, system)
        capabilities = scope.model.capabilities
        tools_allowed = capabilities is None or capabilities.function_calling is not False
        return ProviderRequest(
            model=scope.model.model,
            system=system,
            messages=messages,
            tools=[t.schema for t in scope.tools.values()] if tools_allowed else [],
            tool_choice=scope.prompt.tool_choice,
            parallel_tool_calls=scope.prompt.parallel_tool_calls,
            reasoning=scope.prompt.reasoning,
            model_name=scope.model.name,
            sequence=await self._sequence(scope.thread.id, scope.model.name),
            metadata={"thread_id": scope.thread.id, "prompt_name": scope.prompt.name},
        )

    def _env(self, scope: Scope) -> EnvLookup:
        async def lookup(name: str) -> str | None:
            entry = await self.deps.store.resolve_env(scope.thread.id, name, scope.prompt.name)
            return entry.value if entry else None

        return lookup

    async def _sequence(self, thread_id: str, model: str) -> int:
        """Reserve the next response number of ``model`` on this thread.

        Counted once from storage, then in memory: every request built is sent
        (or the session ends), so concurrent sub-prompts get distinct numbers.
        """
        key = (thread_id, model)
        if key not in self._cursor.counts:
            self._cursor.counts[key] = await self.deps.store.count_llm_responses(thread_id, model)
        self._cursor.counts[key] += 1
        return self._cursor.counts[key] - 1

    async def open(
        self,
        scope: Scope,
        request: ProviderRequest,
        *,
        progress: Callable[[str, str], SessionProgress | None] = lambda _m, _l: None,
        reuse: Message | None = None,
    ) -> Opened:
        """Store the pending message and the incomplete log (one commit, with ``progress``)."""
        clock = self.deps.clock
        log_id = new_id()
        message = self._pending(scope, reuse, log_id)
        if reuse is None:
            message = await scope.hooks.before_create_message(scope.state, message)
        log = opened_log(
            log_id=log_id,
            thread_id=scope.thread.id,
            model=scope.model,
            request=request,
            root_message_id=scope.root_message_id,
            parent_log_id=scope.parent_log_id,
            created_at=clock.now(),
        )
        batch = Batch(logs=[log], progress=progress(message.id, log_id))
        (batch.updated if reuse else batch.created).append(message)
        result = await self.recorder.commit(batch, scope.hooks, scope.state)
        scope.log_id = log_id
        return Opened(message, log, result.stopped)

    def _pending(self, scope: Scope, reuse: Message | None, log_id: str) -> Message:
        now = self.deps.clock.now()
        if reuse is not None:
            return reuse.copy(status="pending", request_sent_at=now, log_id=log_id)
        return Message(
            id=new_id(),
            role=scope.role,  # type: ignore[arg-type]
            status="pending",
            created_at=now,
            request_sent_at=now,
            parent_id=scope.parent_id,
            depth=scope.depth,
            side=scope.side,
            log_id=log_id,
            prompt_name=scope.prompt.name,
        )

    async def respond(self, scope: Scope, request: ProviderRequest, opened: Opened) -> Reply:
        """Call the model; return the final message and log as an uncommitted batch."""
        sink, message = self.recorder, opened.message
        sink.emit(telemetry("llm_request", model=scope.model.name, attempt=opened.log.attempt))
        started = time.perf_counter()
        try:
            provider = self.deps.providers.for_model(scope.model)
            reply = await run_attempt(
                provider,
                request,
                on_text=lambda text: sink.emit(message_chunk(message.id, scope.depth, text)),
                on_reasoning=lambda text: sink.emit(
                    message_chunk(message.id, scope.depth, text, reasoning=True)
                ),
            )
        except ProviderError as error:
            return await self._failed(
                scope, opened, error, int((time.perf_counter() - started) * 1000)
            )
        sink.emit(
            telemetry("llm_response", tokens=reply.usage.total_tokens, latency=reply.latency_ms)
        )
        return await self._completed(scope, opened, reply)

    async def _completed(self, scope: Scope, opened: Opened, reply: LLMReply) -> Reply:
        calls = reply.tool_calls
        if not calls and not reply.content.strip():
            # The reference's empty-response guard: tell the model through an error tool result.
            calls = [
                make_tool_call(
                    "call_" + new_id().replace("-", "")[:12], INVALID_RESPONSE_TOOL, "{}"
                )
            ]
        updates: dict[str, Any] = {
            "content": reply.content or None,
            "tool_calls": calls or None,
            "reasoning_content": reply.reasoning,
            "status": "completed",
            "response_completed_at": self.deps.clock.now(),
            "log_id": opened.log.id,
        }
        message = await self._update(scope, opened.message, updates)
        log = completed_log(opened.log, scope.model, reply)
        return Reply(message, Batch(updated=[message], logs=[log]), reply=reply)

    async def _failed(
        self, scope: Scope, opened: Opened, error: ProviderError, latency: int
    ) -> Reply:
        updates = {"status": "failed", "response_completed_at": self.deps.clock.now()}
        message = await self._update(scope, opened.message, updates)
        log = failed_log(opened.log, error, latency)
        return Reply(message, Batch(updated=[message], logs=[log]), error=error)

    async def _update(self, scope: Scope, message: Message, updates: dict[str, Any]) -> Message:
        updates = await scope.hooks.before_update_message(scope.state, message.id, updates)
        known = {k: v for k, v in updates.items() if k in MESSAGE_FIELDS and k != "id"}
        return message.copy(**known)

    async def abandon(self, scope: Scope, opened: Opened) -> Batch:
        """A step opened but not sent (the user stopped first): fail the message, close the log."""
        message = await self._update(scope, opened.message, {"status": "failed"})
        return Batch(updated=[message], logs=[interrupted_log(opened.log)])
