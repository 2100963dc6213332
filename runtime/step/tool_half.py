"""The tool half of a step: run the calls of an assistant message and store each result.

Per call: ``tool_started`` telemetry, a ``tool_call_started`` event and hook; the
call is dispatched (native tool, sub-prompt, agent, handoff, stop tool);
argument errors and exceptions become error results the model sees; then the
``tool_call_done`` event and hook, ``after_tool_call_success``/``_failure``,
``before_store_tool_result``, new attachments stored under ``/attachments/``,
``before_create_message``; the
result row and a tool log are committed together. Calls run one by one, or
concurrently when the prompt sets ``parallelToolCalls``; either way results
are stored in call order. The last result is not committed here: it goes out
with the step's progress in the session's closing commit.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import json
import mimetypes
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from runtime.core import env_refs, tracing, waits
from runtime.core.messages import Message, ToolCall, make_tool_call, new_id, now_ms, parse_arguments
from runtime.core.results import ToolResult, failure, normalize, success
from runtime.core.spec import ToolConfig
from runtime.core.waits import WaitKind
from runtime.definitions.loader import DefinitionLoader
from runtime.deps import Deps
from runtime.mcp.servers import McpNeedsInput
from runtime.state import ExecutionControl, ThreadState
from runtime.step.llm_half import INVALID_RESPONSE_TOOL, Scope
from runtime.step.tool_progress import completed_argument, progress_argument
from runtime.store.error_origin import tool_origin
from runtime.store.events import event, telemetry
from runtime.store.protocol import LogRecord, is_commit_failure
from runtime.store.recorder import Batch, Recorder
from runtime.tools.toolset import OfferedTool, resolve

# How often a running tool's session looks for a Stop (one small read per running call).
STOP_POLL_SECONDS = 0.5
# How often a call held for the person's answer to its server's question reads its row.
LIVE_POLL_SECONDS = 0.5
EMPTY_RESPONSE_ERROR = (
    "Your last response was empty. Reply with text, call a tool, or attach a file."
)
# Tool-row metadata: the thread files a sessionStop/sessionFail call returned to the parent.
RETURNED_FILES_KEY = "returned_attachments"


@dataclass(slots=True)
class Slot:
    """Where a call's result will be stored: a pre-assigned message id and ``created_at``.

    Pre-assigning in call order keeps results in call order when calls run
    concurrently, and gives sub-prompts a parent id before their result exists.
    """

    id: str
    created_at: int
    exists: bool = False
    subagent_id: str | None = None
    detached: bool = False  # ``invoke_tool``: no result row will ever exist
    waited: Message | None = None  # the decided row of a call that waited (``runtime.core.waits``)


@dataclass(slots=True)
class CallOutcome:
    """A call of the step and its result row (stored or about to be)."""

    call: ToolCall
    message: Message

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.message.tool_status != "error"


@dataclass(slots=True)
class Prepared:
    """A finished call whose result row is ready to commit."""

    outcome: CallOutcome
    batch: Batch
    state: ThreadState


@dataclass(slots=True)
class ToolRun:
    """All calls of a step; ``deferred`` holds the uncommitted last result."""

    outcomes: list[CallOutcome] = field(default_factory=list)
    deferred: Batch = field(default_factory=Batch)
    stopped: bool = False
    parked: bool = False  # a call waits for a decision: the session parks


class CallDelegate(Protocol):
    """Runs the calls of tools that are prompts, agents or handoffs (``runtime.delegation.delegate``'s
    ``Delegate``, which builds on this module)."""

    async def subprompt(
        self, scope: Scope, offered: OfferedTool, call: ToolCall, args: dict[str, Any], slot: Slot
    ) -> ToolResult: ...

    async def agent(
        self, scope: Scope, offered: OfferedTool, call: ToolCall, args: dict[str, Any], slot: Slot
    ) -> ToolResult: ...

    def handoff(self, offered: OfferedTool, args: dict[str, Any]) -> ToolResult: ...


class ToolRunner:
    """Executes tool calls for one session."""

    def __init__(
        self, deps: Deps, defs: DefinitionLoader, recorder: Recorder, control: ExecutionControl
    ) -> None:
        self.deps, self.defs, self.recorder, self.control = deps, defs, recorder, control
        self.delegate: CallDelegate | None = None

    async def run(self, scope: Scope, message: Message, stored: dict[str, Message]) -> ToolRun:
        """Run the calls of ``message`` that have no stored result, plus tools queued meanwhile."""
        run = ToolRun()
        calls = list(message.tool_calls or [])
        slots = self._slots(calls, stored)
        started = (
            self._start_all(scope, calls, slots, stored) if scope.prompt.parallel_tool_calls else {}
        )
        index = 0
        try:
            while index < len(calls):
                call = calls[index]
                index += 1
                done = stored.get(call["id"])
                if done is not None and done.status != "pending":
                    run.outcomes.append(CallOutcome(call, done))
                    continue
                if self._parks(scope, call, done, slots[call["id"]], run):
                    continue  # the step's other calls still run (or park) now
                task = started.get(call["id"])
                prepared = (
                    await task if task else await self.execute(scope, call, slots[call["id"]])
                )
                if prepared.outcome.message.status == "pending":  # its handler parked it
                    run.parked = True
                    run.deferred = run.deferred.merge(prepared.batch)
                    continue
                run.outcomes.append(prepared.outcome)
                self._take_queued(scope, message, calls, slots, run)
                if index == len(calls):
                    run.deferred = run.deferred.merge(prepared.batch)
                elif (
                    await self.recorder.commit(prepared.batch, scope.hooks, prepared.state)
                ).stopped:
                    run.stopped = True
                    break
        finally:
            for task in started.values():
                task.cancel()
        return run

    def wait_kind(self, scope: Scope, call: ToolCall) -> WaitKind | None:
        """Whether the call must wait for a decision from outside the session."""
        offered = scope.tools.get(call["function"]["name"])
        if offered is None:
            return None
        if offered.entry.client:
            return "client"
        return "approval" if offered.entry.requires_approval else None

    def _parks(
        self, scope: Scope, call: ToolCall, row: Message | None, slot: Slot, run: ToolRun
    ) -> bool:
        """Park the session on a call that waits and has no decision yet (its pending row is
        staged in ``run.deferred``; it goes out with the session's parking commit)."""
        kind = self.wait_kind(scope, call)
        if kind is None or (row is not None and waits.decision_of(row) is not None):
            return False
        if scope.depth > 0:
            return False  # refused in ``dispatch``: only the session's own step can park
        run.parked = True
        if row is not None:
            return True  # parked already: a resume before the decision changes nothing
        offered = scope.tools[call["function"]["name"]]
        seconds = offered.entry.wait_timeout_seconds or self.deps.limits.tool_wait_seconds
        wait = waits.wait_object(kind, call, seconds, waits.now_ms())
        run.deferred = run.deferred.merge(
            Batch(created=[self._pending_row(scope, call, slot, wait)])
        )
        return True

    def _pending_row(
        self, scope: Scope, call: ToolCall, slot: Slot, wait: dict[str, Any]
    ) -> Message:
        """The ``pending`` result row of a call that waits (announced with ``tool_call_waiting``)."""
        pending = Message(
            id=slot.id,
            role="tool",
            name=call["function"]["name"],
            tool_call_id=call["id"],
            status="pending",
            created_at=slot.created_at,
            parent_id=scope.parent_id,
            depth=scope.depth,
            side=scope.side,
            prompt_name=scope.prompt.name,
            metadata={waits.WAIT_KEY: wait},
        )
        self.recorder.emit(
            event(
                "tool_call_waiting",
                {"id": call["id"], "name": pending.name, "message_id": slot.id, **wait},
            )
        )
        return pending

    def _slots(self, calls: list[ToolCall], stored: dict[str, Message]) -> dict[str, Slot]:
        slots = {}
        for call in calls:
            row = stored.get(call["id"])
            if row is not None:
                decided = row if waits.decision_of(row) is not None else None
                slots[call["id"]] = Slot(row.id, row.created_at, exists=True, waited=decided)
            else:
                slots[call["id"]] = Slot(new_id(), self.deps.clock.now())
        return slots

    def _start_all(
        self,
        scope: Scope,
        calls: list[ToolCall],
        slots: dict[str, Slot],
        stored: dict[str, Message],
    ) -> dict[str, asyncio.Task[Prepared]]:
        return {
            c["id"]: asyncio.ensure_future(self.execute(scope, c, slots[c["id"]]))
            for c in calls
            if (stored.get(c["id"]) is None or stored[c["id"]].status == "pending")
            and self.wait_kind(scope, c) is None  # waiting calls run in order, once decided
        }

    def _take_queued(
        self,
        scope: Scope,
        message: Message,
        calls: list[ToolCall],
        slots: dict[str, Slot],
        run: ToolRun,
    ) -> None:
        """Append tools queued with ``state.queue_tool`` to this step (and to its assistant message)."""
        if not self.control.queued_tools:
            return
        queued = [make_tool_call(q.id, q.name, q.args) for q in self.control.queued_tools]
        self.control.queued_tools.clear()
        calls.extend(queued)
        slots.update(self._slots(queued, {}))
        updated = message.copy(
            tool_calls=list(calls), metadata={**message.metadata, "queued_tools": True}
        )
        run.deferred = run.deferred.merge(Batch(updated=[updated]))

    # --- one call --------------------------------------------------------------------

    async def _watch_stop(self, thread_id: str, signal: asyncio.Event) -> None:
        """Set ``execution.abortSignal`` when the user presses Stop while a tool runs (the stop
        is a flag in the store; a long-running tool watching the signal can end early)."""
        while not signal.is_set():
            await asyncio.sleep(STOP_POLL_SECONDS)
            thread = await self.deps.store.get_thread(thread_id)
            if thread is not None and thread.stopped:
                signal.set()

    async def _announce(
        self, scope: Scope, state: ThreadState, offered: OfferedTool | None, call: ToolCall
    ) -> None:
        """``tool_call_started`` as the call starts to run; a tool with a progress argument
        the stream never completed still gets it, from the whole arguments."""
        data: dict[str, Any] = {"id": call["id"], "name": call["function"]["name"]}
        progress = None
        argument = progress_argument(offered)
        if argument is not None:
            progress = completed_argument(call["function"]["arguments"], argument, whole=True)[1]
            data["progress"] = progress
        self.recorder.emit(event("tool_call_started", data))
        await scope.hooks.tool_call_started(state, call, progress)

    async def execute(self, scope: Scope, call: ToolCall, slot: Slot) -> Prepared:
        """Run one call and prepare its result row and log (not committed)."""
        name = call["function"]["name"]
        state = scope.state.for_tool_call(call["id"])
        offered = scope.tools.get(name)
        if offered is not None and offered.entry.env:
            # The entry's env values are prompt-level values: secrets, kept out of what is stored.
            state = state.with_env(offered.entry.env)
            self.recorder.redactor.add(
                ("", v) for v in offered.entry.env.values() if not env_refs.references(v)
            )
        self.recorder.emit(telemetry("tool_started", tool=name))
        if call["id"] not in scope.announced:  # else it fired while the model streamed it
            await self._announce(scope, state, offered, call)
        started = time.perf_counter()
        signal = state.execution.abort_signal if state.execution is not None else None
        watch = asyncio.create_task(self._watch_stop(scope.thread.id, signal)) if signal else None
        with tracing.tool_span(name, call["id"]) as span:
            try:
                result = await self.dispatch(scope, call, slot, state)
            except waits.ParkCall as park:
                return self._parked(scope, call, slot, state, park)
            except asyncio.CancelledError:
                if signal is not None:  # a worker cancels the session when Stop is pressed
                    signal.set()
                raise
            finally:
                if watch is not None:
                    watch.cancel()
            if result.status == "error":
                tracing.record_error(span, "the tool returned an error")
        self.recorder.emit(
            event("tool_call_done", {"id": call["id"], "name": name, "status": result.status})
        )
        self.recorder.emit(telemetry("tool_completed", tool=name, status=result.status))
        await scope.hooks.tool_call_done(state, call, result)
        result = await scope.hooks.after_tool_call(state, call, result)
        result, returned = await self._session_tool(scope, call, result, state)
        result = await scope.hooks.before_store_tool_result(state, call, result)
        attachments, notes = await self._attachments(state, result)
        message = self._result_row(scope, call, slot, result, attachments, notes)
        if returned is not None:
            message = message.copy(metadata={**message.metadata, RETURNED_FILES_KEY: returned})
        if not slot.exists:
            message = await scope.hooks.before_create_message(state, message)
        log = self._log(scope, call, result, started)
        batch = Batch(logs=[log])
        (batch.updated if slot.exists else batch.created).append(message)
        return Prepared(CallOutcome(call, message), batch, state)

    def _parked(
        self, scope: Scope, call: ToolCall, slot: Slot, state: ThreadState, park: waits.ParkCall
    ) -> Prepared:
        """A call its handler parked: its ``pending`` row, staged for the parking commit."""
        offered = scope.tools.get(call["function"]["name"])
        seconds = (
            offered.entry.wait_timeout_seconds if offered is not None else None
        ) or self.deps.limits.tool_wait_seconds
        wait = {**waits.wait_object(park.kind, call, seconds, waits.now_ms()), **park.details}
        pending = self._pending_row(scope, call, slot, wait)
        batch = Batch()
        (batch.updated if slot.exists else batch.created).append(pending)
        return Prepared(CallOutcome(call, pending), batch, state)

    async def _session_tool(
        self, scope: Scope, call: ToolCall, result: ToolResult, state: ThreadState
    ) -> tuple[ToolResult, list[str] | None]:
        """A side's session tool (reference §4.7): the stored text is its ``messageProperty``
        argument; its ``attachmentsProperty`` must name files of this thread (else the call
        fails); a ``sessionStatus`` call sets the status in the parent's registry."""
        found = self.control.session_tools.get(call["function"]["name"])
        if found is None or scope.depth != 0 or not result.ok:
            return result, None
        kind, binding = found
        try:
            args = parse_arguments(call)
        except ValueError:
            args = {}
        returned: list[str] | None = None
        if binding.attachments_property:
            paths = args.get(binding.attachments_property) or []
            paths = [paths] if isinstance(paths, str) else paths
            returned, missing = await _existing_files(state, paths)
            if missing:
                return failure(
                    "Provided attachment path(s) not found in this thread: "
                    + ", ".join(missing)
                    + ". Use an exact /attachments/... path of a file in this thread."
                ), None
        text = args.get(binding.message_property) if binding.message_property else None
        if text is not None:
            text = text if isinstance(text, str) else json.dumps(text)
            result = dataclasses.replace(result, result=text)
        if kind == "session_status" and state.parent_id is not None:
            await state.set_status(result.content)
        return result, returned

    async def dispatch(
        self, scope: Scope, call: ToolCall, slot: Slot, state: ThreadState
    ) -> ToolResult:
        """What the call returns; never raises (except cancellation)."""
        name = call["function"]["name"]
        if name == INVALID_RESPONSE_TOOL:
            return failure(EMPTY_RESPONSE_ERROR)
        if slot.waited is not None:
            wait = waits.wait_of(slot.waited) or {}
            decided = waits.result_for(waits.decision_of(slot.waited) or {}, wait)
            if decided is not None or wait.get("kind") == "client":
                return decided or failure("The client sent no result.")
        elif (scope.depth > 0 or slot.detached) and self.wait_kind(scope, call) is not None:
            # Nothing can park inside a sub-prompt or ``invoke_tool``: refuse rather than run
            # a call that must wait for a person or the client.
            return failure(
                f"Tool '{name}' waits for approval or for the client, which works only in the "
                "agent's own prompt (not in a sub-prompt or through invoke_tool)."
            )
        offered = scope.tools.get(name)
        if offered is None:
            return failure(f"Tool '{name}' is not available for this prompt.")
        try:
            args = parse_arguments(call)
        except ValueError as exc:
            return failure(f"Tool arguments are not valid JSON: {exc}")
        try:
            return await self._call(scope, offered, call, args, slot, state)
        except waits.ParkCall as park:
            if scope.depth > 0 or slot.detached:
                return failure(park.refusal)  # only the session's own step can park
            raise
        except Exception as exc:  # a failing tool is a result the model sees, not a crash
            if is_commit_failure(exc):
                raise
            return failure(str(exc) or type(exc).__name__, stack=traceback.format_exc())

    async def _call(
        self,
        scope: Scope,
        offered: OfferedTool,
        call: ToolCall,
        args: dict[str, Any],
        slot: Slot,
        state: ThreadState,
    ) -> ToolResult:
        if offered.kind == "native":
            return await self._native(offered, args, state)
        if offered.kind == "stop":
            return success(_stop_text(args))
        if offered.kind == "mcp":
            return await self._mcp(scope, offered, call, args, slot, state)
        assert self.delegate is not None
        if offered.kind == "prompt":
            return await self.delegate.subprompt(scope, offered, call, args, slot)
        if offered.kind == "agent":
            return await self.delegate.agent(scope, offered, call, args, slot)
        return self.delegate.handoff(offered, args)

    async def _native(
        self, offered: OfferedTool, args: dict[str, Any], state: ThreadState
    ) -> ToolResult:
        tool = offered.tool
        assert tool is not None
        parsed = None
        if tool.args_model is not None:
            try:
                parsed = tool.args_model.model_validate(args)
            except ValidationError as exc:
                return failure("Tool argument validation failed: " + validation_text(exc))
        # The tool's own view: ``state.fetch`` asks credential grants as this tool (hooks
        # around the call get the view without it).
        return normalize(await tool(state.as_tool(tool.name), parsed))

    async def _mcp(
        self,
        scope: Scope,
        offered: OfferedTool,
        call: ToolCall,
        args: dict[str, Any],
        slot: Slot,
        state: ThreadState,
    ) -> ToolResult:
        assert self.deps.mcp is not None and offered.mcp is not None
        store, thread_id, prompt = self.deps.store, scope.thread.id, scope.prompt.name

        async def env(name: str) -> str | None:
            entry = await store.resolve_env(thread_id, name, prompt)
            return entry.value if entry else None

        server, tool = offered.mcp
        # A call that waited for the person's answer to the server's question goes back with it.
        resume = None
        if slot.waited is not None:
            wait = waits.wait_of(slot.waited) or {}
            decision = waits.decision_of(slot.waited) or {}
            # A held question (``live``) was answered to a session that has since died: its
            # server lost the call with the connection, so the call simply runs again.
            answered = decision.get("type") == "input_answered" and not wait.get(waits.LIVE_KEY)
            if wait.get("kind") == "input" and answered:
                resume = {**(wait.get("input") or {}), "answer": decision}
        ask = None
        if scope.depth == 0 and not slot.detached:  # elsewhere nobody can answer: refused

            async def ask(question: dict[str, Any]) -> dict[str, Any]:
                return await self._ask_live(scope, call, slot, state, question)

        try:
            return await self.deps.mcp.call(
                server,
                tool,
                args,
                call_id=call["id"],
                env=env,
                thread_id=thread_id,
                resume=resume,
                ask=ask,
            )
        except McpNeedsInput as asked:
            raise waits.ParkCall(
                "input",
                {"input": asked.details},
                f"MCP server '{server}' asked the person a question, which can be answered "
                "only in the agent's own prompt (not in a sub-prompt or through invoke_tool).",
            ) from None

    async def _ask_live(
        self,
        scope: Scope,
        call: ToolCall,
        slot: Slot,
        state: ThreadState,
        question: dict[str, Any],
    ) -> dict[str, Any]:
        """A 2025-era MCP server's question in the middle of the call: stored and announced
        exactly as a parked question is (the call's ``pending`` row, a ``tool_wait`` of kind
        ``input``, marked ``live``), so the chat's form and ``…/inputs/{requestId}`` answer
        it; the call is held meanwhile and the decision read back from the store."""
        seconds = self.deps.limits.live_question_seconds
        wait = {
            **waits.wait_object("input", call, seconds, waits.now_ms()),
            "input": {"questions": [question], "request_state": None},
            waits.LIVE_KEY: True,
        }
        pending = self._pending_row(scope, call, slot, wait)
        # A server may ask again in the same call: the same row waits again.
        batch = Batch(updated=[pending]) if slot.exists else Batch(created=[pending])
        await self.recorder.commit(batch, scope.hooks, state)
        slot.exists = True
        row = await self._live_decision(scope.thread.id, call["id"], slot.id, wait["expires_at"])
        slot.waited = row  # the result row keeps who answered what
        decision = waits.decision_of(row) or {}
        if decision.get("type") == "input_answered" and decision.get("action") in (
            "accept",
            "decline",
        ):
            return {"action": decision["action"], "content": decision.get("content") or {}}
        return {"action": "cancel", "content": {}}  # expired, stopped, or cancelled

    async def _live_decision(
        self, thread_id: str, call_id: str, row_id: str, expires_at: int
    ) -> Message | None:
        """The held question's row once decided; past its expiry it is decided "expired"
        (conditionally: an answer that came first wins)."""
        store = self.deps.store
        while True:
            row = await store.get_message(thread_id, row_id)
            if row is None or waits.decision_of(row) is not None or row.status != "pending":
                return row
            if waits.now_ms() >= expires_at:
                expired = await store.decide_tool_call(thread_id, call_id, waits.expired())
                return expired or await store.get_message(thread_id, row_id)
            await asyncio.sleep(LIVE_POLL_SECONDS)

    async def invoke(self, scope: Scope, name: str, args: dict[str, Any]) -> ToolResult:
        """``state.invoke_tool``: run any tool, prompt or agent now; nothing is stored."""
        offered = scope.tools.get(name) or await resolve(
            self.defs, self.deps.registry, ToolConfig(name=name), self.deps.mcp
        )
        if offered is None:
            return failure(f"Tool '{name}' not found.")
        call = make_tool_call("call_" + new_id().replace("-", "")[:12], name, args)
        invoked = Scope(**{**_scope_fields(scope), "tools": {**scope.tools, name: offered}})
        slot = Slot(new_id(), self.deps.clock.now(), detached=True)
        return await self.dispatch(invoked, call, slot, scope.state.for_tool_call(call["id"]))

    # --- result rows -------------------------------------------------------------------

    def _result_row(
        self,
        scope: Scope,
        call: ToolCall,
        slot: Slot,
        result: ToolResult,
        attachments: list[dict[str, Any]],
        notes: list[str],
    ) -> Message:
        content = "\n".join([result.content, *notes]) if notes else result.content
        metadata: dict[str, Any] = {"subagent_id": slot.subagent_id} if slot.subagent_id else {}
        if slot.waited is not None:  # keep who decided what on the row
            metadata[waits.WAIT_KEY] = waits.wait_of(slot.waited)
        return Message(
            id=slot.id,
            role="tool",
            content=content,
            name=call["function"]["name"],
            tool_call_id=call["id"],
            tool_status="success" if result.ok else "error",
            status="completed",
            created_at=slot.created_at,
            parent_id=scope.parent_id,
            depth=scope.depth,
            side=scope.side,
            attachments=attachments or None,
            prompt_name=scope.prompt.name,
            metadata=metadata,
            subagent_id=slot.subagent_id,
        )

    def _log(self, scope: Scope, call: ToolCall, result: ToolResult, started: float) -> LogRecord:
        return LogRecord(
            id=new_id(),
            thread_id=scope.thread.id,
            kind="tool",
            message_id=scope.root_message_id,
            parent_id=scope.log_id,
            prompt_name=scope.prompt.name,
            tool_name=call["function"]["name"],
            tool_call_id=call["id"],
            request_body={"arguments": call["function"]["arguments"]},
            response_body=result.to_dict() | {"stack": None},
            error=result.error or "" if not result.ok else "",
            error_type="" if result.ok else "tool_execution_error",
            error_origin="" if result.ok else tool_origin(call["function"]["name"]),
            latency_ms=int((time.perf_counter() - started) * 1000),
            is_complete=True,
            created_at=self.deps.clock.now(),
        )

    async def _attachments(
        self, state: ThreadState, result: ToolResult
    ) -> tuple[list[dict[str, Any]], list[str]]:
        refs: list[dict[str, Any]] = []
        notes: list[str] = []
        for item in result.attachments:
            if "data" not in item:
                refs.append(item)
                continue
            ref = await store_attachment(state, item)
            refs.append(ref)
            notes.append(f'Attachment path for "{ref["name"]}": {ref["path"]}')
        return refs, notes


async def _existing_files(state: ThreadState, paths: Any) -> tuple[list[str], list[str]]:
    """The paths that name files of the thread (normalized), and those that do not."""
    found: list[str] = []
    missing: list[str] = []
    for path in paths if isinstance(paths, list) else [paths]:
        try:
            record = await state.stat_file(path) if isinstance(path, str) else None
        except ValueError:  # a path above the root
            record = None
        if record is None or record.is_directory:
            missing.append(str(path))
        else:
            found.append(record.path)
    return found, missing


async def store_attachment(state: ThreadState, item: dict[str, Any]) -> dict[str, Any]:
    """Write a new tool attachment under ``/attachments/`` and return its ``AttachmentRef``."""
    name = str(item.get("name") or "attachment")
    mime = str(item.get("mimeType") or mimetypes.guess_type(name)[0] or "application/octet-stream")
    try:
        data = base64.b64decode(item["data"], validate=False)
    except (binascii.Error, TypeError) as exc:
        raise ValueError(f"Attachment {name} is not valid base64: {exc}") from exc
    ext = (
        name.rsplit(".", 1)[-1] if "." in name else (mimetypes.guess_extension(mime) or ".bin")[1:]
    )
    path = f"/attachments/{now_ms()}-{new_id()[:8]}.{ext}"
    width, height = item.get("width"), item.get("height")
    record = await state.write_file(path, data, mime, width=width, height=height)
    ref: dict[str, Any] = {
        "id": new_id(),
        "type": "file",
        "path": record.path,
        "name": name,
        "mimeType": mime,
        "size": record.size,
    }
    if width is not None:
        ref["width"], ref["height"] = width, height
    return ref


def validation_text(exc: ValidationError) -> str:
    """``[path] message; …`` for a pydantic validation error."""
    return "; ".join(
        f"[{'.'.join(str(p) for p in err['loc']) or '(root)'}] {err['msg']}" for err in exc.errors()
    )


def _stop_text(args: dict[str, Any]) -> str:
    values = [v for v in args.values() if isinstance(v, str)]
    return values[0] if len(values) == 1 else "Done"


def _scope_fields(scope: Scope) -> dict[str, Any]:
    return {name: getattr(scope, name) for name in Scope.__dataclass_fields__}
