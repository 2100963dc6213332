"""The engine's public face: create threads, run (or resume) sessions, get a ``ThreadState``.

    engine = Engine(store, sink, registry=discover(["."]))
    thread = await engine.create_thread("support_agent", user_id="42")
    result = await engine.run_session(thread.id, message=NewMessage("Hello"))
    result.stop_reason   # "stop_on_response"

``run_session`` resumes the thread's unfinished session if there is one (the
store's progress says so), else starts a new one. The host (a Celery task)
guarantees one running session per thread.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from runtime.core.messages import Clock, Message, NewMessage, Side, new_id
from runtime.core.progress import SessionProgress
from runtime.core.results import ToolResult
from runtime.core.spec import SPEC_0_1, AgentDefinition, PromptDefinition
from runtime.core.transcript import Transcript
from runtime.definitions.loader import DefinitionLoader, DefinitionNotFound
from runtime.delegation.link import SubagentLink
from runtime.delegation.subagents import ForwardingSink, NullHost, SubagentHost, Subagents
from runtime.deps import Deps, Limits
from runtime.loop.session import Session, SessionResult, final_text, result_of
from runtime.mcp.servers import McpTools
from runtime.providers import ProviderRegistry
from runtime.providers.retry import Sleep
from runtime.state import ThreadState
from runtime.store.events import EventSink, NullSink, queued_data
from runtime.store.protocol import MessageQuery, NewThread, QueuedMessage, Store, ThreadRecord
from runtime.store.recorder import Recorder
from runtime.store.storable import storable
from runtime.tools.a2a_tools import A2aAgents
from runtime.tools.hooks import HookRunner, hook_ids
from runtime.tools.knowledge_tools import KnowledgeBases
from runtime.tools.memory_tools import MemoryEmbedder
from runtime.tools.registry import Registry

# A thread at rest: the definitions' loader, side A's prompt and the hooks (``_rest_hooks``).
Rest = tuple[DefinitionLoader, PromptDefinition | None, HookRunner]

CHILD_KEY = "_runtime.child_thread."


class ThreadTerminated(RuntimeError):
    """The thread was terminated; nothing runs on it any more."""


class Engine:
    """Runs sessions of agents on threads, over a store and an event sink."""

    def __init__(
        self,
        store: Store,
        sink: EventSink | None = None,
        *,
        registry: Registry | None = None,
        providers: ProviderRegistry | None = None,
        limits: Limits | None = None,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
        subagent_host: SubagentHost | None = None,
        mcp: McpTools | None = None,
        a2a: A2aAgents | None = None,
        knowledge: KnowledgeBases | None = None,
        memory: MemoryEmbedder | None = None,
    ) -> None:
        """``sleep`` replaces ``asyncio.sleep`` for the waits between LLM attempts (tests).

        ``subagent_host`` starts sessions of threads this engine does not run itself
        (non-blocking subagents, woken parents); without one, queued messages wait.
        ``mcp`` resolves and runs ``mcp:<server>/<tool>`` tools (``runtime.mcp.servers``);
        ``a2a`` resolves and runs ``a2a:<name>`` tools (``runtime.tools.a2a_tools``);
        ``knowledge`` searches ``knowledge:<name>`` bases (``runtime.tools.knowledge_tools``);
        ``memory`` embeds ``memory:person`` memories (``runtime.tools.memory_tools``).
        """
        self.deps = Deps(
            store=store,
            sink=sink or NullSink(),
            registry=registry or Registry(),
            providers=providers or ProviderRegistry(),
            clock=clock or Clock(),
            limits=limits or Limits(),
            sleep=sleep or asyncio.sleep,
            mcp=mcp,
            a2a=a2a,
            knowledge=knowledge,
            memory=memory,
        )
        self.subagents = Subagents(self, subagent_host or NullHost())

    # --- threads -------------------------------------------------------------------------

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
    ) -> ThreadRecord:
        """Create a thread of ``agent`` (id: a random UUID4) and run ``after_thread_created`` hooks.

        The last four describe a subagent child (``runtime.delegation.subagents``).
        """
        definition = await self._agent(agent)
        new = NewThread(
            id=thread_id or new_id(),
            agent_name=agent,
            user_id=user_id,
            parent_id=parent_id,
            tags=list(tags or []),
            env=dict(env or {}),
            created_at=self.deps.clock.now(),
            display_name=display_name,
            relationship=relationship,
            child_status=child_status,
            subagent=subagent.stored() if subagent is not None else None,
        )
        record = await self.deps.store.create_thread(storable(new))
        _, _, hooks = rest = await self._rest_hooks(definition)
        if hooks.active("after_thread_created"):
            # The state (its recorder reads the thread's secrets) only when a hook gets it:
            # most agents have none, and every new chat waits for this before its first post.
            state, _ = await self._rest_state(record, definition, rest)
            await hooks.after_thread_created(state)
        return record

    async def thread_state(self, thread_id: str) -> ThreadState:
        """A ``ThreadState`` at rest (``execution`` is ``None``), e.g. for endpoints and effects."""
        thread = await self._thread(thread_id)
        state, _ = await self._rest_state(thread, await self._agent(thread.agent_name))
        return state

    async def _rest_hooks(self, agent: AgentDefinition) -> Rest:
        """The definitions' loader, the first AI side's prompt and the hooks of a thread at rest."""
        defs = DefinitionLoader(self.deps.store)
        prompt = await defs.find_prompt(agent.main_prompt())
        hooks = HookRunner(
            self.deps.registry, hook_ids(prompt.hooks if prompt else None, agent.hooks)
        )
        return defs, prompt, hooks

    async def _rest_state(
        self,
        thread: ThreadRecord,
        agent: AgentDefinition,
        rest: Rest | None = None,
    ) -> tuple[ThreadState, HookRunner]:
        defs, prompt, hooks = rest if rest is not None else await self._rest_hooks(agent)
        recorder = Recorder(self.deps.store, self.deps.sink, self.deps.clock, thread.id)
        await recorder.ready()  # frames emitted at rest are redacted too
        state = ThreadState(
            self.deps,
            thread,
            defs=defs,
            recorder=recorder,
            hooks=hooks,
            host=self,
            prompt_name=prompt.name if prompt else None,
            relations=self.subagents,
        )
        return state, hooks

    # --- sessions ----------------------------------------------------------------------------

    async def run_session(
        self, thread_id: str, *, message: NewMessage | None = None, side: Side | None = None
    ) -> SessionResult:
        """Resume the thread's unfinished session, or start one (with ``message``, if given).

        Starting clears the thread's stop flag. A ``message`` passed while a
        session is unfinished is queued for its next step (unless it is that
        session's own first message, re-sent by a retried task). Without a
        ``message``, a new session starts from the thread's queued messages.

        On a child thread the session's frames are also forwarded to the parent
        (``subagent_start``/``subagent_event``/``subagent_end``) and its end settles
        the child's registry entry (and delivers its result, see ``runtime.delegation.subagents``).
        """
        thread = await self._thread(thread_id)
        deps = self.deps
        if thread.parent_id is not None:
            parent = Recorder(self.deps.store, self.deps.sink, self.deps.clock, thread.parent_id)
            await parent.ready()
            deps = dataclasses.replace(
                self.deps, sink=ForwardingSink(self.deps.sink, thread, parent)
            )
            parent.emit(self.subagents.start_frame(thread, message.content if message else None))
            if thread.child_status != "running":
                await self.deps.store.set_child_status(thread_id, "running")
        self.subagents.running.add(thread_id)
        try:
            result = await self._run_session(thread, deps, message, side)
        finally:
            await self.subagents.session_ended(thread_id)
        if thread.parent_id is not None:
            await self.subagents.settle(thread, result)
        return result

    async def run_queued(self, thread_id: str) -> SessionResult | None:
        """Run a session on the thread's queued messages; ``None`` when there is nothing to do
        (nothing queued, the thread is stopped or terminated, or this engine runs it already)."""
        thread = await self.deps.store.get_thread(thread_id)
        if thread is None or thread.stopped or thread.terminated:
            return None
        if thread_id in self.subagents.running:
            return None
        progress = await self.deps.store.load_progress(thread_id)
        unfinished = progress is not None and not progress.finished
        if not unfinished and not await self.deps.store.list_queued(thread_id):
            if progress is not None and thread.parent_id is not None:
                # A host retrying a child whose end may not have been settled (a crash
                # between its last commit and its delivery): settle it now, once.
                await self.subagents.recover(thread_id)
            return None
        return await self.run_session(thread_id)

    async def settle(self) -> None:
        """Wait for writes that synchronous calls started in the background (``state.queue_tool``
        on an idle thread); a host calls it before it lets go of the engine."""
        await self.subagents.flush_soon()

    async def emit_to(self, thread_id: str, frame: dict[str, Any]) -> None:
        """Send a frame to a thread's live listeners (redacted with that thread's secrets)."""
        recorder = Recorder(self.deps.store, self.deps.sink, self.deps.clock, thread_id)
        await recorder.ready()
        recorder.emit(frame)

    async def _run_session(
        self, thread: ThreadRecord, deps: Deps, message: NewMessage | None, side: Side | None
    ) -> SessionResult:
        thread_id = thread.id
        agent = await self._agent(thread.agent_name)
        progress = await self.deps.store.load_progress(thread_id)
        transcript = await self._transcript(thread_id)
        if progress is not None and not progress.finished:
            session = Session(deps, thread, agent, progress, transcript, self)
            await self._queue_if_new(thread_id, message, progress, transcript)
            return await session.run(resumed=True)
        if message is not None and message.id and transcript.get(message.id) is not None:
            # A retried task re-sending a message that is already stored.
            if progress is not None and progress.root_message_id == message.id:
                return result_of(thread_id, progress, final_text(transcript, progress.side))
            message = None
        first_side: Side = side or ("b" if message and message.role == "assistant" else "a")
        if agent.spec == SPEC_0_1 and agent.type != "dual_ai":
            first_side = "a"  # in 0.1.0's ai_human only side A is an AI
        # In 0.2.0 the message's author decides (a user message is side B's, so side A acts);
        # a person's side to act parks the session as ``awaiting_human``.
        progress = SessionProgress(session_id=new_id(), agent=thread.agent_name, side=first_side)
        session = Session(deps, thread, agent, progress, transcript, self)
        await session.start(self._inbound(message))
        return await session.run()

    async def last_result(self, thread_id: str) -> SessionResult | None:
        """The result of the thread's last finished session (``None`` if none finished)."""
        progress = await self.deps.store.load_progress(thread_id)
        if progress is None or not progress.finished:
            return None
        transcript = await self._transcript(thread_id)
        return result_of(thread_id, progress, final_text(transcript, progress.side))

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
        """An agent called as a tool: its own child thread (one per call id), run to its end.

        The child id is remembered in the parent's values before the child
        exists, so a resumed parent finds (and resumes) the same child.
        """
        key = CHILD_KEY + call_id
        child_id = await self.deps.store.get_value(parent.id, key)
        if child_id is None:
            child_id = new_id()
            await self.deps.store.set_value(parent.id, key, child_id)
        if await self.deps.store.get_thread(child_id) is None:
            await self.create_thread(
                agent,
                user_id=parent.user_id,
                parent_id=parent.id,
                thread_id=child_id,
                relationship=agent,
                child_status="running",
                display_name=display_name,
                env=env,
                subagent=link,
            )
            await self.subagents.seed_arguments(child_id, call_id, link.arguments)
            await hooks.after_subagent_created(state, await self.thread_state(child_id))
        progress = await self.deps.store.load_progress(child_id)
        if progress is not None and progress.finished:
            # Finished before a crash of the parent: settle again (idempotent), then answer.
            await self.subagents.recover(child_id)
            result = await self.last_result(child_id)
            assert result is not None
            return result
        try:
            if progress is None:
                # Files named by initAttachmentsProperty go with the first message (copied).
                files = await self.subagents.copy_files(parent.id, child_id, attachments)
                return await self.run_session(child_id, message=NewMessage(text, attachments=files))
            return await self.run_session(child_id)
        except Exception as exc:  # the tool call fails; the registry must not say running
            await self.subagents.crashed(child_id, type(exc).__name__, call_id)
            raise

    async def invoke_tool(self, state: ThreadState, name: str, args: dict[str, Any]) -> ToolResult:
        """``state.invoke_tool`` at rest: the tool runs in a minimal execution context."""
        thread = await self._thread(state.thread_id)
        agent = await self._agent(thread.agent_name)
        progress = SessionProgress(session_id=new_id(), agent=thread.agent_name)
        session = Session(self.deps, thread, agent, progress, Transcript(), self)
        return await session.invoke_tool(state, name, args)

    # --- helpers -----------------------------------------------------------------------------

    async def _thread(self, thread_id: str) -> ThreadRecord:
        thread = await self.deps.store.get_thread(thread_id)
        if thread is None:
            raise LookupError(f"Thread not found: {thread_id}")
        if thread.terminated:
            raise ThreadTerminated(f"Thread is terminated: {thread_id}")
        return thread

    async def _agent(self, name: str) -> AgentDefinition:
        agent = await self.deps.store.get_agent(name)
        if agent is None:
            raise DefinitionNotFound(f"Agent not found: {name}")
        return agent

    async def _transcript(self, thread_id: str) -> Transcript:
        store = self.deps.store
        # New messages must sort after every stored one, deeper ones included: the newest
        # time comes with the history (one read at every start).
        history = await store.list_messages(
            thread_id, MessageQuery(limit=None, include_silent=True, with_newest=True)
        )
        self.deps.clock.observe(history.newest_at)
        transcript = Transcript(history.messages)
        self.deps.clock.observe(transcript.last_created_at)
        return transcript

    def _inbound(self, message: NewMessage | None) -> Message | None:
        if message is None:
            return None
        side: Side | None = {"user": "b", "assistant": "a"}.get(message.role)  # type: ignore[assignment]
        return Message(
            id=message.id or new_id(),
            role=message.role,
            content=message.content,
            created_at=self.deps.clock.now(),
            side=side,
            attachments=message.attachments,
            silent=message.silent,
            metadata=dict(message.metadata or {}),
            # A queued subagent result that starts the parent's session names its child.
            subagent_id=(message.metadata or {}).get("subagent_id"),
        )

    async def _queue_if_new(
        self,
        thread_id: str,
        message: NewMessage | None,
        progress: SessionProgress,
        transcript: Transcript,
    ) -> None:
        if message is None:
            return
        if message.id and (message.id == progress.root_message_id or transcript.get(message.id)):
            return
        queued = QueuedMessage(
            id=message.id or new_id(),
            role=message.role,
            content=message.content,
            attachments=message.attachments,
            silent=message.silent,
            metadata=dict(message.metadata or {}),
        )
        queued = storable(queued)
        await self.deps.store.queue_message(thread_id, queued)
        await self.emit_to(thread_id, queued_data(queued))
