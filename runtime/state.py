"""``ThreadState``: what tools, hooks, effects and endpoints get to work with a thread.

The same object serves code running inside a session (``execution`` is set)
and code running at rest (``execution`` is ``None``). Names follow the spec
in snake_case: ``state.get_messages``, ``state.inject_message``,
``state.get_value``/``set_value``, ``state.env``, ``state.execution.stop()`` …
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Protocol

import httpx

from runtime.core import env_refs, not_ours
from runtime.core.messages import (
    MESSAGE_FIELDS,
    QUEUED_TOOL_CALL,
    Message,
    Role,
    Side,
    make_tool_call,
    new_id,
)
from runtime.core.mime_types import normalize_mime_type
from runtime.core.results import ToolResult
from runtime.core.spec import (
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SessionToolBinding,
)
from runtime.core.transcript import Transcript
from runtime.effects import EFFECT_ID_KEY, SCHEDULED_EFFECT_KEY, Effects
from runtime.sandbox.options import CodeExecutionOptions
from runtime.sandbox.runner import CodeExecution, run_code
from runtime.store import file_images, files
from runtime.store.events import event, queued_data
from runtime.store.protocol import (
    EffectRun,
    EnvType,
    FileChunk,
    FileRecord,
    FileStats,
    FileType,
    FindResult,
    GrepResult,
    LogQuery,
    LogRecord,
    MessageQuery,
    QueuedMessage,
    ReaddirResult,
    ThreadRecord,
    ThreadUser,
    UserValuePage,
)
from runtime.store.recorder import Batch, Recorder
from runtime.store.storable import storable, storable_text

if TYPE_CHECKING:
    from runtime.definitions.loader import DefinitionLoader
    from runtime.deps import Deps
    from runtime.tools.hooks import HookRunner


def json_only(what: str, value: Any) -> None:
    """Refuse a value that is not JSON (spec: setValue values and emit data MUST be
    JSON-serializable), naming it, rather than failing later where nobody sees why."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serializable: {exc}") from None


# The reference's user KV limits (key length, page size).
USER_KEY_MAX = 512
USER_LIST_MAX = 500

# The env tiers whose values outrank a prompt's (and its tool entries') values.
_OUTRANK_PROMPT = ("thread", "agent")


class EnvNotFound(KeyError):
    """``state.env(name)`` found no value in any tier."""


class Relations(Protocol):
    """Queueing across threads and the subagent links (``runtime.delegation.subagents.Subagents``)."""

    async def queue(self, thread_id: str, message: QueuedMessage) -> None:
        """Queue a message for a thread and wake it when idle."""
        ...

    def queue_soon(self, thread_id: str, message: QueuedMessage) -> None:
        """``queue`` from synchronous code: done in the background, awaited by ``flush_soon``."""
        ...

    async def notify_parent(self, child: ThreadRecord, text: str) -> str:
        """Queue a silent message naming ``child`` to its parent; returns its id."""
        ...

    async def child_state(self, parent_id: str, reference: str) -> ThreadState | None:
        """A child's ``ThreadState`` at rest, or ``None``."""
        ...

    async def parent_state(self, child: ThreadRecord) -> ThreadState | None:
        """The parent's ``ThreadState`` at rest, or ``None`` for a top-level thread."""
        ...

    async def set_status(self, child: ThreadRecord, text: str) -> None:
        """Set a child's status text in its parent's registry."""
        ...

    async def terminate(self, thread_id: str) -> None:
        """Terminate a thread (and mark it in its parent's registry)."""
        ...


class ToolHost(Protocol):
    """Runs tools on behalf of ``ThreadState.invoke_tool``/``queue_tool``."""

    async def invoke_tool(self, state: ThreadState, name: str, args: dict[str, Any]) -> ToolResult:
        """Run tool (or prompt, or agent) ``name`` now and return its result; nothing is stored."""
        ...


@dataclass(slots=True)
class MessagesResult:
    """A page of messages (``get_messages``)."""

    messages: list[Message]
    total: int
    has_more: bool


@dataclass(slots=True)
class QueuedTool:
    """A tool call queued by ``state.queue_tool`` for the running step."""

    name: str
    args: dict[str, Any]
    id: str = field(default_factory=lambda: "call_" + new_id().replace("-", "")[:12])


class ExecutionControl:
    """The live control block of a running session, shared by every ``ExecutionState`` view."""

    def __init__(self, flow_id: str, side: Side, transcript: Transcript | None) -> None:
        self.flow_id = flow_id
        self.side: Side = side
        self.step_count = 0
        self.side_steps: dict[str, int] = {"a": 0, "b": 0}
        self.stopped = False
        self.stopped_by: Side | None = None
        self.stop_requested: str | None = None  # set by stop(): the session ends after the step
        self.stop_notify = True  # stop_session(notify_parent=…)
        self.stop_status: str | None = None  # stop_session(status=…)
        self.forced_side: Side | None = None
        self.queued_tools: list[QueuedTool] = []
        self.abort_signal = asyncio.Event()
        self.transcript = transcript
        self.prompt_name = ""
        # The acting side's session tools by tool name: (kind, binding), set every step.
        self.session_tools: dict[str, tuple[str, SessionToolBinding]] = {}


class ExecutionState:
    """The spec's ``ExecutionState``: counters and controls of the running session.

    One view per tool call, so ``tool_call_id`` is the id of the call being run
    (use it to make external side effects idempotent); hooks get a view without one.
    """

    def __init__(
        self,
        control: ExecutionControl,
        tool_call_id: str | None = None,
        path: tuple[str, ...] = (),
    ) -> None:
        self._control = control
        self.tool_call_id = tool_call_id
        self._path = path

    @property
    def flow_id(self) -> str:
        """Unique id of this session run."""
        return self._control.flow_id

    @property
    def current_side(self) -> Side:
        """The side acting now."""
        return self._control.side

    @property
    def step_count(self) -> int:
        """Steps run in this session (all sides)."""
        return self._control.step_count

    @property
    def side_a_step_count(self) -> int:
        """Steps run by side A in this session."""
        return self._control.side_steps["a"]

    @property
    def side_b_step_count(self) -> int:
        """Steps run by side B in this session."""
        return self._control.side_steps["b"]

    @property
    def stopped(self) -> bool:
        """Whether the session has been asked to stop."""
        return self._control.stopped or self._control.stop_requested is not None

    @property
    def stopped_by(self) -> Side | None:
        """The side that stopped the session, if any."""
        return self._control.stopped_by

    @property
    def prompt_name(self) -> str:
        """The prompt of the current step."""
        return self._control.prompt_name

    @property
    def prompt_path(self) -> list[str]:
        """The prompts from the session's prompt down to the one running now (spec 0.15
        ``promptPath``): ``['main']`` at the top, ``['main', 'summarize']`` in a sub-prompt."""
        if self._path:
            return list(self._path)
        return [self._control.prompt_name] if self._control.prompt_name else []

    @property
    def message_history(self) -> list[Message]:
        """The top-level messages of the thread as the session holds them."""
        transcript = self._control.transcript
        return list(transcript.messages) if transcript else []

    @property
    def abort_signal(self) -> asyncio.Event:
        """Set when the session is stopping; long-running tools may watch it."""
        return self._control.abort_signal

    def force_turn(self, side: Side) -> None:
        """Make ``side`` act next (in ``ai_human``, forcing side B hands over to the human)."""
        self._control.forced_side = side

    def stop(self) -> None:
        """End the session after the current step (stop reason ``state_stop_session``)."""
        self.stop_session()

    def stop_session(
        self, result: str | None = None, *, notify_parent: bool = True, status: str | None = None
    ) -> None:
        """End the session after the current step, with an optional result text (spec
        ``stopSession({result, notifyParent, status})``). In a child thread,
        ``notify_parent=False`` delivers nothing to the parent and ``status`` is the text the
        parent's registry shows afterwards (else ``idle``)."""
        self._control.stop_requested = result or ""
        self._control.stop_notify, self._control.stop_status = notify_parent, status
        self._control.stopped_by = self._control.side
        self._control.abort_signal.set()


class ThreadState:
    """The unified interface to one thread (spec ``ThreadState``)."""

    def __init__(
        self,
        deps: Deps,
        thread: ThreadRecord,
        *,
        defs: DefinitionLoader,
        recorder: Recorder,
        hooks: HookRunner | None = None,
        host: ToolHost | None = None,
        prompt_name: str | None = None,
        execution: ExecutionState | None = None,
        context: dict[str, Any] | None = None,
        relations: Relations | None = None,
        env_overlay: Mapping[str, str] | None = None,
        caller: tuple[str, str] | None = None,
    ) -> None:
        self._deps, self._thread, self._defs = deps, thread, defs
        self._caller = caller
        self._env_overlay = dict(env_overlay or {})
        self._relations = relations
        self._recorder, self._hooks, self._host = recorder, hooks, host
        self._prompt_name = prompt_name
        self.execution = execution
        self.context: dict[str, Any] = context if context is not None else {}
        self._effects: Effects | None = None

    def _with(self, **changes: Any) -> ThreadState:
        values: dict[str, Any] = {
            "defs": self._defs,
            "recorder": self._recorder,
            "hooks": self._hooks,
            "host": self._host,
            "prompt_name": self._prompt_name,
            "execution": self.execution,
            "context": self.context,
            "relations": self._relations,
            "env_overlay": self._env_overlay,
            "caller": self._caller,
        }
        values.update(changes)
        return ThreadState(self._deps, self._thread, **values)

    def for_tool_call(self, tool_call_id: str) -> ThreadState:
        """A view whose ``execution.tool_call_id`` is the call being run."""
        if self.execution is None:
            return self
        execution = self.execution
        return self._with(
            execution=ExecutionState(execution._control, tool_call_id, execution._path)
        )

    def as_tool(self, name: str) -> ThreadState:
        """The view a code tool runs with: ``fetch`` asks credential grants as tool ``name``."""
        return self.as_caller("tools", name)

    def as_caller(self, kind: str, name: str) -> ThreadState:
        """The view code of ``kind`` (``"tools"``, ``"endpoints"``) named ``name`` runs with:
        who ``fetch`` says is asking for a credential grant."""
        return self._with(caller=(kind, name))

    def with_env(self, values: Mapping[str, str] | None) -> ThreadState:
        """A view whose ``env`` sees ``values`` first (a prompt tool entry's ``env``)."""
        if not values:
            return self
        return self._with(env_overlay={**self._env_overlay, **values})

    def with_hooks(self, hooks: HookRunner) -> ThreadState:
        """A view whose writes run ``hooks`` (a handler side's: the agent's hooks)."""
        return self._with(hooks=hooks)

    def for_prompt(self, prompt_name: str, hooks: HookRunner) -> ThreadState:
        """A view for code running under another prompt (sub-prompts)."""
        execution = self.execution
        if execution is not None:
            path = (*execution._path, prompt_name)
            execution = ExecutionState(execution._control, execution.tool_call_id, path)
        return self._with(prompt_name=prompt_name, hooks=hooks, execution=execution)

    # --- identity ---------------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        """Thread id (a UUID4)."""
        return self._thread.id

    @property
    def agent_id(self) -> str:
        """Name of the thread's agent."""
        return self._thread.agent_name

    @property
    def user_id(self) -> str | None:
        """Owner of the thread, if any."""
        return self._thread.user_id

    @property
    def created_at(self) -> int:
        """Creation time, µs since the epoch."""
        return self._thread.created_at

    @property
    def parent_id(self) -> str | None:
        """The parent thread (for child threads)."""
        return self._thread.parent_id

    @property
    def prompt_name(self) -> str | None:
        """The prompt this state runs under (``None`` for a state at rest without one)."""
        return self._prompt_name

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments this thread was created with (spec 0.2.0 ``state.arguments``): a
        subagent child's ``subagent_create`` ``arguments`` (or an agent tool's initial
        arguments), kept for the child's life; ``{}`` for a thread created without any.
        A copy: changing it changes nothing stored."""
        # The link's stored ``arguments`` (``runtime.delegation.link.SubagentLink``, a layer
        # above this one, so read as the stored JSON it documents).
        stored = (self._thread.subagent or {}).get("arguments")
        return copy.deepcopy(stored) if isinstance(stored, dict) else {}

    # --- messages ---------------------------------------------------------------------

    async def get_messages(
        self,
        limit: int = 100,
        offset: int = 0,
        order: Literal["asc", "desc"] = "desc",
        include_silent: bool = False,
        max_depth: int = 0,
    ) -> MessagesResult:
        """A page of messages, paged as ``GET /api/threads/{id}/messages`` pages: ``'desc'``
        (the default) the newest ``limit`` after skipping the newest ``offset``, ``'asc'``
        the oldest ``limit`` after skipping the oldest ``offset``; oldest first either way."""
        query = MessageQuery(limit, offset, order, include_silent, max_depth)
        page = await self._deps.store.list_messages(self.thread_id, query)
        return MessagesResult(page.messages, page.total, page.has_more)

    async def get_message(self, message_id: str) -> Message | None:
        """One message, or ``None``."""
        return await self._deps.store.get_message(self.thread_id, message_id)

    async def inject_message(
        self,
        role: Role,
        content: str,
        *,
        silent: bool = False,
        metadata: dict[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> Message:
        """Add a top-level message now (``before/after_create_message`` hooks run)."""
        side: Side | None = "a" if role == "assistant" else ("b" if role == "user" else None)
        message = Message(
            id=new_id(),
            role=role,
            content=content,
            created_at=self._deps.clock.now(),
            silent=silent,
            metadata=_effect_metadata(self.context) | dict(metadata or {}),
            attachments=attachments,
            side=side,
            prompt_name=self._prompt_name,
        )
        return await self.create_message(message)

    async def delete_message(self, message_id: str) -> bool:
        """Delete a message (with the tool results answering its calls) or a queued message;
        listeners get ``message_deleted`` per id. ``False`` when nothing was there."""
        deleted = await self._deps.store.delete_message(self.thread_id, message_id)
        transcript = self._recorder.transcript
        for gone in deleted:
            if transcript is not None:
                transcript.remove(gone)
            self.emit("message_deleted", {"id": gone})
        return bool(deleted)

    async def create_message(self, message: Message) -> Message:
        """Insert a prepared message with hooks, store it and announce it."""
        if self._hooks is not None:
            message = await self._hooks.before_create_message(self, message)
        await self._recorder.commit(Batch(created=[message]), self._hooks, self)
        return message

    async def update_message(
        self, message_id: str, *, content: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Message:
        """Change a message's content and/or merge its metadata (``before/after_update_message``)."""
        current = await self._current(message_id)
        updates: dict[str, Any] = {}
        if content is not None:
            updates["content"] = content
        if metadata is not None:
            updates["metadata"] = {**current.metadata, **metadata}
        return await self.apply_update(current, updates)

    async def apply_update(self, current: Message, updates: dict[str, Any]) -> Message:
        """Apply field updates to a message with hooks, store it and announce it."""
        if self._hooks is not None:
            updates = await self._hooks.before_update_message(self, current.id, updates)
        known = {k: v for k, v in updates.items() if k in MESSAGE_FIELDS and k != "id"}
        updated = current.copy(**known)
        await self._recorder.commit(Batch(updated=[updated]), self._hooks, self)
        return updated

    async def _current(self, message_id: str) -> Message:
        transcript = self._recorder.transcript
        found = transcript.get(message_id) if transcript else None
        found = found or await self.get_message(message_id)
        if found is None:
            raise LookupError(f"Message not found: {message_id}")
        return found

    async def queue_message(
        self,
        content: str,
        role: Role = "user",
        *,
        silent: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Queue a message for the thread's next step (durable, ordered); returns its id.

        A running session takes it before its next step; an idle thread starts a
        session for it when the engine has a subagent host.
        """
        queued = storable(
            QueuedMessage(
                id=new_id(),
                role=role,
                content=content,
                silent=silent,
                metadata=dict(metadata or {}),
            )
        )
        if self._relations is not None:
            await self._relations.queue(self.thread_id, queued)
        else:
            await self._deps.store.queue_message(self.thread_id, queued)
            self._recorder.emit(queued_data(queued))
        return queued.id

    async def notify_parent(self, text: str) -> str:
        """Tell the parent thread something (a silent queued message naming this child)."""
        if self._relations is None:
            raise RuntimeError("notify_parent needs an engine")
        return await self._relations.notify_parent(self._thread, text)

    async def children(self) -> list[ThreadRecord]:
        """This thread's subagent registry: its child threads, oldest first."""
        return await self._deps.store.list_children(self.thread_id)

    async def get_child_thread(self, reference: str) -> ThreadState | None:
        """The ``ThreadState`` of one of this thread's children (``None``: unknown or terminated)."""
        if self._relations is None:
            raise RuntimeError("get_child_thread needs an engine")
        return await self._relations.child_state(self.thread_id, reference)

    async def get_parent_thread(self) -> ThreadState | None:
        """The parent thread's ``ThreadState`` (at rest), or ``None`` for a top-level thread."""
        if self._relations is None:
            raise RuntimeError("get_parent_thread needs an engine")
        return await self._relations.parent_state(self._thread)

    async def set_status(self, text: str) -> None:
        """Set this child's status text in its parent's registry (spec ``setStatus``); the
        session goes on, and its end settles the status (``idle``/``failed``) again."""
        if self._relations is None:
            raise RuntimeError("set_status needs an engine")
        await self._relations.set_status(self._thread, text)

    async def terminate(self) -> None:
        """Terminate this thread for good (spec lifecycle): it stops, nothing runs on it again,
        and a child shows ``terminated`` in its parent's registry."""
        if self._relations is None:
            raise RuntimeError("terminate needs an engine")
        await self._relations.terminate(self.thread_id)
        self._thread.terminated = self._thread.stopped = True

    @property
    def terminated(self) -> bool:
        """Whether the thread was terminated (as known to this state)."""
        return self._thread.terminated

    async def get_logs(
        self, limit: int = 100, offset: int = 0, order: Literal["asc", "desc"] = "asc"
    ) -> list[LogRecord]:
        """Execution logs of the thread."""
        return await self._deps.store.list_logs(self.thread_id, LogQuery(limit, offset, order))

    # --- definitions ------------------------------------------------------------------

    async def load_model(self, name: str) -> ModelDefinition:
        """A model definition; ``LookupError`` when missing."""
        return await self._defs.model(name)

    async def load_prompt(self, name: str) -> PromptDefinition:
        """A prompt definition; ``LookupError`` when missing."""
        return await self._defs.prompt(name)

    async def load_agent(self, name: str) -> AgentDefinition:
        """An agent definition; ``LookupError`` when missing."""
        return await self._defs.agent(name)

    async def get_prompt_names(self) -> list[str]:
        """Names of all prompts."""
        return await self._deps.store.definition_names("prompt")

    async def get_agent_names(self) -> list[str]:
        """Names of all agents."""
        return await self._deps.store.definition_names("agent")

    async def get_model_names(self) -> list[str]:
        """Names of all models."""
        return await self._deps.store.definition_names("model")

    # --- tools and events -------------------------------------------------------------

    def queue_tool(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Queue a call of tool ``name``; returns the call id. Its result is stored.

        In a running session it runs after the current step's tool calls. On an idle
        thread (a state at rest) it starts a session with that call (spec ``queueTool``):
        the call is queued like a message (durable, shown at once), a session takes it,
        runs it as its first step, and the model answers its result.
        """
        queued = QueuedTool(name, dict(args or {}))
        if self.execution is not None:
            self.execution._control.queued_tools.append(queued)
            return queued.id
        if self._relations is None:
            raise RuntimeError("queue_tool at rest needs an engine")
        call = make_tool_call(queued.id, name, queued.args)
        row = QueuedMessage(id=new_id(), role="assistant", metadata={QUEUED_TOOL_CALL: call})
        self._relations.queue_soon(self.thread_id, row)
        return queued.id

    async def invoke_tool(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        """Run a tool, prompt or agent now and return its result (no message is stored)."""
        if self._host is None:
            raise RuntimeError("This ThreadState cannot run tools")
        result = await self._host.invoke_tool(self, name, dict(args or {}))
        # Not stored, so not redacted by a commit: the caller must not see secrets either.
        redactor = await self._recorder.ready()
        if redactor:
            result = dataclasses.replace(
                result,
                result=redactor.data(result.result),
                error=redactor.data(result.error),
                stack=redactor.data(result.stack),
                attachments=redactor.data(result.attachments),
            )
        return result

    def emit(self, event_name: str, data: Any = None) -> None:
        """Send a custom event to the thread's live listeners."""
        json_only(f"emit('{event_name}') data", data)
        self._recorder.emit(event(event_name, data))

    # --- reference calls refused with a sentence (runtime.core.not_ours) ----------------

    async def run_agent(self, agent_name: str) -> None:
        """Spec 0.2.0 ``runAgent``: raises ``NotOurs`` (a thread here runs one agent)."""
        raise not_ours.run_agent_refusal(agent_name)

    async def call_client(
        self, tool: str, args: Any = None, *, timeout_ms: int | None = None, **options: Any
    ) -> Any:
        """Spec 0.2.0 ``callClient``: raises ``NotOurs`` (use a ``client: true`` tool entry)."""
        raise not_ours.call_client_refusal("call_client")

    async def call_client_stream(self, tool: str, args: Any = None, **options: Any) -> Any:
        """Spec 0.2.0 ``callClientStream``/``runtimeStreams``: raises ``NotOurs``."""
        raise not_ours.call_client_refusal("call_client_stream")

    # --- code execution ---------------------------------------------------------------

    def run_code(
        self, source: str, options: CodeExecutionOptions | Mapping[str, Any] | None = None
    ) -> CodeExecution:
        """Run JavaScript or TypeScript in a fresh capability-free sandbox (spec ``runCode``).

        Await the returned handle for the result; ``handle.terminate(reason)``
        stops it. Only what ``options`` bridges in is reachable (docs/run-code.md).
        """
        return run_code(source, options)

    # --- effects ----------------------------------------------------------------------

    async def schedule_effect(self, name: str, args: Any = None, delay_ms: int = 0) -> str:
        """Schedule effect ``name`` to run ``delay_ms`` from now, outside any session; its id.

        ``EffectNotFound`` for an unknown name and ``EffectArgsInvalid`` for arguments
        that fail its schema (nothing is stored then). See ``runtime.effects``.
        """
        return await self._effect_calls().schedule(name, args, delay_ms)

    async def get_scheduled_effects(self, name: str | None = None) -> list[EffectRun]:
        """Pending effect runs of this thread (of effect ``name`` if given), by due time."""
        return await self._effect_calls().scheduled(name)

    async def remove_scheduled_effect(self, effect_id: str) -> bool:
        """Cancel a pending run (kept in history as ``agent_canceled``); ``False`` if not pending."""
        return await self._effect_calls().remove(effect_id)

    def _effect_calls(self) -> Effects:
        if self._effects is None:
            # Ids scheduled from a tool call or an effect run are derived from its id.
            key = self.execution.tool_call_id if self.execution else self.context.get(EFFECT_ID_KEY)
            self._effects = Effects(self._deps, self._recorder, self.thread_id, key)
        return self._effects

    # --- values -----------------------------------------------------------------------

    async def get_value(self, key: str) -> Any:
        """A durable JSON value of the thread, or ``None``."""
        return await self._deps.store.get_value(self.thread_id, storable_text(key))

    async def set_value(self, key: str, value: Any) -> None:
        """Store a durable JSON value (``None`` deletes it). Spec 0.15: values are "returned
        exactly as they were stored", so ``get_value`` gives back ``value`` itself; wherever
        a value is shown (API, studio, frames, logs) it is redacted like every stored text, and
        one that held a secret is kept sealed by the store, never in clear at rest."""
        key = storable_text(key)
        exact = None
        if value is not None:
            json_only(f"setValue('{key}') value", value)
            # Text no database can hold (NUL, lone surrogates) is replaced in both forms
            # (runtime.store.storable); only a redaction makes the exact form differ.
            exact = storable(value)
            value = storable((await self._recorder.ready()).data(value))
            exact = None if exact == value else exact
        updated_at = await self._deps.store.set_value(self.thread_id, key, value, exact)
        self.emit("kv_changed", {"key": key, "deleted": value is None, "updated_at": updated_at})

    async def list_values(self, prefix: str = "") -> dict[str, Any]:
        """Durable values whose key starts with ``prefix``."""
        return await self._deps.store.list_values(self.thread_id, prefix)

    # --- user values (spec 0.2.0 user KV) -------------------------------------------------
    # The thread owner's account-wide values: what agents remember about a person across
    # threads. A thread without an owner has none (``LookupError``).

    def _owner(self) -> str:
        if self._thread.user_id is None:
            raise LookupError("This thread has no owner, so it has no user values.")
        return self._thread.user_id

    async def get_user_value(self, key: str) -> Any:
        """The owner's value under ``key`` exactly as set, or ``None``."""
        return await self._deps.store.get_user_value(self._owner(), storable_text(key))

    async def set_user_value(self, key: str, value: Any) -> None:
        """Store an account-wide value of the owner (``None`` deletes it); JSON only. Shown
        redacted like ``set_value``'s (``/api/users/me/kv``), returned exactly here."""
        owner, key = self._owner(), storable_text(key)
        if not 1 <= len(key) <= USER_KEY_MAX:
            raise ValueError(f"A user value's key is 1 to {USER_KEY_MAX} characters.")
        exact = None
        if value is not None:
            json_only(f"setUserValue('{key}') value", value)
            exact = storable(value)
            value = storable((await self._recorder.ready()).data(value))
            exact = None if exact == value else exact
        await self._deps.store.set_user_value(owner, key, value, exact)

    async def list_user_values(
        self, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        """The owner's values whose key starts with ``prefix``, by key (``limit`` 1–500)."""
        limit = max(1, min(limit, USER_LIST_MAX))
        return await self._deps.store.list_user_values(self._owner(), prefix, limit, max(0, offset))

    # --- env --------------------------------------------------------------------------

    async def env(self, name: str) -> str:
        """An env value (the calling tool entry's ``env`` → thread → agent → prompt → user →
        instance); ``EnvNotFound`` when missing. A ``${NAME}`` in a tool entry's value is
        env value ``NAME`` from the store (``runtime.core.env_refs``: credentials live there)."""
        if name in self._env_overlay:
            # A tool entry's env is the prompt's: thread and agent values outrank it (spec,
            # PromptDefinition.env), the user and instance tiers do not.
            stored = await self._deps.store.resolve_env(self.thread_id, name, self._prompt_name)
            if stored is not None and stored.source in _OUTRANK_PROMPT:
                return stored.value
            try:
                return await env_refs.expand(self._env_overlay[name], self._stored_env)
            except env_refs.MissingReference as missing:
                raise EnvNotFound(
                    f"Environment variable not found: {missing.name} (the tool entry's "
                    f"{name} refers to it)"
                ) from None
        value = await self._stored_env(name)
        if value is None:
            raise EnvNotFound(f"Environment variable not found: {name}")
        return value

    async def _stored_env(self, name: str) -> str | None:
        entry = await self._deps.store.resolve_env(self.thread_id, name, self._prompt_name)
        return entry.value if entry else None

    async def env_type(self, name: str) -> EnvType:
        """``'text'`` or ``'secret'`` (``'secret'`` when missing)."""
        if name in self._env_overlay:
            stored = await self._deps.store.resolve_env(self.thread_id, name, self._prompt_name)
            if stored is not None and stored.source in _OUTRANK_PROMPT:
                return stored.type
            # A literal is a prompt-level value, secret as a prompt's env values are; a value
            # built from env references takes their types.
            refs = env_refs.references(self._env_overlay[name])
            types = [await self._stored_type(ref) for ref in refs]
            return "text" if refs and "secret" not in types else "secret"
        return await self._stored_type(name)

    async def _stored_type(self, name: str) -> EnvType:
        entry = await self._deps.store.resolve_env(self.thread_id, name, self._prompt_name)
        return entry.type if entry else "secret"

    async def instance_env(self, name: str) -> str:
        """The instance tier's value only (spec ``instanceEnv``); ``EnvNotFound`` when missing."""
        entry = await self._deps.store.get_instance_env(name)
        if entry is None:
            raise EnvNotFound(f"Instance environment variable not found: {name}")
        return entry.value

    async def user(self) -> ThreadUser | None:
        """The thread's owner (spec 0.2.0 ``user()``: a ``ThreadUser`` with ``id``,
        ``username``, ``role``, ``permissions``, ``email``, ``display_name``, ``avatar_url``;
        ``is_admin`` kept; ``await user.call(method, path, body)`` runs the owner's user
        endpoints), or ``None`` for a thread without one."""
        if self._thread.user_id is None:
            return None
        user = await self._deps.store.get_user(self._thread.user_id)
        if user is not None:
            user.endpoint_caller = self._user_endpoint_caller(user.id)
        return user

    def _user_endpoint_caller(self, user_id: str) -> Any:
        """``user.call``: the owner's user endpoints, through the store (spec 0.2.0 F2)."""
        store, thread_id = self._deps.store, self.thread_id

        async def call(method: str, path: str, body: Any) -> Any:
            return await store.call_user_endpoint(user_id, method, path, body, thread_id)

        return call

    async def fetch(
        self, grant: str, url: str, method: str = "GET", **options: Any
    ) -> httpx.Response:
        """An HTTP request carrying the credential grant ``grant`` of the thread's owner (or
        the instance's), spec 0.2.0 ``fetch(grant, url, init)``: the platform injects the
        secret, so this code never holds it. Only a code tool or a thread endpoint may ask
        (the grant's ``allow.tools`` / ``allow.endpoints`` must name it), only for the
        grant's ``origins``, through the egress policy; ``PermissionError`` says why otherwise. ``options``: ``headers``,
        ``params``, ``json``, ``content``, ``data``. The response's ``request`` is the one
        given here, without the credential."""
        if self._caller is None:
            raise PermissionError(
                f"fetch({grant!r}): credential grants are lent to tools and thread endpoints; "
                "this code is neither."
            )
        owner = self._thread.user_id
        return await self._deps.store.grant_fetch(owner, grant, self._caller, method, url, options)

    @property
    def not_packable_runtime_context(self) -> Mapping[str, Any]:
        """Runtime handles that are not part of the portable surface and are never packed or
        serialized (spec ``_notPackableRuntimeContext``): ``store``, ``registry``, ``clock``
        and ``runtime`` (this runtime's name). Read-only; its keys may change."""
        return MappingProxyType(
            {
                "runtime": "standard-agents-studio",
                "store": self._deps.store,
                "registry": self._deps.registry,
                "clock": self._deps.clock,
            }
        )

    async def set_env(self, name: str, value: str, type: EnvType | None = None) -> None:
        """Write a thread env value (a new key is ``secret`` unless ``type`` says otherwise)."""
        value = storable_text(value)
        await self._deps.store.set_env(self.thread_id, name, value, type)
        if (type or await self.env_type(name)) == "secret":
            self._recorder.redactor.add([(name, value)])

    # --- files ------------------------------------------------------------------------
    # Paths are normalized here (``FilePathError``, a ``ValueError``, for traversal); every
    # change is announced as a ``file_created`` / ``file_updated`` / ``file_deleted`` /
    # ``file_moved`` event.

    async def write_file(
        self,
        path: str,
        data: bytes | str | AsyncIterable[bytes] | BinaryIO,
        mime_type: str = "application/octet-stream",
        *,
        metadata: dict[str, Any] | None = None,
        width: int | None = None,
        height: int | None = None,
    ) -> FileRecord:
        """Create or replace a file; ``data`` may be bytes, text, an async iterator of byte
        pieces or a binary file object (both streamed to the store, never held whole).

        Raster images given as bytes get a thumbnail, and their width and height when
        not given."""
        normalized = normalize_path(path)
        mime_type = normalize_mime_type(mime_type)
        source: bytes | AsyncIterable[bytes]
        thumbnail = None
        if isinstance(data, str | bytes | bytearray | memoryview):
            source = data.encode() if isinstance(data, str) else bytes(data)
            if file_images.is_raster_image(mime_type):
                thumb = await asyncio.to_thread(file_images.make_thumbnail, source)
                if thumb is not None:
                    thumbnail = thumb.data
                    if width is None and height is None:
                        width, height = thumb.width, thumb.height
        elif isinstance(data, AsyncIterable):
            source = data
        else:
            source = _read_pieces(data)
        existed = await self._deps.store.stat_file(self.thread_id, normalized) is not None
        record = await self._deps.store.write_file(
            self.thread_id,
            normalized,
            source,
            mime_type,
            metadata=storable(metadata),
            width=width,
            height=height,
            thumbnail=thumbnail,
        )
        kind = "file_updated" if existed else "file_created"
        self.emit(kind, {"path": record.path, "file": files.file_wire(record)})
        return record

    async def read_file(self, path: str) -> bytes | None:
        """A file's bytes, or ``None``."""
        return await self._deps.store.read_file(self.thread_id, normalize_path(path))

    async def read_file_stream(
        self, path: str, *, signal: asyncio.Event | None = None
    ) -> AsyncIterator[FileChunk] | None:
        """The file as ``FileChunk``s (one chunk for small files), or ``None`` when missing.

        Setting ``signal`` (the spec's abort signal) stops the stream before its next chunk.
        """
        stream = await self._deps.store.read_file_stream(self.thread_id, normalize_path(path))
        if stream is None or signal is None:
            return stream
        return _until(stream, signal)

    async def stat_file(self, path: str) -> FileRecord | None:
        """A file's or directory's record, or ``None``."""
        return await self._deps.store.stat_file(self.thread_id, normalize_path(path))

    async def stat(self, path: str) -> FileRecord | None:
        """Alias of ``stat_file``."""
        return await self.stat_file(path)

    async def readdir(self, path: str = "/") -> list[FileRecord]:
        """Entries of a directory."""
        return await self._deps.store.list_dir(self.thread_id, normalize_path(path))

    async def readdir_file(self, path: str = "/") -> ReaddirResult:
        """Spec ``readdirFile``: entries of a directory as ``ReaddirResult``."""
        return ReaddirResult(entries=await self.readdir(path))

    async def unlink(self, path: str) -> bool:
        """Delete a file or an empty directory; ``False`` when nothing was there."""
        normalized = normalize_path(path)
        deleted = await self._deps.store.delete_file(self.thread_id, normalized)
        if deleted:
            self.emit("file_deleted", {"path": normalized})
        return deleted

    async def unlink_file(self, path: str) -> bool:
        """Spec ``unlinkFile`` (alias of ``unlink``)."""
        return await self.unlink(path)

    async def mkdir(self, path: str) -> FileRecord:
        """Create a directory (and its parents); idempotent."""
        normalized = normalize_path(path)
        existed = await self._deps.store.stat_file(self.thread_id, normalized) is not None
        record = await self._deps.store.make_dir(self.thread_id, normalized)
        if not existed:
            self.emit("file_created", {"path": record.path, "file": files.file_wire(record)})
        return record

    async def mkdir_file(self, path: str) -> FileRecord:
        """Spec ``mkdirFile`` (alias of ``mkdir``)."""
        return await self.mkdir(path)

    async def rmdir(self, path: str) -> bool:
        """Remove an empty directory (``DirectoryNotEmptyError`` otherwise, ``NotADirectoryError``
        for a file); ``False`` when nothing was there."""
        normalized = normalize_path(path)
        if normalized == files.ROOT:
            raise files.FilePathError("The root directory cannot be removed.")
        removed = await self._deps.store.remove_dir(self.thread_id, normalized)
        if removed:
            self.emit("file_deleted", {"path": normalized})
        return removed

    async def rmdir_file(self, path: str) -> bool:
        """Spec ``rmdirFile`` (alias of ``rmdir``)."""
        return await self.rmdir(path)

    async def move_file(self, src: str, dst: str) -> FileRecord:
        """Move a file or a directory (with its entries) to ``dst`` (spec 0.2.0 ``moveFile``);
        its record there. Missing parents of ``dst`` are created. Refused, with nothing
        changed: a missing ``src`` (``FileNotFoundError``), an existing ``dst``
        (``FileExistsError``), a path outside the thread's tree, the root, or a directory
        into itself (``FilePathError``). Announced as ``file_moved`` ``{from, path, file}``,
        then ``file_deleted`` and ``file_created`` as the reference does."""
        source, target = normalize_path(src), normalize_path(dst)
        record = await self._deps.store.move_file(self.thread_id, source, target)
        wire = files.file_wire(record)
        self.emit("file_moved", {"from": source, "path": record.path, "file": wire})
        self.emit("file_deleted", {"path": source})
        self.emit("file_created", {"path": record.path, "file": wire})
        return record

    async def rename_file(self, path: str, new_name: str) -> FileRecord:
        """Rename an entry within its directory (spec 0.2.0 ``renameFile``): ``move_file``
        to ``new_name``, which must be one path segment (``FilePathError`` otherwise)."""
        source = normalize_path(path)
        return await self.move_file(source, files.rename_target(source, new_name))

    async def get_file_stats(self) -> FileStats:
        """File count, directory count and total size of the files."""
        return await self._deps.store.file_stats(self.thread_id)

    async def grep_files(
        self, pattern: str, *, path: str = "/", ignore_case: bool = False, limit: int = 100
    ) -> list[GrepResult]:
        """Lines of text files matching the regular expression ``pattern`` (``ValueError`` when
        it does not compile), at most ``limit`` lines."""
        return await self._deps.store.grep_files(
            self.thread_id, pattern, path=normalize_path(path), ignore_case=ignore_case, limit=limit
        )

    async def find_files(
        self, pattern: str, *, type: FileType = "all", limit: int = 1000
    ) -> FindResult:
        """Paths matching the glob ``pattern`` (``*.txt`` at any depth, ``/docs/**`` from the
        root, ``?`` one character)."""
        records = await self._deps.store.find_files(self.thread_id, pattern, type=type, limit=limit)
        return FindResult(paths=[r.path for r in records])

    async def get_file_thumbnail(self, path: str) -> bytes | None:
        """The JPEG thumbnail of an image file, or ``None``."""
        return await self._deps.store.file_thumbnail(self.thread_id, normalize_path(path))


async def _read_pieces(fh: BinaryIO) -> AsyncIterator[bytes]:
    while piece := await asyncio.to_thread(fh.read, files.CHUNK_SIZE):
        yield piece


async def _until(
    stream: AsyncIterator[FileChunk], signal: asyncio.Event
) -> AsyncIterator[FileChunk]:
    async for chunk in stream:
        if signal.is_set():
            return
        yield chunk


def _effect_metadata(context: dict[str, Any]) -> dict[str, Any]:
    """Messages injected by an effect handler say which run wrote them (as the reference does)."""
    scheduled = context.get(SCHEDULED_EFFECT_KEY)
    return {"scheduledEffect": dict(scheduled)} if scheduled else {}


def normalize_path(path: str) -> str:
    """``'a//b/./c/../d/'`` → ``'/a/b/d'``; a path above the root raises ``FilePathError``."""
    return files.normalize_path(path)
