"""One session: the step loop of an agent on a thread, from start (or resume) to a stop reason.

The loop reads top to bottom: ``run`` resumes whatever step was in flight,
then calls ``_step`` until it returns ``Finished``. A step is: build the
request, open the step (commit), call the model, store the response (commit),
run the tools (a commit per result), evaluate the stop conditions and close
the step with the session's progress (the last result rides along). Every
commit is a checkpoint: a session killed anywhere resumes from storage
without calling the model or a tool again for anything already stored.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from runtime.core import tracing, waits
from runtime.core.messages import (
    QUEUED_TOOL_CALL,
    Message,
    Side,
    new_id,
    role_for_side,
    side_of,
)
from runtime.core.outcomes import SessionResult, final_text, other, repeated_error_text, result_of
from runtime.core.progress import OpenStep, SessionProgress, TurnOutcome, TurnReason
from runtime.core.spec import SPEC_0_1, SPEC_0_2, AgentDefinition, PromptDefinition, SideConfig
from runtime.core.transcript import Transcript
from runtime.definitions.loader import DefinitionLoader, DefinitionNotFound
from runtime.delegation.delegate import Delegate, PendingHandoff, attachment_refs
from runtime.delegation.subagents import arguments_text, initial_arguments
from runtime.deps import Deps
from runtime.loop.handler_turn import HandlerTurn
from runtime.loop.stops import (
    CallResult,
    Continue,
    Finished,
    StepFacts,
    StepOutcome,
    Stop,
    both_sides_stopped,
    evaluate,
    has_turn_condition,
    out_of_turns,
    session_turn_cap,
)
from runtime.providers.base import ProviderError
from runtime.state import ExecutionControl, ExecutionState, ThreadState
from runtime.step.history import Converted, Selected, Window, select_from, to_llm_messages
from runtime.step.llm import interrupted_log
from runtime.step.llm_half import Opened, Scope, Stepper
from runtime.step.media import ReadFile, resolve_attachments
from runtime.step.tool_half import CallOutcome, ToolRunner
from runtime.store.events import telemetry
from runtime.store.protocol import LogQuery, LogRecord, ThreadRecord, ThreadUpdate
from runtime.store.recorder import Batch, Recorder
from runtime.tools.hooks import HookBlocked, HookRunner, hook_ids
from runtime.tools.parent_hooks import ParentHookMissing, RequiredHook, required_hooks
from runtime.tools.tool_env import missing_env_message, missing_required, needed_env
from runtime.tools.toolset import OfferedTool, init_paths, offered_tools

if TYPE_CHECKING:
    from runtime.delegation.delegate import ChildRunner

logger = logging.getLogger("runtime.loop.session")
# Spec 0.2.0: session endings that start the exchange count again (reference §4.3).
EXCHANGES_RESET = frozenset(
    {"session_stop", "session_fail", "state_stop_session", "max_session_turns"}
)


class Session:
    """Runs one session of ``agent`` on ``thread`` from ``progress``."""

    def __init__(
        self,
        deps: Deps,
        thread: ThreadRecord,
        agent: AgentDefinition,
        progress: SessionProgress,
        transcript: Transcript,
        children: ChildRunner,
    ) -> None:
        self.deps, self.thread, self.agent, self.progress = deps, thread, agent, progress
        self.transcript = transcript
        self.defs = DefinitionLoader(deps.store)
        self.recorder = Recorder(deps.store, deps.sink, deps.clock, thread.id, transcript)
        self.control = ExecutionControl(progress.session_id, progress.side, transcript)
        self.control.step_count, self.control.side_steps = progress.steps, progress.side_steps
        self.stepper = Stepper(deps, self.defs, self.recorder)
        self.tools = ToolRunner(deps, self.defs, self.recorder, self.control)
        self.delegate = Delegate(
            deps, self.defs, self.recorder, self.stepper, self.tools, self.control, self, children
        )
        self.tools.delegate = self.delegate
        self._hooks: dict[str, HookRunner] = {}
        self._required: dict[str, list[RequiredHook]] = {}
        self._tail = Batch()  # writes that go out with the session's end
        self._stop_pending = False
        self._offered: dict[tuple[str, str | None], dict[str, OfferedTool]] = {}
        self.subagents = children.subagents
        self._immediate_done: set[tuple[str, str]] = set()
        self._handed_off = False
        self._tool_rows: list[Message] = []  # drained ``state.queue_tool`` calls, to run
        self._converted = Converted()  # the history as the last request sent it
        self._selected = Selected()  # the rows the last request was built from
        self.state = ThreadState(
            deps,
            thread,
            defs=self.defs,
            recorder=self.recorder,
            host=self,
            execution=ExecutionState(self.control),
            relations=self.subagents,
        )

    # --- the loop -----------------------------------------------------------------------

    async def run(self, resumed: bool = False) -> SessionResult:
        """Resume the step in flight (if any), then step until a stop condition ends the session."""
        await self.recorder.ready()  # load the thread's secrets before anything is written
        with tracing.session_span(
            self.agent.name, self.thread.id, self.progress.session_id
        ) as span:
            result = await self._run(resumed)
            tracing.record_attribute(span, tracing.STOP_REASON, result.stop_reason)
            return result

    async def _run(self, resumed: bool) -> SessionResult:
        try:
            if resumed:
                outcome = await self._resume()
            elif self._stop_pending:
                outcome = Finished("aborted_by_user")
            else:
                outcome = await self._env_ready()
            while isinstance(outcome, Continue):
                try:
                    outcome = await self._step()
                except DefinitionNotFound as exc:  # a broken definition ends the session, visibly
                    outcome = Finished("step_error", str(exc))
            return await self._finish(outcome)
        finally:
            self.recorder.discard_staged()  # nothing may land after the session (or its crash)

    async def _env_ready(self) -> StepOutcome:
        """Fail before the first model request when a tool's required env value is missing."""
        human = self.agent.human_side()
        if human is not None and self._out_of_turns(other(human)):
            ai = other(human)
            limit = self._config(ai).max_turns
            text = f"This conversation reached its limit of {limit} turns (maxTurns)."
            self._tail.created.append(self._said(ai, text, "max_side_turns"))
            return Finished("max_side_turns", text)
        waiting = self._awaiting_human() or self._exchange_cap()
        if waiting is not None:
            return waiting
        needs = await needed_env(self.defs, self.deps.registry, self.agent)
        missing = await missing_required(self.deps.store, self.thread.id, needs)
        if not missing:
            return Continue()
        text = missing_env_message(missing)
        self._tail.created.append(self._said(self.progress.side, text, "step_error"))
        return Finished("step_error", text)

    async def _step(self) -> StepOutcome:
        if self._tool_rows:
            return await self._queued_tool(self._tool_rows.pop(0))
        waiting = self._awaiting_human() or self._exchange_cap()
        if waiting is not None:
            return waiting
        if self._config(self.progress.side).backing == "handler":
            return await self._handler_turn(self.progress.side)
        scope = await self._scope()
        if await self._immediate(scope):
            return Continue()  # a bootstrap pass: the step ends once children are started
        try:
            messages = await self._context(scope)
        except HookBlocked as blocked:
            return await self._blocked(scope, blocked)
        request = await self.stepper.request(scope, messages)
        self._count_step(scope.side)
        self.recorder.emit(telemetry("step_started", step=self.progress.steps, side=scope.side))
        with tracing.step_span(self.progress.steps, scope.side):
            opened = await self.stepper.open(scope, request, progress=self._opening(scope))
            return await self._respond(scope, request, opened)

    async def _respond(self, scope: Scope, request: Any, opened: Opened) -> StepOutcome:
        reply = await self.stepper.respond(scope, request, opened)
        if reply.stopped:
            self.progress.open_step = None
            return self._end(Finished("aborted_by_user"), reply.batch)
        if reply.error is not None:
            return await self._failed_step(reply.batch, reply.error)
        if not reply.message.tool_calls:
            return await self._close(scope, reply.message, [], reply.batch)
        if (await self.recorder.commit(reply.batch, scope.hooks, scope.state)).stopped:
            return Finished("aborted_by_user")
        return await self._run_tools(scope, reply.message)

    async def _run_tools(self, scope: Scope, message: Message) -> StepOutcome:
        stored = {
            c["id"]: r
            for c in message.tool_calls or []
            if (r := self.transcript.result_for(c["id"]))
        }
        run = await self.tools.run(scope, message, stored)
        if run.stopped:
            return Finished("aborted_by_user")
        if run.parked:
            return self._end(
                Finished("awaiting_tool", "A tool call waits for a decision"), run.deferred
            )
        return await self._close(scope, message, run.outcomes, run.deferred)

    async def _close(
        self, scope: Scope, reply: Message, outcomes: list[CallOutcome], batch: Batch
    ) -> StepOutcome:
        """Evaluate the stop conditions and commit the step's end with the session's progress.

        When the session ends here, the step's last writes go out with the
        session's end in one commit (``_finish``), so a resumed session never
        has to re-decide.
        """
        stop = evaluate(self._facts(scope, reply, outcomes))
        handoff = self.delegate.handoff_from(scope, outcomes)
        outcome = self._decide(scope, stop, handoff)
        self.progress.open_step = None
        self.recorder.emit(
            telemetry(
                "step_completed", step=self.progress.steps, stopped=isinstance(outcome, Finished)
            )
        )
        if isinstance(outcome, Finished):
            return self._end(outcome, batch)
        batch.progress, batch.drain = self.progress, True
        if handoff is not None:
            batch.thread = ThreadUpdate(agent_name=handoff.agent)
        result = await self.recorder.commit(batch, scope.hooks, scope.state)
        if result.stopped:
            return Finished("aborted_by_user")
        if handoff is not None:
            await self._hand_off(handoff)
        self._follow_drained(result.drained)
        return outcome

    def _end(self, outcome: Finished, batch: Batch | None = None) -> Finished:
        """Keep writes to be committed together with the session's end."""
        if batch is not None:
            self._tail = self._tail.merge(batch)
        return outcome

    def _decide(
        self, scope: Scope, stop: Stop | None, handoff: PendingHandoff | None
    ) -> StepOutcome:
        """What happens after a step: same side again, the other side, or the end."""
        if stop is not None and stop.scope == "session":
            self._record_turn(scope.side, stop.reason, stop.value)
            return Finished(stop.reason, stop.detail, stop.value)
        if handoff is not None:
            return Continue()
        dual = self.agent.human_side() is None
        forced, self.control.forced_side = self.control.forced_side, None
        if forced is not None and dual:  # spec: forceTurn has no effect with a person's side
            return self._forced(scope.side, forced)
        if stop is None and (has_turn_condition(self._config(scope.side)) or not dual):
            return Continue()
        self._record_turn(
            scope.side, stop.reason if stop else "every_step", stop.value if stop else None
        )
        if not dual:
            # The AI's turn is done: the session ends and waits for the person.
            assert stop is not None
            return Finished(stop.reason, stop.detail, stop.value)
        # 0.1.0 counts each side's turn; 0.2.0 counts exchanges (here, and as a step starts).
        if self.agent.spec == SPEC_0_1 and self.progress.turns >= session_turn_cap(
            self.agent.max_session_turns
        ):
            cap = session_turn_cap(self.agent.max_session_turns)
            return Finished("max_session_turns", f"Reached max session turns ({cap})")
        capped = self._exchange_cap()  # before "both sides stopped", as 0.1.0's cap
        if capped is not None:
            return capped
        spent: list[Side] = [s for s in ("a", "b") if self._out_of_turns(s)]
        if both_sides_stopped(self.progress.turn_outcomes, spent):
            return Finished("both_sides_stopped", "Both sides reached their max steps or turns")
        # A side that took its maxTurns takes no more: the other side goes on alone.
        nxt = other(scope.side)
        self._switch(scope.side if nxt in spent else nxt)
        return Continue()

    def _out_of_turns(self, side: Side) -> bool:
        return out_of_turns(self._config(side), self._turns_taken(side))

    def _turns_taken(self, side: Side) -> int:
        """The side's completed turns that ``maxTurns`` counts: in the session for dual_ai; for
        ai_human, whose session is one turn of side A, in the whole conversation."""
        taken = self.progress.side_turns.get(side, 0)
        if self.agent.human_side() is not None:
            taken += self.thread.execution_state.turns.get(side, 0)
        return taken

    # --- a person's side, and 0.2.0's exchange cap ---------------------------------------

    def _awaiting_human(self) -> Finished | None:
        """The side to act is a person (spec 0.2.0: the message came from the AI's side, or
        a person is on side A and the thread starts there): nothing runs until they write."""
        side = self.progress.side
        if self.agent.human_side() != side:
            return None
        return Finished("awaiting_human", f"Waiting for the person on side {side.upper()}")

    def _exchanges(self) -> int:
        """Spec 0.2.0: the exchanges completed since the count last started, the fewer turns
        of the two sides (a person's message is their side's turn)."""
        kept = self.thread.execution_state.exchanges
        return min(
            kept.get(side, 0)
            + self.progress.side_turns.get(side, 0)
            + self.progress.human_turns.get(side, 0)
            for side in ("a", "b")
        )

    def _exchange_cap(self) -> Finished | None:
        """Spec 0.2.0's ``maxSessionTurns``, on every kind of agent, checked as a step starts:
        reaching it ends the session (and starts the count again), never the thread."""
        if self.agent.spec != SPEC_0_2 or self.agent.max_session_turns is None:
            return None
        cap = session_turn_cap(self.agent.max_session_turns)
        if self._exchanges() < cap:
            return None
        human = self.agent.human_side()
        if human is not None:  # a person wrote and waits: say why no answer comes
            text = (
                f"This conversation reached its limit of {cap} exchanges (maxSessionTurns); "
                "send your message again to go on."
            )
            self._tail.created.append(self._said(other(human), text, "max_session_turns"))
        return Finished("max_session_turns", f"Reached max session turns ({cap} exchanges)")

    def _count_people(self, messages: list[Message]) -> None:
        """Spec 0.2.0: messages from a person count one turn of their side (once per side
        for each batch that arrives)."""
        human = self.agent.human_side()
        if self.agent.spec != SPEC_0_2 or human is None:
            return
        if any(side_of(m) == human and m.role in ("user", "assistant") for m in messages):
            self.progress.human_turns[human] = self.progress.human_turns.get(human, 0) + 1

    def _forced(self, side: Side, forced: Side) -> StepOutcome:
        if forced != side:
            self._switch(forced)
        return Continue()

    def _switch(self, side: Side) -> None:
        self.progress.side = side
        self.progress.turn_started_at = self.deps.clock.now()
        self.progress.turn_steps = 0
        self.control.side = side

    def _record_turn(self, side: Side, reason: TurnReason, value: Any) -> None:
        self.progress.turns += 1
        self.progress.turn_steps = 0  # the next turn (this side again, or the other) starts
        self.progress.side_turns[side] = self.progress.side_turns.get(side, 0) + 1
        outcome = TurnOutcome(side=side, reason=reason, step=self.progress.steps, value=value)
        self.progress.turn_outcomes.append(outcome)

    def _facts(self, scope: Scope, reply: Message, outcomes: list[CallOutcome]) -> StepFacts:
        results = [CallResult(o.call, o.ok, o.message.content or "") for o in outcomes]
        limits = self.deps.limits
        fresh = {o.message.id for o in outcomes}
        keep = limits.repeated_tool_errors
        if keep > 0:
            rows = self.transcript.recent_tool_rows(keep, fresh)
        else:  # rows[-0:] below keeps them all
            rows = [r for r in self.transcript.tool_rows() if r.id not in fresh]
        rows += [o.message for o in outcomes]
        return StepFacts(
            side=scope.side,
            config=self._config(scope.side),
            reply=reply,
            results=results,
            turn_steps=self.progress.turn_steps,
            side_steps=self.progress.side_steps.get(scope.side, 0),
            total_steps=self.progress.steps,
            max_total_steps=self._max_total_steps(),
            state_stop=self.control.stop_requested,
            recent_tool_rows=rows[-limits.repeated_tool_errors :],
            repeat_limit=limits.repeated_tool_errors,
        )

    def _max_total_steps(self) -> int:
        sides = [s.max_steps or 0 for s in (self.agent.side_a, self.agent.side_b) if s is not None]
        return max([self.deps.limits.max_total_steps, *sides])

    # --- scope, history, counters ----------------------------------------------------------

    def _config(self, side: Side) -> SideConfig:
        if side == "b" and self.agent.side_b is not None:
            return self.agent.side_b
        return self.agent.side_a

    async def _scope(self) -> Scope:
        side = self.progress.side
        config = self._config(side)
        prompt = await self.defs.prompt(config.prompt or "")
        await self._require_parent_hooks(prompt, config)
        hooks = self.hooks_for(prompt)
        self.control.side, self.control.prompt_name = side, prompt.name
        self.control.session_tools = {
            b.name: (kind, b) for kind, b in config.session_tools().items()
        }
        tools = await self.tools_for(prompt, config)
        # Subagent lifecycle tools depend on the registry, so they are resolved every step.
        lifecycle = await self.subagents.lifecycle_tools(
            self.defs, self.thread, prompt, self._env_lookup(prompt.name), config
        )
        return Scope(
            thread=self.thread,
            prompt=prompt,
            model=await self.defs.model(prompt.model),
            side=side,
            hooks=hooks,
            tools={**tools, **lifecycle} if lifecycle else tools,
            state=self.state.for_prompt(prompt.name, hooks),
            root_message_id=self.progress.root_message_id,
        )

    def hooks_for(self, prompt: PromptDefinition) -> HookRunner:
        """The hooks of ``prompt`` (the agent's when the prompt lists none), built once, with
        those its side's children require (``_require_parent_hooks``)."""
        if prompt.name not in self._hooks:
            ids = hook_ids(prompt.hooks, self.agent.hooks)
            required = self._required.get(prompt.name, ())
            self._hooks[prompt.name] = HookRunner(
                self.deps.registry, ids, self._hook_failed, required
            )
        return self._hooks[prompt.name]

    async def _require_parent_hooks(self, prompt: PromptDefinition, config: SideConfig) -> None:
        """Resolve once what the children of ``config``'s side require (spec 0.2.0
        ``parentHooks``); a required hook gone from code fails the step (fails closed)."""
        if prompt.name not in self._required:
            self._required[prompt.name] = await required_hooks(
                self.defs, self.deps.registry, prompt, config, self._env_lookup(prompt.name)
            )

    async def tools_for(
        self, prompt: PromptDefinition, config: SideConfig | None
    ) -> dict[str, OfferedTool]:
        """The tools ``prompt`` offers (with the side's stop tools), resolved once per session."""
        key = (prompt.name, config.prompt if config else None)
        if key not in self._offered:
            self._offered[key] = await offered_tools(
                self.defs,
                self.deps.registry,
                prompt,
                config,
                self._env_lookup(prompt.name),
                self.deps.mcp,
                self.deps.a2a,
                self.deps.knowledge,
                self.deps.memory,
            )
        return self._offered[key]

    def _env_lookup(self, prompt_name: str) -> Any:
        async def lookup(name: str) -> str | None:
            entry = await self.deps.store.resolve_env(self.thread.id, name, prompt_name)
            return entry.value if entry else None

        return lookup

    def window(self, scope: Scope, include_past_tools: bool | None = None) -> Window:
        """How ``scope`` sees the top-level history (session/turn boundaries, perspective)."""
        past = scope.prompt.include_past_tools if include_past_tools is None else include_past_tools
        return Window(
            include_chat=scope.prompt.include_chat,
            include_past_tools=past,
            session_start=self.progress.started_at,
            turn_start=self.progress.turn_started_at,
            side=scope.side,
            # Each side sees itself as the assistant, except an AI side A with a person on
            # side B, whose stored roles already say so.
            perspective=self.agent.human_side() != "b",
        )

    def file_reader(self) -> ReadFile:
        """Reads files of this thread (attachments sent to the model)."""
        store, thread_id = self.deps.store, self.thread.id

        async def read(path: str) -> bytes | None:
            return await store.read_file(thread_id, path) if path else None

        return read

    def top_level(self) -> list[Message]:
        """The top-level messages of the thread."""
        return self.transcript.messages

    async def _context(self, scope: Scope) -> list[dict[str, Any]]:
        window = self.window(scope)
        rows = await scope.hooks.filter_messages(
            scope.state, select_from(self.transcript, window, self._selected)
        )
        messages = to_llm_messages(rows, window, self._converted)
        if self._converted.has_parts:
            messages = await resolve_attachments(
                messages, self.file_reader(), scope.prompt.recent_image_threshold
            )
        warning = self._budget_warning(scope)
        if warning:
            messages.append({"role": "system", "content": warning})
        if not scope.hooks.active("prefilter_llm_history"):
            return messages
        # The message dicts are kept for the next step's request: a hook gets its own.
        return await scope.hooks.prefilter_llm_history(scope.state, copy.deepcopy(messages))

    def _budget_warning(self, scope: Scope) -> str | None:
        return self._step_budget_warning(scope) or self._turn_budget_warning(scope)

    def _turn_budget_warning(self, scope: Scope) -> str | None:
        """The first step of the side's last turn (``maxTurns``)."""
        limit = self._config(scope.side).max_turns
        if limit is None or not scope.prompt.step_budget_warning:
            return None
        # Counted before this step's ``_count_step``; turns are counted when they end.
        if self.progress.turn_steps != 0 or self._turns_taken(scope.side) != limit - 1:
            return None
        where = "session" if self.agent.human_side() is None else "conversation"
        return (
            f"Turn budget: this is your last turn ({limit} of {limit}) in this {where}. "
            "Make it count; you will not be called again after this turn."
        )

    def _step_budget_warning(self, scope: Scope) -> str | None:
        limit = self._config(scope.side).max_steps
        if limit is None or not scope.prompt.step_budget_warning:
            return None
        # Counted before this step's ``_count_step``; maxSteps counts the side's session steps.
        if self.progress.side_steps.get(scope.side, 0) != limit - 1:
            return None
        return (
            f"Step budget: this is your last step ({limit} of {limit}) in this session. "
            "Give your final answer now; you will not be called again after this response."
        )

    def _count_step(self, side: Side) -> None:
        self.progress.steps += 1
        self.progress.side_steps[side] = self.progress.side_steps.get(side, 0) + 1
        self.progress.turn_steps += 1
        self.control.step_count = self.progress.steps

    def _opening(self, scope: Scope) -> Any:
        def progress(message_id: str, log_id: str) -> SessionProgress:
            self.progress.open_step = OpenStep(
                message_id=message_id, log_id=log_id, side=scope.side, prompt=scope.prompt.name
            )
            return self.progress

        return progress

    # --- a handler's side (spec 0.2.0) ------------------------------------------------------

    def _handler_hooks(self) -> HookRunner:
        """A side without a prompt runs the agent's hooks."""
        if "" not in self._hooks:
            ids = hook_ids(None, self.agent.hooks)
            self._hooks[""] = HookRunner(self.deps.registry, ids, self._hook_failed)
        return self._hooks[""]

    async def _handler_turn(self, side: Side) -> StepOutcome:
        """The side's handler answers what it received (``runtime.loop.handler_turn``); a
        turn is counted when it received something, then the other side acts."""
        name = self._config(side).handler or ""
        handler = self.deps.registry.handlers.get(name)
        if handler is None:
            return Finished(
                "step_error", f"Side {side.upper()}'s handler {name!r} is not registered"
            )
        self.control.side, self.control.prompt_name = side, ""
        # Not a model step of the side (no maxSteps, no step frames), but a pass of the loop:
        # the session's step ceiling counts it, as the reference's loop does.
        self.progress.steps += 1
        self.control.step_count = self.progress.steps
        hooks = self._handler_hooks()
        turn = HandlerTurn(
            self.deps,
            self.thread,
            self.transcript,
            self.recorder,
            self.control,
            self.state.with_hooks(hooks),
            hooks,
        )
        delivered = await turn.run(side, handler)
        if delivered.aborted:
            return Finished("aborted_by_user")
        if self.control.stop_requested is not None:
            value = self.control.stop_requested or None
            self._record_turn(side, "state_stop_session", value)
            return Finished("state_stop_session", None, value)
        if delivered.count:
            self._record_turn(side, "handler_turn", None)
        sibling = other(side)
        if not delivered.count and self._config(sibling).backing == "handler":
            return Finished("handler_idle", "No inbound messages for handler-backed sides")
        if self.progress.steps >= self._max_total_steps():
            return Finished("max_total_steps", f"Maximum steps reached ({self._max_total_steps()})")
        # A person's side next: the next step parks the session as ``awaiting_human``.
        self._switch(sibling)
        batch = Batch(progress=self.progress, drain=True)
        result = await self.recorder.commit(batch, hooks, self.state)
        if result.stopped:
            return Finished("aborted_by_user")
        self._follow_drained(result.drained)
        return Continue()

    # --- special endings ---------------------------------------------------------------------

    async def _blocked(self, scope: Scope, blocked: HookBlocked) -> StepOutcome:
        text = str(blocked) or "Blocked by a hook."
        said = self._said(scope.side, text, "hook_blocked")
        said = await scope.hooks.before_create_message(scope.state, said)
        return self._end(Finished("hook_blocked", text), Batch(created=[said]))

    async def _failed_step(self, batch: Batch, error: ProviderError) -> StepOutcome:
        self.progress.open_step = None
        return self._end(Finished("step_error", f"{error.code}: {error.message}"), batch)

    def _said(self, side: Side, text: str, reason: str) -> Message:
        """A message from the acting side explaining why the session stopped (not yet stored)."""
        return Message(
            id=new_id(),
            role=role_for_side(side),
            content=text,
            created_at=self.deps.clock.now(),
            side=side,
            metadata={"stop_reason": reason},
            prompt_name=self.control.prompt_name or None,
        )

    async def _immediate(self, scope: Scope) -> bool:
        """Start the side's ``immediate`` subagents, once per agent and side in this flow, while
        the conversation has no visible non-system message yet or right after a handoff."""
        key = (self.agent.name, scope.side)
        if key in self._immediate_done:
            return False
        self._immediate_done.add(key)
        handed_off, self._handed_off = self._handed_off, False
        if not handed_off and any(
            m.role != "system" and not m.silent for m in self.transcript.messages
        ):
            return False
        env = self._env_lookup(scope.prompt.name)
        return await self.subagents.spawn_immediate(
            scope, env, self.progress.session_id, self._config(scope.side)
        )

    async def _hand_off(self, handoff: PendingHandoff) -> None:
        """Switch the thread to another agent; its side A acts next (no turn is counted)."""
        self.agent = await self.defs.agent(handoff.agent)
        self._handed_off = True  # the new agent's immediate subagents start (reference §4.11)
        self.thread.agent_name = handoff.agent
        self.progress.agent = handoff.agent
        self._switch("a")
        prop = handoff.entry.init_user_message_property
        text = handoff.args.get(prop) if prop else None
        files = await attachment_refs(self.state, init_paths(handoff.entry, handoff.args))
        # The arguments not delivered as the text or files reach the new agent as the
        # reference gives a child its initial arguments: a silent system message.
        arguments = initial_arguments(handoff.entry, handoff.args)
        if arguments:
            await self.state.inject_message(
                "system",
                arguments_text(arguments),
                silent=True,
                metadata={"subagent_arguments": arguments},
            )
        if isinstance(text, str) or files:
            await self.state.inject_message(
                "user", text if isinstance(text, str) else "", attachments=files or None
            )
        title = self.agent.title or self.agent.name
        self.recorder.emit(
            telemetry("agent_handoff", new_agent_id=self.agent.name, new_agent_title=title)
        )

    async def _queued_tool(self, row: Message) -> StepOutcome:
        """A tool call queued on an idle thread (``state.queue_tool``): its drained row gets the
        call (committed with the open step, so a resumed session runs it), the call runs as
        this step's, and the next step's model answers its result. No model step is counted."""
        scope = await self._scope()
        call = row.metadata[QUEUED_TOOL_CALL]
        metadata = {k: v for k, v in row.metadata.items() if k != QUEUED_TOOL_CALL}
        message = row.copy(
            content=None,
            tool_calls=[call],
            side=scope.side,
            prompt_name=scope.prompt.name,
            metadata={**metadata, "queued_tools": True},
        )
        self.progress.open_step = OpenStep(
            message_id=message.id, log_id="", side=scope.side, prompt=scope.prompt.name
        )
        batch = Batch(updated=[message], progress=self.progress)
        if (await self.recorder.commit(batch, scope.hooks, scope.state)).stopped:
            return Finished("aborted_by_user")
        return await self._run_tools(scope, message)

    def _follow_drained(self, drained: list[Message]) -> None:
        """Queued messages drained into the thread decide who acts next (user → A, assistant → B)."""
        self._tool_rows += [m for m in drained if QUEUED_TOOL_CALL in m.metadata]
        self._count_people(drained)
        if not drained or (self.agent.spec == SPEC_0_1 and self.agent.type != "dual_ai"):
            return
        side: Side = "b" if drained[0].role == "assistant" else "a"
        if side != self.progress.side:
            self._switch(side)

    async def _hook_failed(self, hook_id: str, exc: BaseException) -> None:
        log = LogRecord(
            id=new_id(),
            thread_id=self.thread.id,
            kind="system",
            message_id=self.progress.root_message_id,
            error=f"Hook {hook_id} failed: {exc}",
            error_type="hook_error",
            tool_name=hook_id,
            is_complete=True,
            created_at=self.deps.clock.now(),
        )
        await self.recorder.commit(Batch(logs=[log]))

    # --- start, resume, finish -----------------------------------------------------------------

    async def start(self, inbound: Message | None) -> None:
        """Commit the session's start: the inbound message (if any), the progress, and the
        clearing of a stop this session resumes from."""
        hooks = await self._start_hooks()
        if inbound is not None:
            inbound = await hooks.before_create_message(self.state, inbound)
        newest = self.transcript.messages[-1] if self.transcript.messages else None
        root = inbound or newest
        self.progress.root_message_id = root.id if root else None
        self.progress.started_at = root.created_at if root else self.deps.clock.now()
        self.progress.turn_started_at = self.progress.started_at
        batch = Batch(created=[inbound] if inbound else [], progress=self.progress)
        if self.thread.stopped:
            # A message that resumes a stopped thread clears its stop. A thread that was not
            # stopped when the session loaded keeps whatever a stop written since says: a
            # user who pressed stop while the session was starting must not be overruled.
            batch.thread = ThreadUpdate(stopped=False)
            self.thread.stopped = False
        # Without an inbound message the session starts from the queue (a woken thread).
        batch.drain = inbound is None
        result = await self.recorder.commit(batch, hooks, self.state)
        self._stop_pending = result.stopped  # pressed while the session was starting
        if inbound is not None:
            self._count_people([inbound])
        if inbound is not None and QUEUED_TOOL_CALL in inbound.metadata:
            self._tool_rows.append(inbound)  # a host that starts sessions from the queue's head
        if inbound is None and result.drained:
            first = result.drained[0]
            self.progress.root_message_id = first.id
            self.progress.started_at = self.progress.turn_started_at = first.created_at
            self._follow_drained(result.drained)

    async def _start_hooks(self) -> HookRunner:
        """The hooks the inbound message goes through: the acting side's prompt's, else the
        other side's (the acting side is a person or a handler), else the agent's."""
        for side in (self.progress.side, other(self.progress.side)):
            name = self._config(side).prompt
            if name:
                prompt = await self.defs.prompt(name)
                try:
                    await self._require_parent_hooks(prompt, self._config(side))
                except ParentHookMissing:
                    # The person's message is still stored; the step after it fails with
                    # the sentence (``_scope``), so nothing runs without the required hook.
                    ids = hook_ids(prompt.hooks, self.agent.hooks)
                    return HookRunner(self.deps.registry, ids, self._hook_failed)
                return self.hooks_for(prompt)
        return self._handler_hooks()

    async def _resume(self) -> StepOutcome:
        """Finish whatever the last run left open; ``Continue`` when the loop can go on."""
        await self._close_orphans(keep_open_step=not self.thread.stopped)
        if self.progress.stop_reason == "awaiting_tool":  # a parked session picks up again
            self.progress.stop_reason = self.progress.stop_detail = None
        if self.thread.stopped:
            self.progress.open_step = None
            self._answer_waiting_on_stop()
            return Finished("aborted_by_user")
        open_step = self.progress.open_step
        if open_step is None:
            return Continue()
        self.progress.side = open_step.side
        scope = await self._scope()
        message = self.transcript.get(open_step.message_id)
        if message is not None and message.status == "completed":
            scope.log_id = message.log_id
            if message.tool_calls:
                return await self._run_tools(scope, message)
            return await self._close(scope, message, [], Batch())
        if message is not None and message.status == "failed":
            return Finished("step_error", "The step's model request failed")
        return await self._redo(scope, message)

    def _answer_waiting_on_stop(self) -> None:
        """Calls still waiting for a decision are answered "Execution stopped by user"."""
        rows = [m for m in self.transcript.messages if waits.waiting(m)]
        for row in rows:
            decided = waits.decide(row, waits.stopped())
            assert decided is not None
            self._tail.updated.append(
                decided.copy(
                    content=waits.STOPPED_TEXT,
                    tool_status="error",
                    status="completed",
                    response_completed_at=self.deps.clock.now(),
                )
            )

    async def _redo(self, scope: Scope, pending: Message | None) -> StepOutcome:
        """The step's request never got a stored response: send it again (same message row)."""
        try:
            messages = await self._context(scope)
        except HookBlocked as blocked:
            return await self._blocked(scope, blocked)
        request = await self.stepper.request(scope, messages)
        opened = await self.stepper.open(
            scope, request, progress=self._opening(scope), reuse=pending
        )
        return await self._respond(scope, request, opened)

    async def _close_orphans(self, keep_open_step: bool = True) -> None:
        """Mark requests that never completed as interrupted, and stray pending rows as failed.

        The open step's pending message is kept (the step is redone on it) unless
        the session will not go on.
        """
        open_step = self.progress.open_step if keep_open_step else None
        open_id = open_step.message_id if open_step else None
        logs = await self.deps.store.list_logs(
            self.thread.id, LogQuery(limit=50, order="desc", kind="llm")
        )
        if self.agent.backing("a") == "handler" or self.agent.backing("b") == "handler":
            # A handler call the session died in: its message is never handed over again.
            logs += await self.deps.store.list_logs(
                self.thread.id, LogQuery(limit=10, order="desc", kind="handler_execution")
            )
        stale_logs = [interrupted_log(log) for log in logs if not log.is_complete]
        stale_rows = [
            m.copy(status="failed")
            for m in self.transcript.messages
            if m.status == "pending" and m.id != open_id and m.role != "tool"
        ]
        if stale_logs or stale_rows:
            await self.recorder.commit(Batch(updated=stale_rows, logs=stale_logs))

    async def _park(self) -> SessionResult:
        """A call waits for a decision: store it with the progress, open step kept, session
        unfinished (whoever decides resumes it; nothing runs meanwhile)."""
        p = self.progress
        p.stop_reason, p.stop_detail = "awaiting_tool", "A tool call waits for a decision"
        await self.recorder.commit(
            self._tail.merge(Batch(progress=p)), self._hooks_now(), self.state
        )
        self.recorder.emit(telemetry("parked", side=p.side))
        return result_of(self.thread.id, p, None)

    async def _finish(self, outcome: Finished) -> SessionResult:
        """Record why the session ended, with the writes that led there, in one commit."""
        if outcome.reason == "awaiting_tool":
            return await self._park()
        p = self.progress
        p.finished, p.stop_reason, p.stop_detail = True, outcome.reason, outcome.detail
        p.outcome, p.open_step = outcome.value, None
        p.stopped_by = self.control.stopped_by or p.side
        if outcome.reason == "state_stop_session":
            p.notify_parent, p.final_status = self.control.stop_notify, self.control.stop_status
        if outcome.reason == "repeated_tool_error":
            self._tail.created.append(
                self._said(p.side, repeated_error_text(outcome.detail), outcome.reason)
            )
        state = self.thread.execution_state.model_copy(deep=True)
        for side, count in p.side_turns.items():
            state.turns[side] = state.turns.get(side, 0) + count
        if self.agent.spec == SPEC_0_2:
            state.exchanges = (
                {}
                if p.stop_reason in EXCHANGES_RESET
                else {s: state.exchanges.get(s, 0) + self._session_turns(s) for s in ("a", "b")}
            )
        state.last_session_id, state.last_stop_reason = p.session_id, p.stop_reason
        state.last_stopped_by = p.stopped_by
        ending = Batch(progress=p, thread=ThreadUpdate(execution_state=state))
        await self.recorder.commit(self._tail.merge(ending), self._hooks_now(), self.state)
        self.control.stopped = True
        self.control.abort_signal.set()
        self.recorder.emit(telemetry("stopped", reason=outcome.reason, side=p.side))
        return result_of(self.thread.id, p, final_text(self.transcript, p.side))

    def _session_turns(self, side: Side) -> int:
        return self.progress.side_turns.get(side, 0) + self.progress.human_turns.get(side, 0)

    def _hooks_now(self) -> HookRunner | None:
        prompt = self.control.prompt_name
        return self._hooks.get(prompt) if prompt else None

    # --- ToolHost --------------------------------------------------------------------------

    async def invoke_tool(self, state: ThreadState, name: str, args: dict[str, Any]) -> Any:
        """``state.invoke_tool`` inside a session: run under the current step's scope."""
        scope = await self._scope()
        return await self.tools.invoke(scope, name, args)


__all__ = ["Session", "SessionResult", "DefinitionNotFound"]
