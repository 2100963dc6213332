"""The LLM half of a step: build the request, open the step, get the response.

A ``Scope`` says where a step runs (which prompt and model, which side, at
which depth, with which hooks and tools). The ``Stepper`` turns a scope and
chat messages into a request, opens the step (the pending assistant message
and the incomplete log, one commit) and gets the response along the attempt
ladder (``runtime.step.attempts``: retries, then the model's fallbacks, one log row
per attempt). The completed or failed message and the last attempt's log are
returned as a batch the caller commits, so a text reply can be stored together
with the step's progress.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from runtime.core import tracing
from runtime.core.messages import (
    MESSAGE_FIELDS,
    Message,
    Side,
    ToolCall,
    make_tool_call,
    new_id,
    role_for_side,
)
from runtime.core.spec import ModelDefinition, PromptDefinition
from runtime.definitions.loader import DefinitionLoader
from runtime.deps import Deps
from runtime.providers.base import INVALID_REQUEST, ImageDelta, ProviderError, ProviderRequest
from runtime.providers.retry import LadderStart
from runtime.state import ThreadState
from runtime.step.attempts import (
    Attempt,
    AttemptLadder,
    LadderOutcome,
    OpenStepProgress,
    provider_or_none,
    resume_start,
    tools_allowed,
)
from runtime.step.generated import save_generated_image
from runtime.step.knowledge_context import KnowledgeContext
from runtime.step.llm import LLMReply, completed_log, opened_log
from runtime.step.media import fit_for_model
from runtime.step.prompting import render_prompt
from runtime.step.structured import SCHEMA_MISMATCH, answer_problem, retry_messages
from runtime.step.tool_progress import ProgressWatch, progress_argument
from runtime.store.events import event, telemetry
from runtime.store.protocol import LogRecord, ThreadRecord
from runtime.store.recorder import Batch, Recorder
from runtime.tools.hooks import HookRunner
from runtime.tools.toolset import OfferedTool, provider_choices

INVALID_RESPONSE_TOOL = "invalid_assistant_response"
STOPPED_MESSAGE = "Stopped by the user before the request could be retried."
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
    # Calls whose ``tool_call_started`` fired while the model streamed them (a tool's
    # ``progressArgument``): the tool half does not fire it again.
    announced: set[str] = field(default_factory=set)

    @property
    def role(self) -> str:
        """Stored role of this scope's model messages (sub-prompts always write ``assistant``)."""
        return role_for_side(self.side) if self.depth == 0 else "assistant"


@dataclass(slots=True)
class Opened:
    """An opened step: the pending message and the incomplete log (staged, not yet stored).

    ``attempt`` is the first attempt of the step's ladder (its model, request and
    log row), ``chain`` the models of the ladder and ``start`` its first rung (not
    the first one when a redone step continues its ladder). ``progress`` is the
    session's progress with its open step pointing at a given message and log
    (``None`` inside sub-prompts); later attempts commit it again.
    """

    message: Message
    attempt: Attempt
    chain: list[ModelDefinition]
    start: LadderStart
    progress: OpenStepProgress = lambda _m, _l: None

    @property
    def log(self) -> LogRecord:
        """The first attempt's log row."""
        return self.attempt.log


@dataclass(slots=True)
class Reply:
    """The outcome of the LLM call: the final message (completed or failed) and what to commit.

    ``stopped``: the user's stop ended the attempt ladder (``error`` says so too).
    """

    message: Message
    batch: Batch
    error: ProviderError | None = None
    reply: LLMReply | None = None
    stopped: bool = False


@dataclass(slots=True)
class _Cursor:
    counts: dict[tuple[str, str], int] = field(default_factory=dict)


class Stepper:
    """Builds requests, opens steps and calls the model for one session."""

    def __init__(self, deps: Deps, defs: DefinitionLoader, recorder: Recorder) -> None:
        self.deps, self.defs, self.recorder = deps, defs, recorder
        self._cursor = _Cursor()
        self.knowledge = KnowledgeContext(deps, recorder)  # retrieval and citations

    async def request(self, scope: Scope, messages: list[dict[str, Any]]) -> ProviderRequest:
        """The provider request for ``messages`` under ``scope`` (system prompt rendered, tools listed)."""
        system = await render_prompt(scope.prompt, self.defs.find_prompt, self._env(scope))
        system = await scope.hooks.after_system_message(scope.state, system)
        system = await self.knowledge.with_context(scope, messages, system)
        return ProviderRequest(
            model=scope.model.model,
            system=system,
            messages=messages,
            tools=[t.schema for t in scope.tools.values()] if tools_allowed(scope.model) else [],
            tool_choice=scope.prompt.tool_choice,
            parallel_tool_calls=scope.prompt.parallel_tool_calls,
            reasoning=scope.prompt.reasoning,
            model_name=scope.model.name,
            metadata={"thread_id": scope.thread.id, "prompt_name": scope.prompt.name},
            response_schema=scope.prompt.response_schema,
            provider_tools=await provider_choices(scope.prompt, self._env(scope)),
        )

    async def prepare(
        self, scope: Scope, request: ProviderRequest, model: ModelDefinition
    ) -> ProviderRequest:
        """``request`` as one attempt sends it to ``model``: its model id, the tools if it
        takes them, its response number on this thread (``sequence``, for a provider that
        replays a script: counting the stored responses is a read the vendors' adapters
        never use), and the images it can take (placeholders without vision, downsampled
        to its vendor's limits)."""
        replays = self.deps.providers.replays(model)
        caps = model.capabilities
        return replace(
            request,
            messages=await fit_for_model(request.messages, model),
            model=model.model,
            model_name=model.name,
            tools=[t.schema for t in scope.tools.values()] if tools_allowed(model) else [],
            sequence=await self._sequence(scope.thread.id, model.name) if replays else None,
            # The model's ``maxOutputTokens`` caps each reply it gives (spec 0.2.0).
            max_output_tokens=caps.max_output_tokens if caps else None,
        )

    def _env(self, scope: Scope) -> EnvLookup:
        async def lookup(name: str) -> str | None:
            entry = await self.deps.store.resolve_env(scope.thread.id, name, scope.prompt.name)
            return entry.value if entry else None

        return lookup

    async def _sequence(self, thread_id: str, model: str) -> int:
        """Reserve the next response number of ``model`` on this thread.

        Counted once from storage, then in memory: every attempt prepared is sent
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
        progress: OpenStepProgress = lambda _m, _l: None,
        reuse: Message | None = None,
    ) -> Opened:
        """Stage the pending message and the first attempt's incomplete log (with
        ``progress``). Redoing a step (``reuse``: its pending message) continues its ladder."""
        chain = await self.chain(scope.model)
        start, retried = LadderStart(), None
        if reuse is not None:
            start, retried = await resume_start(
                self.deps.store, scope.thread.id, reuse.log_id, chain, self.deps.limits.retry
            )
        model = chain[start.index]
        attempt_request = await self.prepare(scope, request, model)
        log_id = new_id()
        message = self._pending(scope, reuse, log_id)
        if reuse is None:
            message = await scope.hooks.before_create_message(scope.state, message)
        log = opened_log(
            log_id=log_id,
            thread_id=scope.thread.id,
            model=model,
            request=attempt_request,
            root_message_id=scope.root_message_id,
            parent_log_id=scope.parent_log_id,
            created_at=self.deps.clock.now(),
            attempt=start.number,
            retry_of_id=retried.id if retried else None,
            provider=provider_or_none(self.deps, model),
        )
        batch = Batch(logs=[log], progress=progress(message.id, log_id))
        (batch.updated if reuse else batch.created).append(message)
        # Staged, not committed: it goes out with the response, or on its own if the model
        # streams or takes a while (``Recorder.stage``). The user's stop was read by the
        # commit that closed the previous step; the response's commit reads it again.
        self.recorder.stage(batch, scope.hooks, scope.state)
        scope.log_id = log_id
        attempt = Attempt(model, attempt_request, log, time.perf_counter())
        return Opened(message, attempt, chain, start, progress)

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
        """Call the model along the attempt ladder; return the final message and the last
        attempt's log as an uncommitted batch (failed attempts before it are committed).
        A final answer that misses the prompt's response schema is asked for once more."""
        log = opened.log
        with tracing.chat_span(log.provider, log.model_id or log.model) as span:
            answer = await self._respond(scope, request, opened)
            if answer.batch.logs:
                tracing.record_model_log(span, answer.batch.logs[-1])
            if answer.error is not None:
                tracing.record_error(span, answer.error.code)
            elif tracing.records_content():
                text = self.recorder.redactor.text(answer.message.content or "")
                tracing.record_content(span, tracing.OUTPUT_MESSAGES, text)
            return answer

    async def _respond(self, scope: Scope, request: ProviderRequest, opened: Opened) -> Reply:
        image_errors: list[str] = []
        outcome = await self._ladder(
            scope, request, opened, opened.attempt, opened.start, image_errors
        )
        problem = _schema_problem(request, outcome)
        if problem is not None:
            outcome = await self._ask_again(scope, request, opened, outcome, problem, image_errors)
        scope.log_id = outcome.attempt.log.id
        if outcome.reply is None:
            return await self._failed(scope, opened, outcome)
        reply = outcome.reply
        self.recorder.emit(
            telemetry("llm_response", tokens=reply.usage.total_tokens, latency=reply.latency_ms)
        )
        return await self._completed(scope, opened, outcome, reply, image_errors)

    async def _ladder(
        self,
        scope: Scope,
        request: ProviderRequest,
        opened: Opened,
        first: Attempt,
        start: LadderStart,
        image_errors: list[str],
    ) -> LadderOutcome:
        async def prepare(model: ModelDefinition) -> ProviderRequest:
            return await self.prepare(scope, request, model)

        async def save_image(image: ImageDelta) -> dict[str, Any] | None:
            return await save_generated_image(scope.state, image, image_errors)

        ladder = AttemptLadder(
            self.deps,
            self.recorder,
            message=opened.message,
            depth=scope.depth,
            chain=opened.chain,
            start=start,
            first=first,
            prepare=prepare,
            progress=opened.progress,
            save_image=save_image,
            on_tool_stream=self._progress_watch(scope),
        )
        return await ladder.run()

    def _progress_watch(self, scope: Scope) -> Callable[[object], Awaitable[None]] | None:
        """What reads the streamed tool calls when an offered tool names a progress argument."""
        if not any(progress_argument(offered) for offered in scope.tools.values()):
            return None

        async def started(call: ToolCall, progress: Any) -> None:
            data = {"id": call["id"], "name": call["function"]["name"], "progress": progress}
            self.recorder.emit(event("tool_call_started", data))
            await scope.hooks.tool_call_started(
                scope.state.for_tool_call(call["id"]), call, progress
            )

        return ProgressWatch(scope.tools, scope.announced, started).feed

    async def _ask_again(
        self,
        scope: Scope,
        request: ProviderRequest,
        opened: Opened,
        outcome: LadderOutcome,
        problem: str,
        image_errors: list[str],
    ) -> LadderOutcome:
        """One more request with the wrong answer and what is wrong with it; a second
        wrong answer fails the message (its text kept, the reason in its error)."""
        assert outcome.reply is not None
        answered = completed_log(outcome.attempt.log, outcome.attempt.model, outcome.reply)
        again = replace(
            request, messages=retry_messages(request.messages, outcome.reply.content, problem)
        )
        model = opened.chain[0]
        prepared = await self.prepare(scope, again, model)
        log = opened_log(
            log_id=new_id(),
            thread_id=scope.thread.id,
            model=model,
            request=prepared,
            root_message_id=scope.root_message_id,
            parent_log_id=scope.parent_log_id,
            created_at=self.deps.clock.now(),
            retry_of_id=answered.id,
            provider=provider_or_none(self.deps, model),
        )
        await self.recorder.commit(
            Batch(logs=[answered, log], progress=opened.progress(opened.message.id, log.id))
        )
        first = Attempt(model, prepared, log, time.perf_counter())
        retried = await self._ladder(scope, again, opened, first, LadderStart(), image_errors)
        still = _schema_problem(again, retried)
        if still is None or retried.reply is None:
            return retried
        attempt = retried.attempt
        attempt.log, attempt.stored = (
            completed_log(attempt.log, attempt.model, retried.reply),
            False,
        )
        error = ProviderError(f"{still} It was wrong again after one retry.", SCHEMA_MISMATCH)
        return LadderOutcome(attempt, error=error, partial_text=retried.reply.content)

    async def chain(self, model: ModelDefinition) -> list[ModelDefinition]:
        """The model, then each of its ``fallbacks`` (loaded by name; missing or repeated
        names are skipped; a fallback's own fallbacks are not followed)."""
        chain = [model]
        for name in model.fallbacks or []:
            fallback = await self.defs.find_model(name)
            if fallback is not None and all(m.name != fallback.name for m in chain):
                chain.append(fallback)
        return chain

    async def _completed(
        self,
        scope: Scope,
        opened: Opened,
        outcome: LadderOutcome,
        reply: LLMReply,
        image_errors: list[str],
    ) -> Reply:
        calls = reply.tool_calls
        if not calls and not reply.content.strip() and not reply.images:
            # The reference's empty-response guard: tell the model through an error tool result.
            calls = [
                make_tool_call(
                    "call_" + new_id().replace("-", "")[:12], INVALID_RESPONSE_TOOL, "{}"
                )
            ]
        attempt = outcome.attempt
        updates: dict[str, Any] = {
            "content": reply.content or None,
            "tool_calls": calls or None,
            "reasoning_content": reply.reasoning,
            "reasoning_details": reply.reasoning_details,
            "status": "completed",
            "response_completed_at": self.deps.clock.now(),
            "log_id": attempt.log.id,
        }
        metadata = dict(opened.message.metadata)
        if reply.provider_data:
            # Sent back with this message in later requests (history.to_llm_messages).
            metadata["provider_data"] = reply.provider_data
        if image_errors:
            metadata["image_errors"] = image_errors
        # What the vendor ran and the answer's sources (docs/providers.md#provider-tools).
        for key in ("provider_tools", "web_searches", "citations"):
            if getattr(reply, key):
                metadata[key] = list(getattr(reply, key))
        sources = [] if calls else self.knowledge.sources(scope, attempt.request.messages)
        if sources:  # the knowledge this answer was given (docs/knowledge.md, "Citations")
            metadata["citations"] = [*metadata.get("citations", []), *sources]
        if metadata != opened.message.metadata:
            updates["metadata"] = metadata
        if reply.images:  # generated images, already in the thread file system
            updates["attachments"] = list(reply.images)
        message = await self._update(scope, opened.message, updates)
        log = completed_log(attempt.log, attempt.model, reply)
        return Reply(message, Batch(updated=[message], logs=[log]), reply=reply)

    async def _failed(self, scope: Scope, opened: Opened, outcome: LadderOutcome) -> Reply:
        """The message failed; a partial reply stays visible, the error is kept on it."""
        error = outcome.error or ProviderError(STOPPED_MESSAGE, INVALID_REQUEST)
        updates: dict[str, Any] = {
            "status": "failed",
            "response_completed_at": self.deps.clock.now(),
            "log_id": outcome.attempt.log.id,
        }
        if not outcome.stopped:  # a stop is no error of the model's
            updates["metadata"] = {**opened.message.metadata, "error": error.describe()}
        if outcome.partial_text:
            updates["content"] = outcome.partial_text
        if outcome.partial_reasoning:
            updates["reasoning_content"] = outcome.partial_reasoning
        message = await self._update(scope, opened.message, updates)
        batch = Batch(updated=[message], logs=outcome.pending_logs())
        return Reply(message, batch, error=error, stopped=outcome.stopped)

    async def _update(self, scope: Scope, message: Message, updates: dict[str, Any]) -> Message:
        updates = await scope.hooks.before_update_message(scope.state, message.id, updates)
        known = {k: v for k, v in updates.items() if k in MESSAGE_FIELDS and k != "id"}
        return message.copy(**known)


def _schema_problem(request: ProviderRequest, outcome: LadderOutcome) -> str | None:
    """What is wrong with a final answer under the request's response schema (None: fine,
    no schema, or not a final answer: tool calls, or empty, which the empty-answer guard
    handles)."""
    reply = outcome.reply
    if request.response_schema is None or reply is None or reply.tool_calls:
        return None
    if not reply.content.strip():
        return None
    return answer_problem(request.response_schema, reply.content)
