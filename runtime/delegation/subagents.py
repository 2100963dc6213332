"""Subagents: agents declared in a prompt's ``tools`` that run in child threads.

A prompt tool entry naming an agent is a *subagent relationship* when it says
``blocking`` or ``resumable`` (spec ``SubagentToolConfig``):

- **non-resumable**: the agent is a tool of its own name. Blocking (the
  default) runs the child to its end and returns its result (as agents with
  ``exposeAsTool`` do, ``Delegate.agent``); ``blocking: false`` returns
  "The subagent was initiated successfully. Reference: <id>" at once, and the
  child's result comes back later as a silent queued message to the parent.
- **resumable**: the agent is not offered by name; the engine injects
  ``subagent_create`` (``agent``, a non-empty ``name`` kept as the child's
  display name, ``message``, ``arguments`` checked against the child's
  ``requiredSchema``), ``subagent_message`` (offered while a child is not
  terminated) and ``subagents`` (the registry as text). ``maxInstances`` caps
  the children of a relationship that are not terminated.

The registry is the parent's child threads (``Store.list_children``): reference
(the child thread id), display name, relationship, status (``running``,
``idle``, ``failed``, ``terminated``) and creation time. A child's session
end (``settle``) sets its status and, unless the relationship is blocking,
queues "Subagent (reference: <id>) has returned the following result: …" (or
"… has reported a failure: …") to the parent, silent, with
``metadata.subagent_id``; queueing wakes an idle parent through the host.

What the engine needs from its host is one call, ``SubagentHost.wake``: "this
thread has queued messages; if no session runs on it, start one". The Django
app implements it with a session row and the executor (children run as their
own sessions, in Celery); ``runtime.delegation.inline_host.InlineHost`` runs them as
asyncio tasks (tests, embedded use). Blocking calls run the child inline, in
the caller's session, so a worker never waits for a task that needs a worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import posixpath
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from runtime.core import env_refs, waits
from runtime.core.messages import Message, NewMessage, Role, Side, new_id, now_ms
from runtime.core.results import ToolResult, failure, success
from runtime.core.spec import (
    AgentDefinition,
    PromptDefinition,
    ResumableConfig,
    SideConfig,
    SubagentRelationship,
    ToolConfig,
)
from runtime.definitions.loader import DefinitionLoader
from runtime.delegation.link import SubagentLink
from runtime.providers.base import ToolSchema
from runtime.step.tool_half import RETURNED_FILES_KEY
from runtime.store.events import EventSink, event, queued_data
from runtime.store.protocol import Commit, MessageQuery, QueuedMessage, ThreadRecord
from runtime.store.recorder import Recorder
from runtime.tools.toolset import (
    TRUTHY,
    EnvLookup,
    OfferedTool,
    init_name,
    init_paths,
    schema_problem,
)

if TYPE_CHECKING:
    from runtime.core.messages import ToolCall
    from runtime.core.outcomes import SessionResult
    from runtime.deps import Deps
    from runtime.state import ThreadState
    from runtime.step.llm_half import Scope
    from runtime.step.tool_half import Slot

logger = logging.getLogger(__name__)
SUBAGENT_CREATE = "subagent_create"
SUBAGENT_MESSAGE = "subagent_message"
SUBAGENTS = "subagents"
LIFECYCLE_TOOLS = (SUBAGENT_CREATE, SUBAGENT_MESSAGE, SUBAGENTS)
KEY = "_runtime.subagent."
FAILED_REASONS = frozenset(
    {"step_error", "hook_blocked", "repeated_tool_error", "aborted_by_user", "session_fail"}
)
# The silent first message of a child started by an ``immediate`` relationship (ours).
BOOT_TEXT = "You were started by your parent agent."
# The reference's text for a run that died outside the engine (a worker crash).
CRASHED_TEXT = "The agent run failed unexpectedly: {detail}"
Status = Literal["running", "idle", "failed", "terminated"]
# A registry status is display text of one line (the registry column holds 64 characters).
STATUS_MAX = 64
_NAMESPACE = uuid.UUID("0d6a3f0e-4c1b-4b7e-9d8e-5a2f7c9b1e44")


class SubagentHost(Protocol):
    """What the engine needs from its host to run threads it does not run itself."""

    async def wake(self, thread_id: str) -> None:
        """The thread has queued messages: unless a session runs on it, start one soon.

        Must return quickly (the session runs elsewhere) and be harmless when
        repeated or when nothing is queued any more.
        """
        ...


class EngineHandle(Protocol):
    """What the subagent half needs of its engine (``runtime.engine.Engine``, which builds on
    this module): its deps, threads to create and see at rest, sessions to run, frames to send."""

    deps: Deps

    async def create_thread(
        self,
        agent: str,
        *,
        user_id: str | None = None,
        parent_id: str | None = None,
        tags: list[str] | None = None,
        env: dict[str, str] | None = None,
        thread_id: str | None = None,
        display_name: str = "",
        relationship: str = "",
        child_status: str = "",
        subagent: SubagentLink | None = None,
    ) -> ThreadRecord: ...

    async def thread_state(self, thread_id: str) -> ThreadState: ...

    async def run_session(
        self, thread_id: str, *, message: NewMessage | None = None, side: Side | None = None
    ) -> SessionResult: ...

    async def last_result(self, thread_id: str) -> SessionResult | None: ...

    async def emit_to(self, thread_id: str, frame: dict[str, Any]) -> None: ...


class NullHost:
    """No host: queued messages wait for the thread's next session."""

    async def wake(self, thread_id: str) -> None:
        return None


def is_subagent_entry(entry: ToolConfig) -> bool:
    """A tool entry that declares a subagent relationship (``blocking`` or ``resumable`` set)."""
    return entry.blocking is not None or isinstance(entry.resumable, ResumableConfig)


def is_resumable(entry: ToolConfig) -> bool:
    return isinstance(entry.resumable, ResumableConfig)


@dataclass(slots=True)
class Relationship:
    """A resumable subagent relationship: of a prompt (0.1.0 tool entry) or of the acting
    side (0.2.0 ``sideX.subagents``, ``from_side``), under its name (``as``, else the agent's)."""

    agent: AgentDefinition
    entry: ToolConfig
    schema: dict[str, Any] | None  # the child's side-A requiredSchema
    name: str = ""
    description: str | None = None  # replaces the child's toolDescription (0.2.0 ``description``)
    from_side: bool = False

    def __post_init__(self) -> None:
        self.name = self.name or self.agent.name

    @property
    def resumable(self) -> ResumableConfig:
        assert isinstance(self.entry.resumable, ResumableConfig)
        return self.entry.resumable


def side_entry(relationship: SubagentRelationship) -> ToolConfig:
    """A 0.2.0 side relationship as the 0.1.0 tool entry the engine runs: resumable (every
    child is a persistent, addressable thread), ``blocking`` false unless it says true,
    ``maxInstances`` moved into ``resumable``; the child's side A receives its messages."""
    return ToolConfig(
        name=relationship.agent,
        blocking=relationship.blocking,
        resumable=ResumableConfig(
            receives_messages="side_a", max_instances=relationship.max_instances
        ),
        immediate=relationship.immediate is True or None,
        optional=relationship.optional,
        scoped_env=relationship.scoped_env,
        hidden=relationship.hidden,
        parent_communication=relationship.parent_communication,
    )


def message_id_for(call_id: str, purpose: str) -> str:
    """A stable message id per tool call, so a resumed call does not send twice."""
    return str(uuid.uuid5(_NAMESPACE, f"{purpose}:{call_id}"))


def result_text(reference: str, ok: bool, text: str) -> str:
    """The reference's envelope for a child's result delivered to the parent."""
    verb = "has returned the following result" if ok else "has reported a failure"
    return f"Subagent (reference: {reference}) {verb}:\n\n{text}"


def registry_line(child: ThreadRecord) -> str:
    status = child.child_status or "running"
    label = child.display_name or child.agent_name
    return f"- {child.id}: {child.relationship or child.agent_name} — {status} ({label})"


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """``subagent_create``'s arguments, checked."""

    name: str
    relation: Relationship
    message: str
    arguments: dict[str, Any]
    attachments: Any


def create_request(relations: dict[str, Relationship], args: dict[str, Any]) -> CreateRequest | str:
    """The checked arguments of a ``subagent_create`` call, or what is wrong with them in
    words the model can act on (the agent's name may be left out when there is one)."""
    name = args.get("name")
    if not isinstance(name, str) or not name.strip():
        return "subagent_create requires name."
    agent_name = args.get("agent")
    if len(relations) == 1 and agent_name is None:
        agent_name = next(iter(relations))
    relation = relations.get(agent_name) if isinstance(agent_name, str) else None
    if relation is None:
        known = ", ".join(sorted(relations))
        return f"subagent_create: unknown agent {agent_name!r}. Available: {known}."
    message = args.get("message")
    if not isinstance(message, str) or not message.strip():
        return "subagent_create requires message."
    arguments = args.get("arguments") or {}
    if not isinstance(arguments, dict):
        return "subagent_create: arguments must be an object."
    problem = schema_problem(relation.schema, arguments)
    if problem:
        return f"subagent_create arguments failed validation: {problem}"
    return CreateRequest(name.strip(), relation, message, arguments, args.get("attachments"))


class Subagents:
    """The subagent half of an engine: lifecycle tools, spawning, settling, queueing."""

    def __init__(self, engine: EngineHandle, host: SubagentHost) -> None:
        self.engine, self.host = engine, host
        self.deps = engine.deps
        # Threads with a session running in this engine, and those queued to meanwhile.
        self.running: set[str] = set()
        self.woken: set[str] = set()
        self._soon: set[asyncio.Task[None]] = set()  # ``queue_soon`` writes not yet done

    # --- queueing --------------------------------------------------------------------

    async def queue(self, thread_id: str, message: QueuedMessage) -> None:
        """Queue a message (durable, ordered), show it at once, and make sure a session will
        take it."""
        await self.deps.store.queue_message(thread_id, message)
        await self.engine.emit_to(thread_id, queued_data(message))
        if thread_id in self.running:
            self.woken.add(thread_id)  # drained by the running session, or woken at its end
        else:
            await self.host.wake(thread_id)

    def queue_soon(self, thread_id: str, message: QueuedMessage) -> None:
        """``queue`` for synchronous callers (``state.queue_tool`` at rest): a task of this
        loop, kept until done; ``flush_soon`` waits for it (and re-raises its failure)."""
        task = asyncio.get_running_loop().create_task(self.queue(thread_id, message))
        self._soon.add(task)

    async def flush_soon(self) -> None:
        """Wait for every ``queue_soon`` write started so far."""
        while self._soon:
            done, self._soon = set(self._soon), set()
            for task in done:
                await task

    async def session_ended(self, thread_id: str) -> None:
        """A session of this engine ended: wake the thread if something was queued for it."""
        self.running.discard(thread_id)
        if thread_id in self.woken:
            self.woken.discard(thread_id)
            await self.host.wake(thread_id)

    async def notify_parent(self, child: ThreadRecord, text: str) -> str:
        """``state.notify_parent``: a silent message to the parent, naming this child."""
        if child.parent_id is None:
            raise RuntimeError("notify_parent: this thread has no parent")
        queued = QueuedMessage(
            id=new_id(),
            role=SubagentLink.of(child).owner_role(),
            content=text,
            silent=True,
            metadata={"subagent_id": child.id, "parent_notification": True},
        )
        await self.queue(child.parent_id, queued)
        return queued.id

    # --- the hierarchy ------------------------------------------------------------------

    async def set_status(self, child: ThreadRecord, text: str) -> None:
        """``state.set_status`` / a ``sessionStatus`` tool: the child's status text in its
        parent's registry (the session goes on; its end settles the status again)."""
        if child.parent_id is None:
            raise RuntimeError("set_status: this thread has no parent")
        current = await self.deps.store.get_thread(child.id)
        if current is None or current.terminated or current.child_status == "terminated":
            return
        text = status_text(text)
        await self.deps.store.set_child_status(child.id, text)
        frame = {**_ids(current), "status": text, "timestamp": now_ms()}
        await self.engine.emit_to(child.parent_id, event("subagent_status", frame))

    async def parent_state(self, child: ThreadRecord) -> ThreadState | None:
        """``state.get_parent_thread``: the parent's state at rest (``None`` at the top)."""
        if child.parent_id is None:
            return None
        return await self.engine.thread_state(child.parent_id)

    async def child_state(self, parent_id: str, reference: str) -> ThreadState | None:
        """``state.get_child_thread``: a live child's state at rest."""
        children = await self.deps.store.list_children(parent_id)
        child = next((c for c in children if c.id == reference), None)
        if child is None or child.terminated:
            return None
        return await self.engine.thread_state(child.id)

    async def terminate(self, thread_id: str) -> None:
        """``state.terminate``: the thread stops for good (a running session ends at its next
        checkpoint, as after a stop); a child leaves the parent's live registry."""
        await self.deps.store.terminate_thread(thread_id)

    # --- the tools a prompt offers ---------------------------------------------------

    async def relationships(
        self,
        defs: DefinitionLoader,
        prompt: PromptDefinition,
        env: EnvLookup,
        side: SideConfig | None = None,
    ) -> dict[str, Relationship]:
        """The resumable relationships of the prompt's entries and of the acting side's
        ``subagents`` (0.2.0), by relationship name (``optional`` gates applied)."""
        out: dict[str, Relationship] = {}
        for name, entry, declared in relationship_entries(prompt, side):
            if not is_resumable(entry):
                continue
            if entry.optional and (await env(entry.optional) or "").strip().lower() not in TRUTHY:
                continue
            agent = await defs.find_agent(entry.name)
            if agent is None:
                continue
            first = await defs.find_prompt(agent.main_prompt())
            out[name] = Relationship(
                agent,
                entry,
                first.required_schema if first else None,
                name=name,
                description=declared.description if declared else None,
                from_side=declared is not None,
            )
        return out

    async def lifecycle_tools(
        self,
        defs: DefinitionLoader,
        thread: ThreadRecord,
        prompt: PromptDefinition,
        env: EnvLookup,
        side: SideConfig | None = None,
    ) -> dict[str, OfferedTool]:
        """``subagent_create``, ``subagents`` and (while a child lives) ``subagent_message``.

        ``side`` is the acting side of *this* agent: its relationships are built here, per
        run, so a prompt shared by several agents offers each one its own."""
        relations = await self.relationships(defs, prompt, env, side)
        if not relations:
            return {}
        # A hidden side relationship is not the model's to create (immediate or code only).
        creatable = {k: r for k, r in relations.items() if not (r.from_side and r.entry.hidden)}
        tools = {}
        if creatable:
            tools[SUBAGENT_CREATE] = self._offer(
                SUBAGENT_CREATE, _create_schema(creatable), creatable
            )
        tools[SUBAGENTS] = self._offer(SUBAGENTS, _LIST_SCHEMA, creatable)
        children = await self.deps.store.list_children(thread.id)
        if any(c.child_status != "terminated" for c in children):
            tools[SUBAGENT_MESSAGE] = self._offer(SUBAGENT_MESSAGE, _MESSAGE_SCHEMA, relations)
        return tools

    def _offer(
        self, name: str, schema: tuple[str, dict[str, Any]], relations: dict[str, Relationship]
    ) -> OfferedTool:
        description, parameters = schema

        async def handler(
            scope: Scope, call: ToolCall, args: dict[str, Any], slot: Slot
        ) -> ToolResult:
            if name == SUBAGENT_CREATE:
                return await self.create(scope, relations, call, args, slot)
            if name == SUBAGENT_MESSAGE:
                return await self.message(scope, call, args, slot)
            return await self.listing(scope)

        return OfferedTool(
            name,
            "agent",
            ToolSchema(name, description, parameters),
            ToolConfig(name=name),
            handler=handler,
        )

    # --- subagent_create / subagent_message / subagents ---------------------------------

    async def create(
        self,
        scope: Scope,
        relations: dict[str, Relationship],
        call: ToolCall,
        args: dict[str, Any],
        slot: Slot,
    ) -> ToolResult:
        """Create a resumable child, send it its first message, run or start it."""
        request = create_request(relations, args)
        if isinstance(request, str):
            return failure(request)
        relation, parent = request.relation, scope.thread
        key = KEY + call["id"]
        child_id = await self.deps.store.get_value(parent.id, key)
        if child_id is None:
            taken = await self._new_instance(scope, request, call, slot)
            if not isinstance(taken, str):
                return taken
            child_id = taken
            await self.deps.store.set_value(parent.id, key, child_id)
        link = SubagentLink(
            blocking=bool(relation.entry.blocking),
            resumable=True,
            receives_messages=relation.resumable.receives_messages,
            owner_side=scope.side,
            tool_call_id=call["id"],
            arguments=request.arguments,
        ).with_options(relation.entry, persistent=relation.from_side)
        env, missing = await self.scoped_env(scope, relation.entry, child_id)
        if missing and (scope.depth > 0 or slot.detached):
            # Nothing can park inside a sub-prompt or ``invoke_tool``: refuse, create nothing.
            return failure(missing_env_text(relation.agent.name, missing))
        slot.subagent_id = child_id
        child = await self._ensure_child(
            scope, relation.agent.name, child_id, request.name, link, env, relation.name
        )
        if missing:
            # A variables request: the call waits for a person to supply the values onto the
            # child's own env (``agents_app.services.sessions.variables_requests``).
            raise waits.ParkCall(
                "variables",
                {
                    "agent_name": relation.agent.name,
                    "registry_agent_name": relation.name,
                    "child_thread_id": child.id,
                    "required": sorted({*(relation.entry.scoped_env or []), *missing}),
                    "missing": missing,
                },
                missing_env_text(relation.agent.name, missing),
            )
        await self.seed_arguments(child.id, call["id"], request.arguments)
        role = link.receiving_role()
        attachments = await self._copy_attachments(parent.id, child.id, request.attachments)
        text = request.message
        if link.blocking:
            return await self._run_blocking(child, call["id"], "create", text, role, attachments)
        await self._send(child, call["id"], "create", text, role, attachments)
        return success(f"The subagent was initiated successfully. Reference: {child.id}")

    async def _new_instance(
        self, scope: Scope, request: CreateRequest, call: ToolCall, slot: Slot
    ) -> str | ToolResult:
        """A new child's id, within the relationship's ``maxInstances``; or the answer when
        the reference's "create-or-continue" gives the message to the one blocking instance,
        or when the limit is reached."""
        relation, parent = request.relation, scope.thread
        limit = relation.resumable.max_instances
        children = await self.deps.store.list_children(parent.id)
        live = [
            c
            for c in children
            if c.relationship == relation.name and c.child_status != "terminated"
        ]
        if limit == 1 and relation.entry.blocking and len(live) == 1:
            slot.subagent_id = live[0].id
            attachments = await self._copy_attachments(parent.id, live[0].id, request.attachments)
            role = SubagentLink.of(live[0]).receiving_role()
            return await self._run_blocking(
                live[0], call["id"], "create", request.message, role, attachments
            )
        if limit is not None and len(live) >= limit:
            return failure(
                f"Subagent instance limit reached for {relation.name} "
                f"(maxInstances: {limit}, active: {len(live)}). "
                "Use subagent_message to talk to an existing instance."
            )
        return new_id()

    async def message(
        self, scope: Scope, call: ToolCall, args: dict[str, Any], slot: Slot
    ) -> ToolResult:
        """Send a message to a child: blocking relationships wait for its answer."""
        reference = args.get("referenceId") or args.get("reference_id")
        text = args.get("message")
        if not isinstance(reference, str) or not reference:
            return failure("subagent_message requires referenceId.")
        if not isinstance(text, str) or not text.strip():
            return failure("subagent_message requires message.")
        children = await self.deps.store.list_children(scope.thread.id)
        # The reference, or (ours) the display name of a live instance, which a model
        # may remember more reliably than a UUID.
        child = next((c for c in children if c.id == reference), None) or next(
            (c for c in children if c.display_name == reference and c.child_status != "terminated"),
            None,
        )
        if child is None:
            return failure(f"Unknown subagent reference: {reference}")
        if child.child_status == "terminated" or child.terminated:
            return failure(f"Subagent {reference} is terminated.")
        slot.subagent_id = reference = child.id
        link = SubagentLink.of(child)
        role = link.receiving_role()
        attachments = await self._copy_attachments(
            scope.thread.id, child.id, args.get("attachments")
        )
        if link.blocking:
            return await self._run_blocking(child, call["id"], "message", text, role, attachments)
        await self._send(child, call["id"], "message", text, role, attachments)
        return success(f"Message sent to subagent {reference}.")

    async def listing(self, scope: Scope) -> ToolResult:
        children = [
            c
            for c in await self.deps.store.list_children(scope.thread.id)
            if not SubagentLink.of(c).hidden
        ]
        if not children:
            return success("No active subagent instances.")
        return success("\n".join(registry_line(c) for c in children))

    # --- non-resumable, non-blocking ---------------------------------------------------

    async def spawn(
        self,
        scope: Scope,
        offered: OfferedTool,
        call: ToolCall,
        text: str,
        slot: Slot,
        args: dict[str, Any] | None = None,
    ) -> ToolResult:
        """A ``blocking: false`` subagent tool: start the child, return its reference at once."""
        assert offered.agent is not None
        key = KEY + call["id"]
        child_id = await self.deps.store.get_value(scope.thread.id, key)
        if child_id is None:
            child_id = new_id()
            await self.deps.store.set_value(scope.thread.id, key, child_id)
        env, missing = await self.scoped_env(scope, offered.entry)
        if missing:
            return failure(missing_env_text(offered.agent.name, missing))
        slot.subagent_id = child_id
        name = init_name(offered.entry, args or {})
        arguments = initial_arguments(offered.entry, args or {}, "message")
        link = SubagentLink(
            blocking=False,
            resumable=False,
            owner_side=scope.side,
            tool_call_id=call["id"],
            arguments=arguments,
        ).with_options(offered.entry)
        child = await self._ensure_child(scope, offered.agent.name, child_id, name, link, env)
        await self.seed_arguments(child.id, call["id"], arguments)
        files = await self._copy_attachments(
            scope.thread.id, child.id, init_paths(offered.entry, args or {})
        )
        await self._send(child, call["id"], "create", text, "user", files)
        return success(f"The subagent was initiated successfully. Reference: {child.id}")

    # --- immediate relationships ---------------------------------------------------------

    async def spawn_immediate(
        self, scope: Scope, env: EnvLookup, flow_id: str, side: SideConfig | None = None
    ) -> bool:
        """Start the acting side's ``immediate`` relationships; whether any child was started.

        The session calls it at most once per agent and side per flow, and only while the
        conversation is empty (or right after a handoff). Children start in the background
        (there is no tool call to wait in) with a silent first message; their result comes
        back as a delivery. Ids derive from the flow, so a resumed flow starts nothing twice.
        """
        started = False
        for name, entry, declared in relationship_entries(scope.prompt, side):
            if not entry.immediate or not is_subagent_entry(entry):
                continue
            if entry.optional and (await env(entry.optional) or "").strip().lower() not in TRUTHY:
                continue
            agent = await self.deps.store.get_agent(entry.name)
            if agent is None:
                continue
            resumable = entry.resumable if isinstance(entry.resumable, ResumableConfig) else None
            key = f"{KEY}immediate.{flow_id}.{scope.side}.{name}"
            child_id = await self.deps.store.get_value(scope.thread.id, key)
            if child_id is None:
                limit = resumable.max_instances if resumable else None
                children = await self.deps.store.list_children(scope.thread.id)
                live = [
                    c for c in children if c.relationship == name and c.child_status != "terminated"
                ]
                if limit is not None and len(live) >= limit:
                    continue
                child_id = new_id()
                await self.deps.store.set_value(scope.thread.id, key, child_id)
            link = SubagentLink(
                blocking=False,
                resumable=resumable is not None,
                receives_messages=resumable.receives_messages if resumable else "side_a",
                owner_side=scope.side,
                tool_call_id=None,
                immediate=True,
            ).with_options(entry, persistent=declared is not None)
            scoped, missing = await self.scoped_env(scope, entry)
            if missing:
                # No tool call to fail: the worker log says why the child did not start.
                logger.warning("%s", missing_env_text(agent.name, missing))
                continue
            child = await self._ensure_child(
                scope, agent.name, child_id, agent.title or agent.name, link, scoped, name
            )
            boot = message_id_for(key, "boot")
            if not await self._known(child.id, boot):
                await self.queue(
                    child.id,
                    QueuedMessage(
                        id=boot,
                        role=link.receiving_role(),
                        content=BOOT_TEXT,
                        silent=True,
                        metadata={"subagent_boot": True},
                    ),
                )
            started = True
        return started

    # --- children ------------------------------------------------------------------------

    async def scoped_env(
        self, scope: Scope, entry: ToolConfig, child_id: str | None = None
    ) -> tuple[dict[str, str], list[str]]:
        """The relationship's ``scopedEnv`` values as the parent resolves them (copied into the
        child's thread env), and the names neither the parent nor (once a variables request
        was answered) the child ``child_id`` itself can resolve."""
        missing: list[str] = []
        child = await self.deps.store.get_thread(child_id) if child_id else None

        async def stored(name: str) -> str | None:
            found = await self.deps.store.resolve_env(scope.thread.id, name, scope.prompt.name)
            if found is None and child is not None:
                found = await self.deps.store.resolve_env(child.id, name, scope.prompt.name)
            return None if found is None else found.value

        # The entry's own values go along, their ``${NAME}`` references resolved here.
        values: dict[str, str] = {}
        for key, template in (entry.env or {}).items():
            try:
                values[key] = await env_refs.expand(template, stored)
            except env_refs.MissingReference as gone:
                missing.append(gone.name)
        for name in entry.scoped_env or []:
            value = await stored(name)
            if value is None:
                missing.append(name)
            else:
                values[name] = value
        return values, missing

    async def _ensure_child(
        self,
        scope: Scope,
        agent: str,
        child_id: str,
        name: str,
        link: SubagentLink,
        env: dict[str, str] | None = None,
        relationship: str | None = None,
    ) -> ThreadRecord:
        existing = await self.deps.store.get_thread(child_id)
        if existing is not None:
            return existing
        child = await self.engine.create_thread(
            agent,
            user_id=scope.thread.user_id,
            parent_id=scope.thread.id,
            env=env,
            thread_id=child_id,
            display_name=name,
            relationship=relationship or agent,
            child_status="running",
            subagent=link,
        )
        await scope.hooks.after_subagent_created(
            scope.state, await self.engine.thread_state(child_id)
        )
        return child

    async def seed_arguments(
        self, child_id: str, call_id: str, arguments: dict[str, Any] | None
    ) -> None:
        """The reference's first child message: a silent system message listing the child's
        initial arguments (before its instruction), so the child's model reads them."""
        if not arguments:
            return
        message_id = message_id_for(call_id, "arguments")
        if await self.deps.store.get_message(child_id, message_id):
            return  # a resumed call: seeded already
        row = Message(
            id=message_id,
            role="system",
            content=arguments_text(arguments),
            silent=True,
            created_at=self.deps.clock.now(),
            metadata={"subagent_arguments": arguments},
        )
        await self.deps.store.commit(child_id, Commit(messages=[row]))

    async def _send(
        self,
        child: ThreadRecord,
        call_id: str,
        purpose: str,
        text: str,
        role: Role,
        attachments: list[dict[str, Any]] | None,
    ) -> None:
        message_id = message_id_for(call_id, purpose)
        queued = await self.deps.store.list_queued(child.id)
        if any(q.id == message_id for q in queued) or await self.deps.store.get_message(
            child.id, message_id
        ):
            return  # a resumed call: sent already
        await self.deps.store.set_child_status(child.id, "running")
        await self.queue(
            child.id,
            QueuedMessage(id=message_id, role=role, content=text, attachments=attachments),
        )

    async def _run_blocking(
        self,
        child: ThreadRecord,
        call_id: str,
        purpose: str,
        text: str,
        role: Role,
        attachments: list[dict[str, Any]] | None,
    ) -> ToolResult:
        await self.deps.store.set_child_status(child.id, "running")
        message = NewMessage(
            text, role=role, id=message_id_for(call_id, purpose), attachments=attachments
        )
        try:
            result = await self.engine.run_session(child.id, message=message)
        except Exception as exc:  # the caller's tool fails; the registry must not say running
            await self.crashed(child.id, type(exc).__name__, f"{call_id}:{purpose}")
            raise
        ok, answer = outcome_of(result)
        returned = await self.returned_files(child.id, result)
        assert child.parent_id is not None
        refs, lines = await self.copy_back(child.id, child.parent_id, returned)
        reference = f"\n\nReference: {child.id}{lines}"
        if ok:
            return ToolResult("success", result=answer + reference, attachments=refs or [])
        return failure(answer + reference)

    async def copy_files(
        self, source: str, target: str, paths: list[str] | None
    ) -> list[dict[str, Any]] | None:
        """Copy the named files of ``source`` into ``target`` (new ``/attachments/`` paths)."""
        return await self._copy_attachments(source, target, paths)

    async def _copy_attachments(
        self, source: str, target: str, paths: Any
    ) -> list[dict[str, Any]] | None:
        """Copy the named files of ``source`` into ``target``'s ``/attachments/`` (new paths)."""
        if not isinstance(paths, list) or not paths:
            return None
        refs = []
        for path in paths:
            if not isinstance(path, str):
                continue
            ref = await copy_file(self.engine, source, target, path)
            if ref is not None:
                refs.append(ref)
        return refs or None

    # --- the end of a child's session ----------------------------------------------------

    def start_frame(self, child: ThreadRecord, prompt: str | None) -> dict[str, Any]:
        """UAP §8.7 ``subagent_start``."""
        return event(
            "subagent_start",
            {**_ids(child), "prompt": prompt or "", "timestamp": now_ms()},
        )

    async def settle(self, child: ThreadRecord, result: SessionResult) -> None:
        """A child's session ended: its delivery, status and ``subagent_end`` on the parent.

        Idempotent per session (the delivery's id derives from the session id), so a host
        that finds a finished session it may not have settled calls it again (``recover``).
        """
        if child.parent_id is None:
            return
        ok, text = outcome_of(result)
        await self._settle(
            child,
            ok,
            text,
            f"end:{result.session_id}",
            notify=result.notify_parent,
            status=result.final_status,
            files=await self.returned_files(child.id, result),
        )

    async def crashed(self, thread_id: str, detail: str, key: str) -> None:
        """A child's session died outside the engine (the host caught the exception): deliver a
        failure, as the reference's fatal-error text. ``key`` names the crash (e.g. the host's
        session id) so that reporting it twice delivers once."""
        child = await self.deps.store.get_thread(thread_id)
        if child is None or child.parent_id is None:
            return
        await self._settle(child, False, CRASHED_TEXT.format(detail=detail), f"crash:{key}")

    async def recover(self, thread_id: str) -> None:
        """Settle the child's last finished session again (a no-op when it was settled)."""
        child = await self.deps.store.get_thread(thread_id)
        if child is None or child.parent_id is None:
            return
        result = await self.engine.last_result(thread_id)
        if result is not None:
            await self.settle(child, result)

    async def returned_files(self, child_id: str, result: SessionResult) -> list[str]:
        """Paths the tool that ended the child's session returned: a ``sessionStop``/
        ``sessionFail`` call's ``attachmentsProperty`` (recorded on its result row), else the
        attachments of the ending step's successful tool results (an ``endSessionTool`` that
        returns files), which the reference copies back to the parent too."""
        if result.stop_reason not in ("session_stop", "session_fail"):
            return []
        page = await self.deps.store.list_messages(
            child_id, MessageQuery(limit=20, order="desc", include_silent=True)
        )
        for row in reversed(page.messages):
            paths = row.metadata.get(RETURNED_FILES_KEY) if row.role == "tool" else None
            if isinstance(paths, list):
                return [p for p in paths if isinstance(p, str)]
        ending: list[Message] = []  # the ending step's top-level tool results, newest first
        for row in reversed(page.messages):  # the page is oldest first
            if row.depth != 0:
                continue
            if row.role != "tool":
                break
            ending.append(row)
        return [
            a["path"]
            for row in reversed(ending)
            if row.tool_status == "success"
            for a in row.attachments or []
            if isinstance(a.get("path"), str)
        ]

    async def copy_back(
        self, child_id: str, parent_id: str, paths: list[str]
    ) -> tuple[list[dict[str, Any]] | None, str]:
        """Copy returned files into the parent (new paths, as parent→child copies) and the
        lines that name them for the parent's model."""
        refs = await self._copy_attachments(child_id, parent_id, paths)
        lines = "".join(f"\nAttachment path: {r['path']}" for r in refs or [])
        return refs, ("\n" + lines if lines else "")

    async def _settle(
        self,
        child: ThreadRecord,
        ok: bool,
        text: str,
        key: str,
        *,
        notify: bool = True,
        status: str | None = None,
        files: list[str] | None = None,
    ) -> None:
        # Delivery before status: a crash in between leaves the status ``running``, which
        # ``recover`` fixes without delivering twice (the delivery's id is fixed by ``key``).
        assert child.parent_id is not None
        current = await self.deps.store.get_thread(child.id)
        if current is None or current.terminated or current.child_status == "terminated":
            return  # a terminated child reports nothing any more
        link = SubagentLink.of(child)
        # 0.2.0 children are persistent threads: any end leaves them ``idle`` (reference
        # subagent-reconcile), the delivery still says whether it failed.
        status = status_text(status) if status else ("idle" if ok or link.persistent else "failed")
        delivered = False
        explicit = link.parent_communication == "explicit"
        if link.says_non_blocking() and notify and not explicit:
            delivery_id = message_id_for(f"{child.id}:{key}", "delivery")
            if not await self._known(child.parent_id, delivery_id):
                refs, lines = await self.copy_back(child.id, child.parent_id, files or [])
                delivery = QueuedMessage(
                    id=delivery_id,
                    role=SubagentLink.of(child).owner_role(),
                    content=result_text(child.id, ok, text) + lines,
                    silent=True,
                    metadata={"subagent_id": child.id, "subagent_status": status},
                    attachments=refs,
                )
                await self.queue(child.parent_id, delivery)
                delivered = True
        if current.child_status != status:
            await self.deps.store.set_child_status(child.id, status)
        elif not delivered:
            return  # settled before: nothing to announce again
        end = {**_ids(child), "success": ok, "timestamp": now_ms()}
        end["result" if ok else "error"] = text
        await self.engine.emit_to(child.parent_id, event("subagent_end", end))

    async def _known(self, thread_id: str, message_id: str) -> bool:
        """Whether the thread has the message, queued or stored (a gone thread counts as yes)."""
        try:
            if any(q.id == message_id for q in await self.deps.store.list_queued(thread_id)):
                return True
            return await self.deps.store.get_message(thread_id, message_id) is not None
        except LookupError:
            return True


class ForwardingSink:
    """A child session's sink: every frame goes to the child's listeners and, wrapped in a
    UAP §8.7 ``subagent_event``, to the parent's (redacted by the parent's recorder too)."""

    def __init__(self, inner: EventSink, child: ThreadRecord, parent: Recorder) -> None:
        self.inner, self.child, self.parent = inner, child, parent

    def emit(self, thread_id: str, frame: dict[str, Any]) -> None:
        self.inner.emit(thread_id, frame)
        if thread_id == self.child.id:
            self.parent.emit(event("subagent_event", {**_ids(self.child), "innerEvent": frame}))


def outcome_of(result: SessionResult) -> tuple[bool, str]:
    """Whether a child's session succeeded, and its result (or failure) text."""
    if result.stop_reason == "session_fail":  # its sessionFail tool: the child's own words
        return False, result.answer or "Subagent reported a failure."
    if result.stop_reason in FAILED_REASONS:
        detail = result.detail or result.stop_reason
        return False, f"Subagent did not finish ({result.stop_reason}): {detail}"
    answer = result.answer
    if answer is None or answer == "":
        return True, "Subagent completed."
    return True, answer if isinstance(answer, str) else _json(answer)


async def copy_file(
    engine: EngineHandle, source: str, target: str, path: str
) -> dict[str, Any] | None:
    """Copy one file across threads as ``/attachments/<stem>-<8 hex><ext>``; its new reference."""
    store = engine.deps.store
    data = await store.read_file(source, path)
    record = await store.stat_file(source, path)
    if data is None or record is None:
        return None
    stem, ext = posixpath.splitext(posixpath.basename(path))
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem)[:64] or "file"
    new_path = f"/attachments/{stem}-{uuid.uuid4().hex[:8]}{ext[:10]}"
    stored = await store.write_file(
        target,
        new_path,
        data,
        record.mime_type,
        metadata={**record.metadata, "copied_from": {"thread": source, "path": path}},
        width=record.width,
        height=record.height,
    )
    return {
        "id": new_id(),
        "type": "file",
        "path": stored.path,
        "name": record.metadata.get("name") or record.name,
        "mimeType": stored.mime_type,
        "size": stored.size,
    }


def initial_arguments(
    entry: ToolConfig, args: dict[str, Any], default_property: str | None = None
) -> dict[str, Any]:
    """A call's arguments the child is told as its initial arguments: all of them but those
    delivered another way (its first message's text, its attachments, its display name)."""
    used = {
        entry.init_user_message_property or default_property,
        entry.init_attachments_property,
        entry.init_agent_name_property,
    }
    return {k: v for k, v in args.items() if k not in used}


def arguments_text(arguments: dict[str, Any]) -> str:
    """The text of the silent system message that gives a child its initial arguments."""
    return "Initial arguments:\n" + json.dumps(arguments, indent=2, ensure_ascii=False)


def status_text(text: str) -> str:
    """A registry status as stored: one line, at most ``STATUS_MAX`` characters (cut with …)."""
    line = " ".join(str(text).split()) or "running"
    return line if len(line) <= STATUS_MAX else line[: STATUS_MAX - 1] + "…"


def missing_env_text(agent: str, missing: list[str]) -> str:
    return (
        f'Subagent "{agent}" requires scoped environment variables before it can be created: '
        + ", ".join(missing)
        + ". Set them on this thread (or its agent, prompt, user or instance) and try again."
    )


def _ids(child: ThreadRecord) -> dict[str, Any]:
    return {
        "subagentId": child.id,
        "subagentType": child.relationship or child.agent_name,
        "parentToolCallId": SubagentLink.of(child).tool_call_id,
    }


def _relation_text(r: Relationship) -> str:
    a = r.agent
    return r.description or a.tool_description or a.description or a.title or a.name


def relationship_entries(
    prompt: PromptDefinition, side: SideConfig | None
) -> list[tuple[str, ToolConfig, SubagentRelationship | None]]:
    """Every subagent relationship the acting side has: the prompt's 0.1.0 entries (by agent
    name) and the side's 0.2.0 ``subagents`` (by ``as``), with the side's declaration."""
    out: list[tuple[str, ToolConfig, SubagentRelationship | None]] = [
        (entry.name, entry, None) for entry in prompt.tools or [] if not isinstance(entry, str)
    ]
    for declared in (side.subagents if side is not None else None) or []:
        out.append((declared.name, side_entry(declared), declared))
    return out


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def _create_schema(relations: dict[str, Relationship]) -> tuple[str, dict[str, Any]]:
    arguments: dict[str, Any] = {
        "type": "object",
        "description": "Arguments for the subagent, as its prompt's required schema says",
    }
    if len(relations) == 1:
        only = next(iter(relations.values()))
        if only.schema:
            arguments = dict(only.schema)
    names = sorted(relations)
    lines = [f"- {name}: {_relation_text(r)}" for name, r in relations.items()]
    schema = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "enum": names, "description": "Which subagent to create"},
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "A short human-readable name for this instance",
            },
            "message": {"type": "string", "description": "The instruction for the subagent"},
            "attachments": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Paths of files of this thread to give the subagent",
            },
            "arguments": arguments,
        },
        "required": ["agent", "name", "message"],
    }
    description = "Create a subagent instance and send it its first message.\n" + "\n".join(lines)
    return description, schema


_MESSAGE_SCHEMA: tuple[str, dict[str, Any]] = (
    "Send a message to a subagent instance you created (by its reference).",
    {
        "type": "object",
        "properties": {
            "referenceId": {"type": "string", "description": "The subagent's reference"},
            "message": {"type": "string"},
            "attachments": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["referenceId", "message"],
    },
)
_LIST_SCHEMA: tuple[str, dict[str, Any]] = (
    "List your subagent instances with their references and status.",
    {"type": "object", "properties": {}},
)
