"""Tools that are prompts or agents: sub-prompts, agents in child threads, and handoffs.

- **Prompt as tool (sub-prompt)**: a one-step run of that prompt on the same
  thread, one level deeper (``depth + 1``, ``parent_id`` = the calling tool's
  result row). Arguments are checked against the prompt's ``requiredSchema``;
  the first message is ``initUserMessageProperty`` of the arguments (else the
  arguments as JSON). The result follows the entry's ``includeTextResponse``,
  ``includeToolCalls`` and ``includeErrors`` flags.
- **Agent with ``exposeAsTool``**: a new child thread (``parent_id`` = this
  thread, same owner) runs a session of that agent on the input; its answer
  (the stop tool's value, else its last reply) is the tool result (spec §7.2).
- **Other ``ai_human`` agent**: a handoff; the call returns "Handoff complete"
  and after the step the thread continues with that agent (reference §4.11).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from runtime.core.messages import Message, ToolCall, new_id, parse_arguments
from runtime.core.outcomes import SessionResult
from runtime.core.results import ERROR_PREFIX, ToolResult, failure, success
from runtime.core.spec import PromptDefinition, ToolConfig
from runtime.definitions.loader import DefinitionLoader
from runtime.delegation.link import SubagentLink
from runtime.delegation.subagents import initial_arguments, missing_env_text, outcome_of
from runtime.deps import Deps
from runtime.state import ExecutionControl, ThreadState
from runtime.step.history import Window, select_rows, to_llm_messages
from runtime.step.llm_half import Scope, Stepper
from runtime.step.media import ReadFile, resolve_attachments
from runtime.step.tool_half import CallOutcome, Slot, ToolRunner
from runtime.store.protocol import MessageQuery, ThreadRecord
from runtime.store.recorder import Batch, Recorder
from runtime.tools.hooks import HookRunner
from runtime.tools.toolset import OfferedTool, init_name, init_paths, schema_problem

if TYPE_CHECKING:
    from runtime.delegation.subagents import Subagents

FAILED_REASONS = frozenset(
    {"step_error", "hook_blocked", "repeated_tool_error", "aborted_by_user", "session_fail"}
)


class ChildRunner(Protocol):
    """Runs (or resumes) the child-thread session of an agent called as a tool."""

    subagents: Subagents

    async def run_child(
        self,
        parent: ThreadRecord,
        agent: str,
        call_id: str,
        text: str,
        hooks: HookRunner,
        state: ThreadState,
        *,
        link: SubagentLink,
        env: dict[str, str] | None = None,
        attachments: list[str] | None = None,
        display_name: str = "",
    ) -> SessionResult:
        """Create the child thread once per call id, run its session, return its result."""
        ...


class ScopeSource(Protocol):
    """What the session lends sub-prompts: hooks, tools and the parent's history window."""

    def hooks_for(self, prompt: PromptDefinition) -> HookRunner:
        """The hooks of a prompt (agent hooks as fallback)."""
        ...

    async def tools_for(self, prompt: PromptDefinition, side: Any) -> dict[str, OfferedTool]:
        """The tools a prompt offers."""
        ...

    def window(self, scope: Scope, include_past_tools: bool) -> Window:
        """The history window of the top-level conversation for ``scope``'s side."""
        ...

    def top_level(self) -> list[Message]:
        """The top-level messages of the thread."""
        ...

    def file_reader(self) -> ReadFile:
        """Reads the thread's files (attachments sent to the model)."""
        ...


@dataclass(slots=True)
class PendingHandoff:
    """A handoff requested during a step, performed when the step closes."""

    agent: str
    args: dict[str, Any]
    entry: ToolConfig


class Delegate:
    """Runs prompt, agent and handoff tools for one session."""

    def __init__(
        self,
        deps: Deps,
        defs: DefinitionLoader,
        recorder: Recorder,
        stepper: Stepper,
        tools: ToolRunner,
        control: ExecutionControl,
        source: ScopeSource,
        children: ChildRunner,
    ) -> None:
        self.deps, self.defs, self.recorder, self.stepper = deps, defs, recorder, stepper
        self.tools, self.control, self.source, self.children = tools, control, source, children
        self.pending_handoff: PendingHandoff | None = None

    # --- sub-prompts --------------------------------------------------------------------

    async def subprompt(
        self, scope: Scope, offered: OfferedTool, call: ToolCall, args: dict[str, Any], slot: Slot
    ) -> ToolResult:
        """Run a prompt as a tool and summarize what it did."""
        prompt = offered.prompt
        assert prompt is not None
        problem = schema_problem(prompt.required_schema, args)
        if problem:
            return failure(f"Prompt tool argument validation failed: {problem}")
        existing = await self._children_of(scope, slot)
        if not slot.exists and not slot.detached:
            await self._placeholder(scope, call, slot)
        child = await self._child_scope(scope, prompt, None if slot.detached else slot.id)
        child.state = child.state.with_env(offered.entry.env)
        reply = _first(existing, "assistant", "completed")
        if reply is None:
            outcome = await self._one_call(scope, child, offered.entry, args, existing)
            if isinstance(outcome, ToolResult):
                return outcome
            reply = outcome
        stored = {m.tool_call_id: m for m in existing if m.role == "tool" and m.tool_call_id}
        run = await self.tools.run(child, reply, stored)
        if run.deferred.created or run.deferred.updated:
            await self.recorder.commit(run.deferred, child.hooks, child.state)
        return compose(offered.entry, reply, run.outcomes)

    async def _one_call(
        self,
        scope: Scope,
        child: Scope,
        entry: ToolConfig,
        args: dict[str, Any],
        existing: list[Message],
    ) -> Message | ToolResult:
        init = next((m for m in existing if m.role == "user"), None)
        if init is None:
            files = await attachment_refs(child.state, init_paths(entry, args))
            init = await self._init_message(child, init_text(entry, args), files)
        messages = await self._messages(scope, child, init)
        request = await self.stepper.request(child, messages)
        opened = await self.stepper.open(
            child, request, reuse=_first(existing, "assistant", "pending")
        )
        reply = await self.stepper.respond(child, request, opened)
        await self.recorder.commit(reply.batch, child.hooks, child.state)
        if reply.error is not None:
            return failure(f"Sub-prompt {child.prompt.name} failed: {reply.error.message}")
        return reply.message

    async def _children_of(self, scope: Scope, slot: Slot) -> list[Message]:
        if not slot.exists:
            return []
        query = MessageQuery(limit=None, include_silent=True, max_depth=None, parent_id=slot.id)
        return (await self.deps.store.list_messages(scope.thread.id, query)).messages

    async def _placeholder(self, scope: Scope, call: ToolCall, slot: Slot) -> None:
        """The calling tool's result row, pending, so the sub-prompt's rows can point at it."""
        row = Message(
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
        )
        await self.recorder.commit(Batch(created=[row]), scope.hooks, scope.state)
        slot.exists = True

    async def _child_scope(
        self, scope: Scope, prompt: PromptDefinition, parent_id: str | None
    ) -> Scope:
        hooks = self.source.hooks_for(prompt)
        return Scope(
            thread=scope.thread,
            prompt=prompt,
            model=await self.defs.model(prompt.model),
            side=scope.side,
            hooks=hooks,
            tools=await self.source.tools_for(prompt, None),
            state=scope.state.for_prompt(prompt.name, hooks),
            depth=scope.depth + 1,
            parent_id=parent_id,
            root_message_id=scope.root_message_id,
            parent_log_id=scope.log_id,
        )

    async def _init_message(
        self, child: Scope, text: str | None, files: list[dict[str, Any]] | None = None
    ) -> Message | None:
        if text is None and not files:
            return None
        message = Message(
            id=new_id(),
            role="user",
            content=text or "",
            attachments=files or None,
            created_at=self.deps.clock.now(),
            parent_id=child.parent_id,
            depth=child.depth,
            prompt_name=child.prompt.name,
        )
        if child.parent_id is None:  # invoke_tool: nothing is stored
            return message
        return await child.state.create_message(message)

    async def _messages(
        self, scope: Scope, child: Scope, init: Message | None
    ) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if child.prompt.include_chat and scope.depth == 0:
            window = self.source.window(scope, child.prompt.include_past_tools)
            rows = [_settled(m, scope.log_id) for m in select_rows(self.source.top_level(), window)]
            rows = await child.hooks.filter_messages(child.state, rows)
            messages = await resolve_attachments(
                to_llm_messages(rows, window),
                self.source.file_reader(),
                child.prompt.recent_image_threshold,
            )
        if init is not None:
            messages.append({"role": "user", "content": init.content or ""})
        if not messages:
            messages.append({"role": "user", "content": "{}"})
        return await child.hooks.prefilter_llm_history(child.state, messages)

    # --- agents ---------------------------------------------------------------------------

    async def agent(
        self, scope: Scope, offered: OfferedTool, call: ToolCall, args: dict[str, Any], slot: Slot
    ) -> ToolResult:
        """Run an agent in a child thread: to its end (its answer is the result), or in the
        background (``blocking: false``); engine-injected subagent tools run their handler."""
        if offered.handler is not None:
            return await offered.handler(scope, call, args, slot)  # type: ignore[no-any-return]
        agent = offered.agent
        assert agent is not None
        problem = schema_problem(offered.schema.parameters, args)
        if problem:
            return failure(f"Agent tool argument validation failed: {problem}")
        text = init_text(offered.entry, args, default_property="message") or "{}"
        subagents = self.children.subagents
        if offered.entry.blocking is False:
            return await subagents.spawn(scope, offered, call, text, slot, args)
        env, missing = await subagents.scoped_env(scope, offered.entry)
        if missing:
            return failure(missing_env_text(agent.name, missing))
        result = await self.children.run_child(
            scope.thread,
            agent.name,
            call["id"],
            text,
            scope.hooks,
            scope.state,
            link=SubagentLink(
                blocking=True,
                resumable=False,
                tool_call_id=call["id"],
                arguments=initial_arguments(offered.entry, args, "message"),
            ).with_options(offered.entry),
            env=env,
            attachments=init_paths(offered.entry, args),
            display_name=init_name(offered.entry, args),
        )
        slot.subagent_id = result.thread_id
        # Files its sessionStop/sessionFail call returned are copied here (new paths).
        returned = await subagents.returned_files(result.thread_id, result)
        refs, lines = await subagents.copy_back(result.thread_id, scope.thread.id, returned)
        # A declared subagent names its child, as the reference's blocking results do.
        reference = f"\n\nReference: {result.thread_id}" if offered.entry.blocking else ""
        reference += lines
        if result.stop_reason == "session_fail":
            return failure(outcome_of(result)[1] + reference)
        if result.stop_reason in FAILED_REASONS:
            return failure(
                f"Agent {agent.name} did not finish ({result.stop_reason}): {result.detail or ''}".strip()
                + reference
            )
        answer = (result.answer if result.answer is not None else "") + reference
        return ToolResult("success", result=answer, attachments=refs or [])

    def handoff(self, offered: OfferedTool, args: dict[str, Any]) -> ToolResult:
        """Validate a handoff; the switch happens when the step closes."""
        assert offered.agent is not None
        problem = schema_problem(offered.schema.parameters, args)
        if problem:
            return failure(f"Handoff argument validation failed: {problem}")
        self.pending_handoff = PendingHandoff(offered.agent.name, args, offered.entry)
        return success("Handoff complete")

    def handoff_from(self, scope: Scope, outcomes: list[CallOutcome]) -> PendingHandoff | None:
        """The handoff of a step: requested now, or found in stored results (after a resume)."""
        if self.pending_handoff is not None:
            found, self.pending_handoff = self.pending_handoff, None
            return found
        for outcome in outcomes:
            offered = scope.tools.get(outcome.call["function"]["name"])
            if offered is not None and offered.kind == "handoff" and outcome.ok and offered.agent:
                return PendingHandoff(offered.agent.name, _arguments(outcome.call), offered.entry)
        return None


# --- helpers -------------------------------------------------------------------------------


async def attachment_refs(state: ThreadState, paths: list[str]) -> list[dict[str, Any]]:
    """``AttachmentRef``s of the thread's files among ``paths`` (``/attachments/…`` files that
    exist; the others are left out, as the reference does)."""
    refs: list[dict[str, Any]] = []
    for path in paths:
        if not path.startswith("/attachments/"):
            continue
        try:
            record = await state.stat_file(path)
        except ValueError:
            continue
        if record is None or record.is_directory:
            continue
        refs.append(
            {
                "id": new_id(),
                "type": "file",
                "path": record.path,
                "name": record.metadata.get("name") or record.name,
                "mimeType": record.mime_type,
                "size": record.size,
            }
        )
    return refs


def init_text(
    entry: ToolConfig, args: dict[str, Any], default_property: str | None = None
) -> str | None:
    """The first user message of a sub-run: ``initUserMessageProperty`` of the arguments, else JSON."""
    prop = entry.init_user_message_property or default_property
    if prop and isinstance(args.get(prop), str):
        return str(args[prop])
    return json.dumps(args) if args else None


def compose(entry: ToolConfig, reply: Message, outcomes: list[CallOutcome]) -> ToolResult:
    """A sub-prompt's tool result, shaped by the entry's include flags."""
    errors = [o for o in outcomes if not o.ok]
    if errors:
        lines = [f"Sub-prompt failed with {len(errors)} error(s):"]
        if entry.include_errors:
            lines += [f"{_name(o)}: {_error_text(o)}" for o in errors]
        others = [_name(o) for o in outcomes if o.ok]
        if entry.include_tool_calls and others:
            lines.append("Other tools run: " + ", ".join(others))
        return failure("\n".join(lines))
    parts = []
    if entry.include_text_response and reply.content:
        parts.append(reply.content)
    if entry.include_tool_calls and outcomes:
        executions = [
            f"Tool Call: {_name(o)}({o.call['function']['arguments']})\nTool Response: {o.message.content}"
            for o in outcomes
        ]
        parts.append("Tool Executions:\n" + "\n".join(executions))
    return success("\n\n".join(parts) or "Prompt executed successfully")


def _name(outcome: CallOutcome) -> str:
    return outcome.call["function"]["name"]


def _error_text(outcome: CallOutcome) -> str:
    return (outcome.message.content or "").removeprefix(ERROR_PREFIX)


def _settled(message: Message, step_log_id: str | None) -> Message:
    """The calling step's assistant message without its in-flight tool calls."""
    if message.log_id == step_log_id and message.tool_calls:
        return message.copy(tool_calls=None)
    return message


def _first(messages: list[Message], role: str, status: str) -> Message | None:
    return next((m for m in messages if m.role == role and m.status == status), None)


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        return parse_arguments(call)
    except ValueError:
        return {}
