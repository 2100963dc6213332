"""The store protocol: everything the engine reads and writes, in a few coarse calls.

The engine never talks to a database. It calls a ``Store``: the in-memory one
(``runtime.store.memory``) for tests and the Django one (in ``agents_app``) in
production. Both must behave identically; ``tests/runtime`` runs against a
``store`` fixture that can be parametrized over implementations.

Design rules:
- **Writes during a session go through ``commit``**: one atomic call per
  checkpoint (open a step; store an LLM response; store a tool result together
  with the step's progress). One call = one transaction = one round trip.
- **Reads are few**: a session reads its thread, progress, definitions and the
  top-level history once, then keeps the history in memory.
- Everything is keyed by ``thread_id``; a store never needs to know which
  session is running (there is at most one per thread; the host guarantees it).
- Timestamps: message/log ``created_at`` are integer microseconds chosen by the
  engine (strictly increasing per thread); queue rows drained by ``commit`` get
  a ``created_at`` from the store that is greater than every existing message
  of the thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import httpx

from runtime.core.messages import Message, Role
from runtime.core.progress import SessionProgress, ThreadExecutionState
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.core.user_scope import UserEndpointError

# ``handler_execution``: one message handed to a side handler (spec 0.2.0, the reference's kind).
LogKind = Literal["llm", "tool", "system", "handler_execution"]
EnvType = Literal["text", "secret"]
EnvSource = Literal["thread", "agent", "prompt", "user", "instance"]
DefinitionKind = Literal["agent", "prompt", "model"]
EffectStatus = Literal[
    "pending", "processing", "completed", "failed", "agent_canceled", "user_canceled"
]
CanceledBy = Literal["agent", "user"]


# --- records -------------------------------------------------------------------------


@dataclass(slots=True)
class ThreadRecord:
    """A thread as the engine needs it.

    ``created_at`` is µs since the epoch (spec ``ThreadMetadata``). ``agent_name``
    is the current agent (a handoff changes it), ``origin_agent_name`` the agent
    at creation (never changes). ``stopped`` is the persistent stop flag set by
    a user stop and cleared by a new user message or a continue.
    """

    id: str
    agent_name: str
    origin_agent_name: str
    user_id: str | None = None
    parent_id: str | None = None
    tags: list[str] = field(default_factory=list)
    created_at: int = 0
    stopped: bool = False
    terminated: bool = False
    execution_state: ThreadExecutionState = field(default_factory=ThreadExecutionState)
    # Subagent children (``runtime.delegation.subagents``): display name, relationship, registry status,
    # and the link (blocking, resumable, owner side, spawning call, arguments).
    display_name: str = ""
    relationship: str = ""
    child_status: str = ""
    subagent: dict[str, Any] | None = None


@dataclass(slots=True)
class NewThread:
    """What ``create_thread`` needs; the engine chooses ``id`` (a UUID4)."""

    id: str
    agent_name: str
    user_id: str | None = None
    parent_id: str | None = None
    tags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    created_at: int = 0
    display_name: str = ""
    relationship: str = ""
    child_status: str = ""
    subagent: dict[str, Any] | None = None


@dataclass(slots=True)
class ThreadUpdate:
    """Changes to a thread made by a commit; ``None`` fields are left alone."""

    agent_name: str | None = None
    stopped: bool | None = None
    execution_state: ThreadExecutionState | None = None


@dataclass(slots=True)
class LogRecord:
    """One LLM request attempt (``kind='llm'``), one tool call (``'tool'``) or a runtime event.

    Mirrors the ``Log`` table. ``message_id`` is the message the turn started
    from (the session's root message, or for sub-prompts the parent step's
    assistant message). Costs are USD floats (12 decimals). An LLM log is
    inserted with ``is_complete=False`` when the request is sent and replaced
    with the completed row when the response (or error) arrives.
    ``error_type='interrupted'`` marks a request that never completed (the
    session died); such logs do not count as consumed responses.
    """

    id: str
    thread_id: str
    kind: LogKind = "llm"
    message_id: str | None = None
    parent_id: str | None = None
    retry_of_id: str | None = None
    provider: str = ""
    model: str = ""
    model_id: str = ""
    prompt_name: str = ""
    attempt: int = 1
    tool_name: str = ""
    tool_call_id: str = ""
    request_body: dict[str, Any] | None = None
    response_body: dict[str, Any] | None = None
    system_prompt: str = ""
    status_code: int | None = None
    finish_reason: str = ""
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost_input: float = 0.0
    cost_cached: float = 0.0
    cost_output: float = 0.0
    cost_total: float = 0.0
    # False: no price was known (runtime.providers.pricing.Cost.known).
    cost_known: bool = True
    latency_ms: int | None = None
    time_to_first_token_ms: int | None = None
    error: str = ""
    error_type: str = ""
    # spec 0.2.0 ``ErrorOrigin``: ``runtime``, ``provider:<name>``, ``tool:<name>``,
    # ``hook:<id>`` ("" without an error; ``runtime.store.error_origin``).
    error_origin: str = ""
    is_complete: bool = False
    created_at: int = 0
    # The definition versions the request ran on, when the store knows them
    # ({"prompts/<name>": 2, …}); the engine leaves it None and a versioning store fills it.
    definition_versions: dict[str, Any] | None = None


@dataclass(slots=True)
class QueuedMessage:
    """A message waiting for the next step of the thread (durable, ordered by ``created_at``)."""

    id: str
    role: Role = "user"
    content: str = ""
    attachments: list[dict[str, Any]] | None = None
    silent: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: int = 0


@dataclass(slots=True)
class FileRecord:
    """An entry of a thread's file system. ``path`` is normalized (leading '/', no trailing '/')."""

    path: str
    name: str
    mime_type: str = "application/octet-stream"
    size: int = 0
    is_directory: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    width: int | None = None
    height: int | None = None
    created_at: int = 0  # ms
    is_chunked: bool = False  # stored (and streamed) in ``chunk_count`` pieces
    chunk_count: int = 0
    has_thumbnail: bool = False


@dataclass(slots=True)
class FileChunk:
    """One piece of a streamed file (spec ``FileChunk``); ``index`` is 0-based."""

    data: bytes
    index: int
    total_chunks: int
    is_last: bool


@dataclass(slots=True)
class FileStats:
    """Spec ``FileStats``: counts and the total size of the files (directories excluded)."""

    file_count: int = 0
    directory_count: int = 0
    total_size: int = 0


@dataclass(slots=True)
class GrepResult:
    """Spec ``GrepResult``: a file and its matching lines as ``(line number, content)``."""

    path: str
    matches: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class FindResult:
    """Spec ``FindResult``: the matching paths."""

    paths: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ReaddirResult:
    """Spec ``ReaddirResult``: a directory's entries."""

    entries: list[FileRecord] = field(default_factory=list)


FileType = Literal["file", "directory", "all"]
FileSource = bytes | AsyncIterable[bytes]


UserRole = Literal["admin", "user", "api"]


@dataclass(slots=True)
class ThreadUser:
    """A person as agent code sees them (spec 0.2.0 ``ThreadUser``): the thread's owner from
    ``state.user()``, a thread endpoint's caller. ``role`` is ``admin`` for staff accounts,
    ``api`` for a caller that came with an API key, ``user`` otherwise; ``permissions`` the
    account's permission names (``app_label.codename``), sorted; ``display_name`` the full
    name, or the username when there is none; ``avatar_url`` ``None`` (no avatars here)."""

    id: str
    username: str
    email: str = ""
    role: UserRole = "user"
    permissions: list[str] = field(default_factory=list)
    display_name: str = ""
    avatar_url: str | None = None
    # ``call``'s way to the person's user endpoints: bound by ``state.user()`` (the thread's
    # owner), absent on a caller a thread endpoint is told about.
    endpoint_caller: UserEndpointCaller | None = field(default=None, repr=False, compare=False)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """Call the person's user endpoint ``method path`` (spec 0.2.0 ``UserHandle.call``) in
        their scope, one call at a time per user: its answer (``None`` for 204), or
        ``UserEndpointError`` with the status it answered (404 unknown route, 405 wrong
        method, 409 ``ReentrantUserCall`` for a call that would wait for itself)."""
        if self.endpoint_caller is None:
            raise UserEndpointError(
                404, "User endpoints are reached through state.user() of the thread's owner."
            )
        return await self.endpoint_caller(method.upper(), path, body)

    @property
    def is_admin(self) -> bool:
        """The 0.1.0 field, kept for code written against it: ``role == "admin"``."""
        return self.role == "admin"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON object (what a handler may return as it is)."""
        return {
            "id": self.id,
            "username": self.username,
            "role": self.role,
            "permissions": list(self.permissions),
            "email": self.email,
            "display_name": self.display_name,
            "avatar_url": self.avatar_url,
        }

    def __getitem__(self, key: str) -> Any:
        # Code ported from the reference reads it as an object: ``user["role"]``.
        data = self.to_dict()
        if key not in data:
            raise KeyError(key)
        return data[key]


# The name before spec 0.2.0; the same class.
UserRecord = ThreadUser
# ``(method, path, body) → answer``: a bound call into one person's user endpoints.
UserEndpointCaller = Callable[[str, str, Any], Awaitable[Any]]


@dataclass(slots=True)
class UserValueEntry:
    """One account-wide value of a user (spec 0.2.0 user KV); ``updated_at`` in ms."""

    key: str
    value: Any
    updated_at: int


@dataclass(slots=True)
class UserValuePage:
    """A page of a user's values, by key, and how many match in all."""

    entries: list[UserValueEntry]
    total: int


@dataclass(slots=True)
class EnvEntry:
    """A resolved env value, its type and the tier it came from."""

    value: str
    type: EnvType = "secret"
    source: EnvSource = "thread"


@dataclass(slots=True)
class MessageQuery:
    """Which messages ``list_messages`` returns.

    Paging is the same as ``GET /api/threads/{id}/messages`` (one rule for the
    spec's ``getMessages`` and the API, as in the reference, where one function
    serves both): ``order`` says which end the page starts from and ``offset``
    counts from that end. ``'desc'`` (the default): the *newest* ``limit``
    matching messages after skipping the newest ``offset``; ``'asc'``: the
    *oldest* ``limit`` after skipping the oldest ``offset``. Either page is
    returned oldest first (``limit=None``: all of them from ``offset`` on);
    ``has_more``: rows remain beyond the page, on the side paging goes to.
    ``max_depth=None`` means any depth; ``parent_id`` restricts to the direct
    children of one message. Silent rows are included only with
    ``include_silent``. ``with_total=False``: the caller reads no ``total``, so a
    store may skip counting; ``total`` and ``has_more`` then describe the window
    alone. ``with_newest``: also ``MessagePage.newest_at``, the newest
    ``created_at`` of all the thread's messages whatever the filters (any depth,
    silent or not): the engine's clock reads it with the history at every session
    start, so a store can answer both in one read.
    """

    limit: int | None = 100
    offset: int = 0
    order: Literal["asc", "desc"] = "desc"
    include_silent: bool = False
    max_depth: int | None = 0
    parent_id: str | None = None
    with_total: bool = True
    with_newest: bool = False


@dataclass(slots=True)
class MessagePage:
    """A page of messages, the total matching the filters, and whether older ones exist;
    ``newest_at`` only when the query asked ``with_newest`` (``None``: no messages)."""

    messages: list[Message]
    total: int
    has_more: bool
    newest_at: int | None = None


@dataclass(slots=True)
class LogQuery:
    """Which logs ``list_logs`` returns: the newest ``limit`` after skipping the newest
    ``offset``; ``order`` only sorts that window (``'asc'`` oldest first)."""

    limit: int | None = 100
    offset: int = 0
    order: Literal["asc", "desc"] = "asc"
    kind: LogKind | None = None


@dataclass(slots=True)
class Commit:
    """One atomic write of the engine (one transaction).

    Apply in this order: ``logs`` (upsert by id), ``messages`` (upsert by id:
    insert new rows, replace every field of existing ones), ``progress``
    (replace the session progress of the thread), ``thread`` (update the
    thread row), then, if ``drain_queue``, move every queued message of the
    thread into ``messages`` (same id, role, content, attachments, silent,
    metadata; ``status='completed'``, ``depth=0``, ``side`` 'b' for ``user`` rows and
    'a' for ``assistant`` rows, ``created_at`` greater than
    every message of the thread, increasing in queue order) and delete the
    queue rows.
    """

    messages: list[Message] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    progress: SessionProgress | None = None
    thread: ThreadUpdate | None = None
    drain_queue: bool = False


def lands_visible_reply(messages: list[Message]) -> bool:
    """Whether a commit stores a visible terminal assistant reply (spec 0.2.0's unread rule,
    ``isVisibleTerminalAssistantMessage``): a top-level, not silent assistant row that
    calls no tool and is done, with text or attachments (an answer, an attachment-only
    reply) or a failure with text. Stores move the thread's ``last_message_at`` then (as a
    user's non-empty post does), never for mid-turn tool steps, silent or sub-prompt rows."""
    return any(_visible_terminal(m) for m in messages)


def _visible_terminal(m: Message) -> bool:
    if m.role != "assistant" or m.depth != 0 or m.silent or m.tool_calls:
        return False
    has_text = bool(m.content and m.content.strip())
    if m.status == "failed":
        return has_text
    return m.status == "completed" and (has_text or bool(m.attachments))


@dataclass(slots=True)
class CommitResult:
    """What a commit reports back: the thread's stop flag *after* the commit, and drained rows."""

    stopped: bool = False
    drained: list[Message] = field(default_factory=list)


# Marks an exception that came out of ``Store.commit`` (``runtime.store.recorder`` sets it): a
# failed commit belongs to the store's contract, so tools and hooks ask it here.
COMMIT_FAILED = "_engine_commit_failed"


def is_commit_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came out of a failed commit: the session must die (and be resumed), so
    no tool or hook may swallow it as an ordinary error."""
    return bool(getattr(exc, COMMIT_FAILED, False))


@dataclass(slots=True)
class EffectRun:
    """One scheduled run of an effect (the reference's ``EffectRun``); times are ms.

    ``scheduled_at`` is when it is due, ``created_at`` when it was scheduled.
    ``args`` are the JSON arguments exactly as scheduled. A run starts
    ``pending``; a worker claims it (``processing``) and finishes it
    (``completed`` or ``failed``), or it is canceled while pending
    (``agent_canceled``/``user_canceled``, with ``completed_at``).
    """

    id: str
    thread_id: str
    name: str
    args: Any = None
    scheduled_at: int = 0
    created_at: int = 0
    status: EffectStatus = "pending"
    attempts: int = 0
    error: str | None = None
    completed_at: int | None = None
    manual_run: bool = False
    manual_run_at: int | None = None
    replayed_from: str | None = None


# --- the protocol --------------------------------------------------------------------


@runtime_checkable
class Store(Protocol):
    """Persistence for the engine. Every method is a coroutine; every call may be one round trip.

    Implementations raise ``LookupError`` for an unknown ``thread_id`` in
    methods that need the thread to exist (all but ``create_thread``).
    """

    # threads ------------------------------------------------------------------------
    async def create_thread(self, new: NewThread) -> ThreadRecord:
        """Create a thread (and its thread-scope env values) and return it.

        ``new.parent_id`` makes it a child thread (agents called as tools);
        ``origin_agent_name`` is ``new.agent_name``.
        """
        ...

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or ``None`` when it does not exist."""
        ...

    async def list_children(self, thread_id: str) -> list[ThreadRecord]:
        """The direct child threads of a thread (its subagent registry), oldest first."""
        ...

    async def set_child_status(self, thread_id: str, status: str) -> None:
        """Set a child thread's registry status (``running``, ``idle``, ``failed``, ``terminated``)."""
        ...

    async def terminate_thread(self, thread_id: str) -> None:
        """Soft-terminate a thread for good: ``terminated`` and ``stopped`` set, and a child's
        registry status ``terminated`` (idempotent)."""
        ...

    # messages -----------------------------------------------------------------------
    async def list_messages(self, thread_id: str, query: MessageQuery) -> MessagePage:
        """Messages of a thread, paged and filtered as ``MessageQuery`` describes."""
        ...

    async def get_message(self, thread_id: str, message_id: str) -> Message | None:
        """One message of the thread, or ``None``."""
        ...

    async def delete_message(self, thread_id: str, message_id: str) -> list[str]:
        """Delete a stored message with the tool results answering its calls (or a queued
        message); the ids deleted, ``[]`` when nothing was there."""
        ...

    async def queue_message(self, thread_id: str, message: QueuedMessage) -> None:
        """Append a message to the thread's queue; a running session drains it at its next step."""
        ...

    async def list_queued(self, thread_id: str) -> list[QueuedMessage]:
        """The thread's queued messages, oldest first."""
        ...

    # the one write path of a running session -------------------------------------------
    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        """Apply ``commit`` atomically (see ``Commit`` for the order) and report the stop flag.

        All or nothing: when it raises, none of it is stored.
        """
        ...

    async def decide_tool_call(
        self, thread_id: str, tool_call_id: str, decision: dict[str, Any]
    ) -> Message | None:
        """Record ``decision`` on the call waiting as ``tool_call_id`` (``runtime.core.waits``), once:
        a conditional write that only a still-waiting call takes. Returns the updated row, or
        ``None`` when no such call waits (unknown, or decided already)."""
        ...

    async def load_progress(self, thread_id: str) -> SessionProgress | None:
        """The progress last committed for the thread's current session, or ``None``.

        A finished progress (``finished=True``) means the last session ended;
        the engine then starts a new one, whose first commit replaces it.
        """
        ...

    # logs ---------------------------------------------------------------------------
    async def list_logs(self, thread_id: str, query: LogQuery) -> list[LogRecord]:
        """Logs of a thread, paged like messages."""
        ...

    async def count_llm_responses(self, thread_id: str, model: str) -> int:
        """How many responses the thread has received from model definition ``model``.

        Counts logs with ``kind='llm'``, ``model=model``, ``is_complete=True`` and
        ``error_type != 'interrupted'`` (a provider error is a response too).
        The ``test`` provider replays its script from this count.
        """
        ...

    # definitions --------------------------------------------------------------------
    async def get_agent(self, name: str) -> AgentDefinition | None:
        """The agent definition named ``name``, or ``None``."""
        ...

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        """The prompt definition named ``name``, or ``None``."""
        ...

    async def get_model(self, name: str) -> ModelDefinition | None:
        """The model definition named ``name``, or ``None``."""
        ...

    async def definition_names(self, kind: DefinitionKind) -> list[str]:
        """Names of all definitions of one kind, sorted."""
        ...

    # env ----------------------------------------------------------------------------
    async def resolve_env(
        self, thread_id: str, name: str, prompt: str | None = None
    ) -> EnvEntry | None:
        """Resolve an env value: thread → agent → prompt → user → instance, first hit wins.

        The agent is the thread's current agent (its ``tenvs``), the prompt is
        ``prompt`` (its ``env``); agent and prompt values are always ``secret``.
        ``None`` when no tier defines ``name``.
        """
        ...

    async def get_instance_env(self, name: str) -> EnvEntry | None:
        """The instance tier's value of ``name`` only (``state.instance_env``), or ``None``."""
        ...

    async def get_user(self, user_id: str) -> UserRecord | None:
        """Who a thread's owner is (``state.user()``), or ``None`` when unknown."""
        ...

    async def call_user_endpoint(
        self, user_id: str, method: str, path: str, body: Any, thread_id: str
    ) -> Any:
        """Run user ``user_id``'s user endpoint ``method path`` with ``body``, called by code
        of thread ``thread_id``, in that user's scope (``ThreadUser.call``): its answer, or
        ``runtime.core.user_scope.UserEndpointError``."""
        ...

    async def set_env(
        self, thread_id: str, name: str, value: str, type: EnvType | None = None
    ) -> None:
        """Write a thread env value; ``type=None`` keeps the existing type (``secret`` when new)."""
        ...

    async def secret_values(self, thread_id: str) -> list[tuple[str, str]]:
        """Every ``(name, value)`` of type ``secret`` the thread could resolve, for redaction.

        All tiers: the thread's secret values, its agent's and every prompt's
        definition env (always secret), its owner's and the instance's secret
        values, including values shadowed by a higher tier. The name is empty for
        values the thread's owner does not own (instance, agent, prompt): their
        marker must not name them (``runtime.core.redaction``).
        """
        ...

    # values -------------------------------------------------------------------------
    async def get_value(self, thread_id: str, key: str) -> Any:
        """The JSON value stored under ``key`` (its ``exact`` form when one was kept), or
        ``None``."""
        ...

    async def set_value(self, thread_id: str, key: str, value: Any, exact: Any = None) -> int:
        """Store a JSON value (``None`` deletes the key); returns the update time in µs.

        ``value`` is what may be shown (secrets redacted); ``exact``, when given, is the value
        as ``setValue`` got it (it held a secret): kept so that it is never in clear at rest
        (sealed), and what ``get_value``/``list_values`` return ("returned exactly as they
        were stored", spec 0.15)."""
        ...

    async def list_values(self, thread_id: str, prefix: str = "") -> dict[str, Any]:
        """All values whose key starts with ``prefix`` (each as ``get_value`` returns it)."""
        ...

    # user values (spec 0.2.0 user KV: account-wide, per user; never another user's) ---------
    async def get_user_value(self, user_id: str, key: str) -> Any:
        """A user's value exactly as set (``None`` when unset)."""
        ...

    async def set_user_value(self, user_id: str, key: str, value: Any, exact: Any = None) -> int:
        """Store a user's value (``None`` deletes) as ``set_value`` stores a thread's (``value``
        shown, ``exact`` kept sealed when it differs); the write's time in ms."""
        ...

    async def list_user_values(
        self, user_id: str, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        """A user's values whose key starts with ``prefix``, by key, exactly as set."""
        ...

    # credential grants (spec 0.2.0 user scope) ------------------------------------------
    async def grant_fetch(
        self,
        user_id: str | None,
        grant: str,
        caller: tuple[str, str],
        method: str,
        url: str,
        options: dict[str, Any],
    ) -> httpx.Response:
        """One request with credential grant ``grant`` of ``user_id`` (or the instance's)
        injected, for ``caller`` (``("tools", name)``). ``PermissionError`` (with the reason)
        when the grant does not allow ``caller``, is not for the URL's origin, or the egress
        policy refuses the address. The response's ``request`` never carries the secret."""
        ...

    # files --------------------------------------------------------------------------
    # Paths are already normalized (``runtime.store.files.normalize_path``). Files above the
    # store's chunk size (``runtime.store.files.CHUNK_SIZE`` unless configured) are stored and
    # streamed in chunks of exactly that size (the last one shorter). Errors:
    # ``IsADirectoryError`` / ``NotADirectoryError`` when a path has the other kind,
    # ``runtime.store.files.DirectoryNotEmptyError``, ``runtime.store.files.FileTooLargeError``.
    async def write_file(
        self,
        thread_id: str,
        path: str,
        data: FileSource,
        mime_type: str,
        *,
        metadata: dict[str, Any] | None = None,
        width: int | None = None,
        height: int | None = None,
        thumbnail: bytes | None = None,
    ) -> FileRecord:
        """Create or replace a file (parent directories are created); returns its record.

        ``data`` is bytes or an async iterator of byte pieces of any size; an iterator
        is consumed piece by piece and never held whole (the store keeps at most one
        chunk in memory). ``thumbnail`` is stored as given (JPEG bytes). Nothing is
        kept when the write fails; the previous content stays.
        """
        ...

    async def read_file(self, thread_id: str, path: str) -> bytes | None:
        """A file's bytes, or ``None`` when missing or a directory."""
        ...

    async def read_file_stream(self, thread_id: str, path: str) -> AsyncIterator[FileChunk] | None:
        """The file's content as ``FileChunk``s of the chunk size, or ``None`` when missing or
        a directory. Only one chunk is read at a time; an empty file is one empty chunk."""
        ...

    async def stat_file(self, thread_id: str, path: str) -> FileRecord | None:
        """A file's or directory's record, or ``None``."""
        ...

    async def list_dir(self, thread_id: str, path: str) -> list[FileRecord]:
        """Direct entries of a directory (``'/'`` is the root), sorted by path."""
        ...

    async def delete_file(self, thread_id: str, path: str) -> bool:
        """Delete a file or an empty directory; ``False`` when nothing was there."""
        ...

    async def remove_dir(self, thread_id: str, path: str) -> bool:
        """Delete an empty directory; ``False`` when nothing was there.

        ``NotADirectoryError`` for a file, ``DirectoryNotEmptyError`` when it has entries.
        """
        ...

    async def move_file(self, thread_id: str, src: str, dst: str) -> FileRecord:
        """Move a file or a directory (with its entries) to ``dst``; its record at ``dst``.

        Parents of ``dst`` are created. ``FileNotFoundError`` when ``src`` is missing,
        ``FileExistsError`` when ``dst`` exists (nothing is replaced), ``FilePathError``
        for the root or a directory into itself (``runtime.store.files.check_move``),
        ``NotADirectoryError`` when a parent of ``dst`` is a file.
        """
        ...

    async def make_dir(self, thread_id: str, path: str) -> FileRecord:
        """Create a directory (idempotent) and return its record.

        ``NotADirectoryError`` when the path or one of its parents is a file.
        """
        ...

    async def file_stats(self, thread_id: str) -> FileStats:
        """How many files and directories the thread has and the files' total size."""
        ...

    async def grep_files(
        self,
        thread_id: str,
        pattern: str,
        *,
        path: str = "/",
        ignore_case: bool = False,
        limit: int = 100,
    ) -> list[GrepResult]:
        """Lines of text files under ``path`` matching the regular expression ``pattern``.

        Text files are ``runtime.store.files.is_text_mime`` types, decoded as UTF-8; lines are
        numbered from 1 and cut at ``GREP_LINE_MAX`` characters. Files in path order; at
        most ``limit`` matching lines in all. ``ValueError`` for an invalid regex.
        """
        ...

    async def find_files(
        self, thread_id: str, pattern: str, *, type: FileType = "all", limit: int = 1000
    ) -> list[FileRecord]:
        """Entries whose path matches the glob ``pattern`` (``runtime.store.files.glob_match``),
        of ``type``, in path order, at most ``limit``."""
        ...

    async def file_thumbnail(self, thread_id: str, path: str) -> bytes | None:
        """The stored thumbnail (JPEG) of a file, or ``None``."""
        ...

    # effects ------------------------------------------------------------------------
    async def schedule_effect(self, run: EffectRun) -> tuple[EffectRun, bool]:
        """Store a ``pending`` run (id, name, args and ``scheduled_at`` chosen by the engine).

        Idempotent on ``run.id``: when a run with that id exists, nothing is
        written and ``(existing, False)`` is returned; else ``(stored, True)``.
        The store sets ``created_at``. Durable when the call returns.
        """
        ...

    async def list_effects(self, thread_id: str, name: str | None = None) -> list[EffectRun]:
        """The thread's ``pending`` runs (of effect ``name`` if given), by ``scheduled_at``
        then ``created_at``."""
        ...

    async def cancel_effect(
        self, thread_id: str, effect_id: str, by: CanceledBy
    ) -> EffectRun | None:
        """Turn a ``pending`` run of the thread into ``<by>_canceled`` (with ``completed_at``).

        Returns the changed run, or ``None`` when no pending run of the thread
        has that id (unknown, already running, finished or canceled).
        """
        ...
