"""An in-memory ``Store``: fast unit tests, the bench, and a second implementation
that keeps the protocol honest. Rows are copied on the way in and out, as a
database would, so the engine cannot rely on sharing objects with its store.
"""

from __future__ import annotations

import bisect
import copy
import posixpath
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from runtime.core import waits
from runtime.core.messages import Message, Side
from runtime.core.progress import SessionProgress
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition
from runtime.core.user_scope import UserEndpointError
from runtime.store import files as fs
from runtime.store.protocol import (
    CanceledBy,
    Commit,
    CommitResult,
    DefinitionKind,
    EffectRun,
    EnvEntry,
    EnvType,
    FileChunk,
    FileRecord,
    FileSource,
    FileStats,
    FileType,
    GrepResult,
    LogQuery,
    LogRecord,
    MessagePage,
    MessageQuery,
    NewThread,
    QueuedMessage,
    ThreadRecord,
    ThreadUpdate,
    UserRecord,
    UserValueEntry,
    UserValuePage,
)

Definition = AgentDefinition | PromptDefinition | ModelDefinition


@dataclass(slots=True)
class _Stored:
    """A file-system entry: its record, bytes (``None`` for a directory) and thumbnail."""

    record: FileRecord
    data: bytes | None = None
    thumbnail: bytes | None = None


class _ThreadData:
    """Everything stored for one thread."""

    def __init__(self, record: ThreadRecord) -> None:
        self.record = record
        self.messages: dict[str, Message] = {}
        self.order: list[tuple[int, str]] = []  # (created_at, id), sorted
        self.logs: dict[str, LogRecord] = {}
        self.queue: list[QueuedMessage] = []
        # The last committed progress as JSON, as the Django store keeps it: a copy in one
        # call each way (``model_copy(deep=True)`` walked it in Python, issue #39).
        self.progress: str | None = None
        self.env: dict[str, tuple[str, EnvType]] = {}
        # key → (the value as shown, its update time, the exact value when it held a secret)
        self.values: dict[str, tuple[Any, int, Any]] = {}
        self.files: dict[str, _Stored] = {}  # path → entry (directories hold no data)


class MemoryStore:
    """The store protocol over dicts. Extra helpers (not in the protocol) set up tests."""

    def __init__(self) -> None:
        self._threads: dict[str, _ThreadData] = {}
        self._agents: dict[str, AgentDefinition] = {}
        self._prompts: dict[str, PromptDefinition] = {}
        self._models: dict[str, ModelDefinition] = {}
        self.user_env: dict[str, dict[str, tuple[str, EnvType]]] = defaultdict(dict)
        self.instance_env: dict[str, tuple[str, EnvType]] = {}
        # user id → key → (shown value, updated_at ms, exact form or None)
        self.user_values: dict[str, dict[str, tuple[Any, int, Any]]] = defaultdict(dict)
        self.effects: dict[str, EffectRun] = {}  # every run, by id (tests inspect it)
        # Accounts ``get_user`` knows in full (tests put them here); others are names only.
        self.users: dict[str, UserRecord] = {}

    # --- helpers for tests (not part of the protocol) ---------------------------------

    def add(self, *definitions: Definition) -> MemoryStore:
        """Register agent, prompt or model definitions (replacing same-named ones)."""
        for item in definitions:
            if isinstance(item, AgentDefinition):
                self._agents[item.name] = item
            elif isinstance(item, PromptDefinition):
                self._prompts[item.name] = item
            else:
                self._models[item.name] = item
        return self

    def set_stopped(self, thread_id: str, stopped: bool = True) -> None:
        """Set the persistent stop flag, as ``POST …/stop`` does."""
        self._data(thread_id).record.stopped = stopped

    def all_messages(self, thread_id: str) -> list[Message]:
        """Every message of a thread (any depth, silent included), in order."""
        data = self._data(thread_id)
        return [_copied(data.messages[i]) for _, i in data.order]

    def queued(self, thread_id: str) -> list[QueuedMessage]:
        """The thread's queue rows, oldest first."""
        return list(self._data(thread_id).queue)

    def thread_ids(self) -> list[str]:
        """Ids of all threads."""
        return list(self._threads)

    # --- threads -----------------------------------------------------------------------

    async def create_thread(self, new: NewThread) -> ThreadRecord:
        """Create a thread and its thread-scope env."""
        record = ThreadRecord(
            id=new.id,
            agent_name=new.agent_name,
            origin_agent_name=new.agent_name,
            user_id=new.user_id,
            parent_id=new.parent_id,
            tags=list(new.tags),
            created_at=new.created_at or time.time_ns() // 1000,
            display_name=new.display_name,
            relationship=new.relationship,
            child_status=new.child_status,
            subagent=copy.deepcopy(new.subagent),
        )
        data = _ThreadData(record)
        data.env = {k: (v, "secret") for k, v in new.env.items()}
        self._threads[new.id] = data
        return copy.deepcopy(record)

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread or ``None``."""
        data = self._threads.get(thread_id)
        return copy.deepcopy(data.record) if data else None

    async def list_children(self, thread_id: str) -> list[ThreadRecord]:
        """Child threads, oldest first."""
        self._data(thread_id)
        children = [d.record for d in self._threads.values() if d.record.parent_id == thread_id]
        return [copy.deepcopy(r) for r in sorted(children, key=lambda r: r.created_at)]

    async def set_child_status(self, thread_id: str, status: str) -> None:
        """Set the registry status."""
        self._data(thread_id).record.child_status = status

    async def terminate_thread(self, thread_id: str) -> None:
        """Terminated and stopped; a child's status ``terminated``."""
        record = self._data(thread_id).record
        record.terminated = record.stopped = True
        if record.parent_id is not None:
            record.child_status = "terminated"

    # --- messages ----------------------------------------------------------------------

    async def list_messages(self, thread_id: str, query: MessageQuery) -> MessagePage:
        """A page of matching messages (``MessageQuery`` says which), oldest first."""
        data = self._data(thread_id)
        matching = [data.messages[i] for _, i in data.order if _matches(data.messages[i], query)]
        total = len(matching)
        if query.order == "desc":  # from the newest end
            end = max(total - query.offset, 0)
            start = 0 if query.limit is None else max(0, end - query.limit)
        else:  # from the oldest end
            start = min(query.offset, total)
            end = total if query.limit is None else min(total, start + query.limit)
        window = [_copied(m) for m in matching[start:end]]
        has_more = query.offset + len(window) < total
        newest = None
        if query.with_newest:
            newest = max((m.created_at for m in data.messages.values()), default=None)
        return MessagePage(messages=window, total=total, has_more=has_more, newest_at=newest)

    async def get_message(self, thread_id: str, message_id: str) -> Message | None:
        """One message or ``None``."""
        found = self._data(thread_id).messages.get(message_id)
        return _copied(found) if found else None

    async def delete_message(self, thread_id: str, message_id: str) -> list[str]:
        """Delete a message with its tool results, or a queued message; the ids deleted."""
        data = self._data(thread_id)
        queued = [q for q in data.queue if q.id == message_id]
        if queued:
            data.queue = [q for q in data.queue if q.id != message_id]
            return [message_id]
        found = data.messages.pop(message_id, None)
        if found is None:
            return []
        calls = {c["id"] for c in found.tool_calls or []}
        answers = [m.id for m in data.messages.values() if m.tool_call_id in calls]
        for answer in answers:
            del data.messages[answer]
        gone = {message_id, *answers}
        data.order = [(t, i) for t, i in data.order if i not in gone]
        return [message_id, *answers]

    async def get_instance_env(self, name: str) -> EnvEntry | None:
        """The instance tier only."""
        if name not in self.instance_env:
            return None
        value, kind = self.instance_env[name]
        return EnvEntry(value, kind, "instance")

    async def get_user(self, user_id: str) -> UserRecord | None:
        """A user put in ``users``, or one known only by name (the id is the username)."""
        known = self.users.get(user_id)
        if known is not None:
            return copy.deepcopy(known)
        return UserRecord(id=user_id, username=user_id, display_name=user_id)

    async def call_user_endpoint(
        self, user_id: str, method: str, path: str, body: Any, thread_id: str
    ) -> Any:
        """User endpoints are served by the Django store only (``agents_app.services.users``)."""
        raise UserEndpointError(404, f"No user endpoint {method} /{path.lstrip('/')} here.")

    async def queue_message(self, thread_id: str, message: QueuedMessage) -> None:
        """Append to the queue."""
        queued = copy.deepcopy(message)
        queued.created_at = queued.created_at or time.time_ns() // 1000
        self._data(thread_id).queue.append(queued)

    async def list_queued(self, thread_id: str) -> list[QueuedMessage]:
        """The queue, oldest first."""
        return copy.deepcopy(self._data(thread_id).queue)

    async def decide_tool_call(
        self, thread_id: str, tool_call_id: str, decision: dict[str, Any]
    ) -> Message | None:
        """Record a decision on a waiting call (one event loop: check and write are atomic)."""
        data = self._data(thread_id)
        for message in data.messages.values():
            if message.role == "tool" and message.tool_call_id == tool_call_id:
                decided = waits.decide(message, decision)
                if decided is not None:
                    self._put(data, decided)
                    return _copied(decided)
        return None

    # --- commit ------------------------------------------------------------------------

    async def commit(self, thread_id: str, commit: Commit) -> CommitResult:
        """Apply logs, messages, progress, thread changes, then drain the queue if asked."""
        data = self._data(thread_id)
        for log in commit.logs:
            data.logs[log.id] = copy.copy(log)  # the engine replaces logs, never mutates them
        for message in commit.messages:
            self._put(data, _copied(message))
        if commit.progress is not None:
            data.progress = commit.progress.model_dump_json()
        if commit.thread is not None:
            _apply_thread_update(data.record, commit.thread)
        drained = self._drain(data) if commit.drain_queue else []
        return CommitResult(stopped=data.record.stopped, drained=drained)

    async def load_progress(self, thread_id: str) -> SessionProgress | None:
        """The last committed progress."""
        progress = self._data(thread_id).progress
        return SessionProgress.model_validate_json(progress) if progress else None

    # --- logs --------------------------------------------------------------------------

    async def list_logs(self, thread_id: str, query: LogQuery) -> list[LogRecord]:
        """Newest window of logs, sorted as asked."""
        logs = sorted(self._data(thread_id).logs.values(), key=lambda log: log.created_at)
        logs = [log for log in logs if query.kind is None or log.kind == query.kind]
        end = len(logs) - query.offset
        start = 0 if query.limit is None else max(0, end - query.limit)
        window = [copy.deepcopy(log) for log in logs[start : max(end, 0)]]
        return window[::-1] if query.order == "desc" else window

    async def count_llm_responses(self, thread_id: str, model: str) -> int:
        """Completed, non-interrupted LLM logs of ``model``."""
        return sum(
            1
            for log in self._data(thread_id).logs.values()
            if log.kind == "llm"
            and log.model == model
            and log.is_complete
            and log.error_type != "interrupted"
        )

    # --- definitions -------------------------------------------------------------------

    async def get_agent(self, name: str) -> AgentDefinition | None:
        """Agent definition or ``None``."""
        return self._agents.get(name)

    async def get_prompt(self, name: str) -> PromptDefinition | None:
        """Prompt definition or ``None``."""
        return self._prompts.get(name)

    async def get_model(self, name: str) -> ModelDefinition | None:
        """Model definition or ``None``."""
        return self._models.get(name)

    async def definition_names(self, kind: DefinitionKind) -> list[str]:
        """Sorted names of one kind."""
        tables: dict[str, dict[str, Any]] = {
            "agent": self._agents,
            "prompt": self._prompts,
            "model": self._models,
        }
        return sorted(tables[kind])

    # --- env ---------------------------------------------------------------------------

    async def resolve_env(
        self, thread_id: str, name: str, prompt: str | None = None
    ) -> EnvEntry | None:
        """thread → agent → prompt → user → instance."""
        data = self._data(thread_id)
        if name in data.env:
            value, kind = data.env[name]
            return EnvEntry(value, kind, "thread")
        found = self._definition_env(data.record.agent_name, prompt, name)
        if found is not None:
            return found
        user = self.user_env.get(data.record.user_id or "", {})
        if name in user:
            return EnvEntry(user[name][0], user[name][1], "user")
        if name in self.instance_env:
            value, kind = self.instance_env[name]
            return EnvEntry(value, kind, "instance")
        return None

    def _definition_env(self, agent_name: str, prompt: str | None, name: str) -> EnvEntry | None:
        agent = self._agents.get(agent_name)
        if agent and agent.env and agent.env.get(name) is not None:
            return EnvEntry(str(agent.env[name]), "secret", "agent")
        definition = self._prompts.get(prompt or (agent.main_prompt() if agent else ""))
        if definition and definition.env and definition.env.get(name) is not None:
            return EnvEntry(str(definition.env[name]), "secret", "prompt")
        return None

    async def secret_values(self, thread_id: str) -> list[tuple[str, str]]:
        """Every secret the thread could resolve (all tiers, shadowed ones too); values the
        thread's owner does not own (instance, agent, prompt) without their name."""
        data = self._data(thread_id)
        user = self.user_env.get(data.record.user_id or "", {})
        pairs = [
            (name if env is not self.instance_env else "", value)
            for env in (data.env, user, self.instance_env)
            for name, (value, kind) in env.items()
            if kind == "secret"
        ]
        envs = [a.env for a in self._agents.values()] + [p.env for p in self._prompts.values()]
        for env in envs:
            pairs += [("", str(value)) for value in (env or {}).values() if value is not None]
        return pairs

    async def set_env(
        self, thread_id: str, name: str, value: str, type: EnvType | None = None
    ) -> None:
        """Write thread env, keeping the type unless given."""
        env = self._data(thread_id).env
        kind: EnvType = type or (env[name][1] if name in env else "secret")
        env[name] = (value, kind)

    # --- values ------------------------------------------------------------------------

    async def get_value(self, thread_id: str, key: str) -> Any:
        """Stored JSON value or ``None``."""
        found = self._data(thread_id).values.get(key)
        return _exact(found) if found else None

    async def set_value(self, thread_id: str, key: str, value: Any, exact: Any = None) -> int:
        """Store or delete a value (with its exact form, when it held a secret)."""
        values = self._data(thread_id).values
        updated_at = time.time_ns() // 1000
        if value is None:
            values.pop(key, None)
        else:
            values[key] = (copy.deepcopy(value), updated_at, copy.deepcopy(exact))
        return updated_at

    async def list_values(self, thread_id: str, prefix: str = "") -> dict[str, Any]:
        """Values by key prefix."""
        values = self._data(thread_id).values
        return {k: _exact(v) for k, v in sorted(values.items()) if k.startswith(prefix)}

    # --- user values -------------------------------------------------------------------

    async def get_user_value(self, user_id: str, key: str) -> Any:
        """A user's value exactly as set, or ``None``."""
        found = self.user_values[user_id].get(key)
        return _exact(found) if found else None

    async def set_user_value(self, user_id: str, key: str, value: Any, exact: Any = None) -> int:
        """Store or delete a user's value."""
        values = self.user_values[user_id]
        updated_at = time.time_ns() // 1_000_000
        if value is None:
            values.pop(key, None)
        else:
            values[key] = (copy.deepcopy(value), updated_at, copy.deepcopy(exact))
        return updated_at

    async def list_user_values(
        self, user_id: str, prefix: str = "", limit: int = 100, offset: int = 0
    ) -> UserValuePage:
        """A user's values by key prefix, a page of them."""
        found = sorted((k, v) for k, v in self.user_values[user_id].items() if k.startswith(prefix))
        entries = [
            UserValueEntry(key, _exact(stored), stored[1])
            for key, stored in found[offset : offset + limit]
        ]
        return UserValuePage(entries, len(found))

    async def grant_fetch(
        self,
        user_id: str | None,
        grant: str,
        caller: tuple[str, str],
        method: str,
        url: str,
        options: dict[str, Any],
    ) -> httpx.Response:
        """No credential grants live here: every use is refused, as an unknown grant is."""
        raise PermissionError(f"No credential grant named {grant!r} is available here.")

    # --- files -------------------------------------------------------------------------

    #: Chunk size and size limit (class-wide; tests may set them on an instance).
    chunk_size: int = fs.CHUNK_SIZE
    max_file_size: int = fs.MAX_FILE_SIZE

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
        """Create or replace a file; parent directories are created."""
        files = self._data(thread_id).files
        if path == fs.ROOT:
            raise IsADirectoryError("Is a directory: /")
        if isinstance(data, bytes):
            if len(data) > self.max_file_size:
                raise fs.FileTooLargeError(
                    f"File is larger than the limit of {self.max_file_size} bytes."
                )
            content = bytes(data)
        else:
            pieces = [p async for p in fs.arechunk(data, self.chunk_size, self.max_file_size)]
            content = b"".join(pieces)
        old = files.get(path)
        if old is not None and old.data is None:
            raise IsADirectoryError(f"Is a directory: {path}")
        self._ensure_dirs(files, posixpath.dirname(path))
        chunks = fs.chunk_count(len(content), self.chunk_size)
        chunked = len(content) > self.chunk_size
        record = FileRecord(
            path=path,
            name=posixpath.basename(path),
            mime_type=mime_type,
            size=len(content),
            metadata=dict(metadata or {}),
            width=width,
            height=height,
            created_at=time.time_ns() // 1_000_000,
            is_chunked=chunked,
            chunk_count=chunks if chunked else 0,
            has_thumbnail=thumbnail is not None,
        )
        files[path] = _Stored(record, content, thumbnail)
        return copy.deepcopy(record)

    async def read_file(self, thread_id: str, path: str) -> bytes | None:
        """File bytes or ``None``."""
        found = self._data(thread_id).files.get(path)
        return found.data if found else None

    async def read_file_stream(self, thread_id: str, path: str) -> AsyncIterator[FileChunk] | None:
        """The file in ``chunk_size`` slices."""
        data = await self.read_file(thread_id, path)
        return None if data is None else self._slices(data)

    async def _slices(self, data: bytes) -> AsyncIterator[FileChunk]:
        total = fs.chunk_count(len(data), self.chunk_size)
        for index in range(total):
            piece = data[index * self.chunk_size : (index + 1) * self.chunk_size]
            yield FileChunk(piece, index, total, index == total - 1)

    async def stat_file(self, thread_id: str, path: str) -> FileRecord | None:
        """File record or ``None``."""
        files = self._data(thread_id).files
        if path == fs.ROOT:
            return await self._root()
        found = files.get(path)
        return copy.deepcopy(found.record) if found else None

    async def list_dir(self, thread_id: str, path: str) -> list[FileRecord]:
        """Direct children of ``path``."""
        files = self._data(thread_id).files
        return [
            copy.deepcopy(entry.record)
            for p, entry in sorted(files.items())
            if posixpath.dirname(p) == path and p != path
        ]

    async def delete_file(self, thread_id: str, path: str) -> bool:
        """Delete a file or an empty directory."""
        files = self._data(thread_id).files
        if path not in files:
            return False
        if any(posixpath.dirname(p) == path for p in files if p != path):
            raise fs.DirectoryNotEmptyError(f"Directory not empty: {path}")
        del files[path]
        return True

    async def remove_dir(self, thread_id: str, path: str) -> bool:
        """Delete an empty directory."""
        found = self._data(thread_id).files.get(path)
        if found is not None and found.data is not None:
            raise NotADirectoryError(f"Not a directory: {path}")
        return await self.delete_file(thread_id, path)

    async def move_file(self, thread_id: str, src: str, dst: str) -> FileRecord:
        """Move a file or directory (and its entries)."""
        fs.check_move(src, dst)
        files = self._data(thread_id).files
        if src not in files:
            raise FileNotFoundError(f"No such file or directory: {src}")
        if dst in files:
            raise FileExistsError(f"Destination already exists: {dst}")
        self._ensure_dirs(files, posixpath.dirname(dst))
        for path in [p for p in files if fs.is_under(p, src)]:
            entry = files.pop(path)
            entry.record.path = fs.moved_path(path, src, dst)
            entry.record.name = posixpath.basename(entry.record.path)
            files[entry.record.path] = entry
        return copy.deepcopy(files[dst].record)

    async def make_dir(self, thread_id: str, path: str) -> FileRecord:
        """Create a directory (and its parents)."""
        files = self._data(thread_id).files
        self._ensure_dirs(files, path)
        return copy.deepcopy(files[path].record) if path in files else await self._root()

    async def file_stats(self, thread_id: str) -> FileStats:
        """Counts and total size."""
        entries = self._data(thread_id).files.values()
        stats = FileStats()
        for entry in entries:
            if entry.data is None:
                stats.directory_count += 1
            else:
                stats.file_count += 1
                stats.total_size += len(entry.data)
        return stats

    async def grep_files(
        self,
        thread_id: str,
        pattern: str,
        *,
        path: str = "/",
        ignore_case: bool = False,
        limit: int = 100,
    ) -> list[GrepResult]:
        """Regex over text files."""
        regex = fs.compile_grep(pattern, ignore_case=ignore_case)
        files = self._data(thread_id).files
        results: list[GrepResult] = []
        left = limit
        for p, entry in sorted(files.items()):
            if left <= 0:
                break
            if entry.data is None or not fs.is_under(p, path):
                continue
            if not fs.is_text_mime(entry.record.mime_type):
                continue
            size = self.chunk_size
            pieces = (entry.data[i : i + size] for i in range(0, len(entry.data), size))
            hits = fs.grep_chunks(regex, pieces, left)
            if hits:
                results.append(GrepResult(p, hits))
                left -= len(hits)
        return results

    async def find_files(
        self, thread_id: str, pattern: str, *, type: FileType = "all", limit: int = 1000
    ) -> list[FileRecord]:
        """Glob over paths."""
        files = self._data(thread_id).files
        found = [
            copy.deepcopy(entry.record)
            for p, entry in sorted(files.items())
            if fs.type_matches(entry.record.is_directory, type) and fs.glob_match(pattern, p)
        ]
        return found[:limit]

    async def file_thumbnail(self, thread_id: str, path: str) -> bytes | None:
        """Stored thumbnail bytes."""
        found = self._data(thread_id).files.get(path)
        return found.thumbnail if found else None

    # --- effects -----------------------------------------------------------------------

    async def schedule_effect(self, run: EffectRun) -> tuple[EffectRun, bool]:
        """Insert a pending run unless its id exists."""
        self._data(run.thread_id)
        if run.id in self.effects:
            return copy.deepcopy(self.effects[run.id]), False
        stored = copy.deepcopy(run)
        stored.status, stored.created_at = "pending", time.time_ns() // 1_000_000
        self.effects[run.id] = stored
        return copy.deepcopy(stored), True

    async def list_effects(self, thread_id: str, name: str | None = None) -> list[EffectRun]:
        """Pending runs of the thread, by due time."""
        self._data(thread_id)
        runs = [
            r
            for r in self.effects.values()
            if r.thread_id == thread_id and r.status == "pending" and name in (None, r.name)
        ]
        runs.sort(key=lambda r: (r.scheduled_at, r.created_at))
        return [copy.deepcopy(r) for r in runs]

    async def cancel_effect(
        self, thread_id: str, effect_id: str, by: CanceledBy
    ) -> EffectRun | None:
        """Pending → ``<by>_canceled``."""
        self._data(thread_id)
        run = self.effects.get(effect_id)
        if run is None or run.thread_id != thread_id or run.status != "pending":
            return None
        run.status = "agent_canceled" if by == "agent" else "user_canceled"
        run.completed_at = time.time_ns() // 1_000_000
        return copy.deepcopy(run)

    # --- internals ---------------------------------------------------------------------

    def _data(self, thread_id: str) -> _ThreadData:
        try:
            return self._threads[thread_id]
        except KeyError:
            raise LookupError(f"Thread not found: {thread_id}") from None

    def _put(self, data: _ThreadData, message: Message) -> None:
        old = data.messages.get(message.id)
        if old is not None and old.created_at != message.created_at:
            data.order.remove((old.created_at, old.id))
            old = None
        data.messages[message.id] = message
        if old is None:
            bisect.insort(data.order, (message.created_at, message.id))

    def _drain(self, data: _ThreadData) -> list[Message]:
        drained: list[Message] = []
        last = data.order[-1][0] if data.order else 0
        for row in data.queue:
            last = max(last + 1, row.created_at)
            message = _from_queue(row, last)
            self._put(data, message)
            drained.append(_copied(message))
        data.queue.clear()
        return drained

    def _ensure_dirs(self, files: dict[str, _Stored], path: str) -> None:
        missing: list[str] = []
        while path not in ("/", ""):
            found = files.get(path)
            if found is not None:
                if found.data is not None:
                    raise NotADirectoryError(f"Not a directory: {path}")
                break
            missing.append(path)
            path = posixpath.dirname(path)
        for directory in reversed(missing):
            record = FileRecord(
                path=directory,
                name=posixpath.basename(directory),
                mime_type=fs.DIRECTORY_MIME,
                is_directory=True,
                created_at=time.time_ns() // 1_000_000,
            )
            files[directory] = _Stored(record)

    async def _root(self) -> FileRecord:
        return FileRecord(path="/", name="", mime_type="inode/directory", is_directory=True)


# The fields of a message that hold something mutable; the others are strings, numbers,
# booleans or None, which a copy may share.
_CONTAINERS = ("tool_calls", "metadata", "attachments", "reasoning_details")


def _copied(message: Message) -> Message:
    """A copy of ``message`` sharing nothing mutable with it, as a database row would be.
    ``copy.deepcopy`` walked every field and key of every row (a fifth of the engine bench's
    run over this store, issue #39): only the containers need a deep copy."""
    changes = {}
    for name in _CONTAINERS:
        value = getattr(message, name)
        if value:
            changes[name] = copy.deepcopy(value)
        elif value is not None:
            changes[name] = type(value)()
    return message.copy(**changes)


def _matches(message: Message, query: MessageQuery) -> bool:
    if message.silent and not query.include_silent:
        return False
    if query.max_depth is not None and message.depth > query.max_depth:
        return False
    return query.parent_id is None or message.parent_id == query.parent_id


def _apply_thread_update(record: ThreadRecord, update: ThreadUpdate) -> None:
    if update.agent_name is not None:
        record.agent_name = update.agent_name
    if update.stopped is not None:
        record.stopped = update.stopped
    if update.execution_state is not None:
        record.execution_state = update.execution_state.model_copy(deep=True)


def _from_queue(row: QueuedMessage, created_at: int) -> Message:
    side: Side | None = "a" if row.role == "assistant" else ("b" if row.role == "user" else None)
    return Message(
        id=row.id,
        role=row.role,
        content=row.content,
        attachments=copy.deepcopy(row.attachments),
        silent=row.silent,
        metadata=copy.deepcopy(row.metadata),
        created_at=created_at,
        side=side,
        subagent_id=row.metadata.get("subagent_id"),
    )


def _exact(stored: tuple[Any, int, Any]) -> Any:
    """A stored value as ``get_value`` returns it: exact when an exact form was kept."""
    shown, _, exact = stored
    return copy.deepcopy(shown if exact is None else exact)
