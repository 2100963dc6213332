"""Conversations as trees (issue #41): edit a message, regenerate a reply, move between
versions, fork a thread.

Every top-level message records the message it follows (``Message.follows``; a database
trigger fills it in for writers that leave it empty, ``agents_app.db.message_counts``), so a
thread is a tree whose one **active path** is the set of rows not marked ``abandoned``.
Every branch-unaware reader (the engine's history, the messages page) filters on that
flag, so it sees one linear conversation; new messages are appended to the active path's
leaf (its newest row). A branch operation only moves the flag: nothing is ever rewritten,
and nothing is deleted but with the thread.

What the branches of a thread share (docs/api.md, "Branches"): the thread's files, values,
subagents and scheduled effects are state of the thread, not of a turn. The model reads
only the active path's messages; the rest is shared as the reference's thread state is.
A fork is the way to start apart: it copies the path and the files its messages refer to,
and nothing else.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from agents_app import selectors, wire
from agents_app.base.errors import Conflict, Invalid, Locked, NotFound
from agents_app.broadcast.events import send_registry, send_thread_frames
from agents_app.db.raw_sql import db_uuid, text_uuid
from agents_app.models import Message, QueuedMessage, Thread, ThreadFile
from agents_app.services.access import limits
from agents_app.services.env.redaction import Redactor
from agents_app.services.sessions import lifecycle as sessions
from agents_app.services.threads.changes import preview_of
from agents_app.services.threads.files import blobs_of, chunks, file_write
from agents_app.services.threads.idempotency import IdempotencyRequest, idempotent_replay
from agents_app.services.threads.messages import NewAttachment, Posted, message_post
from runtime.store.events import event

# The frame every socket of the thread gets when its active path changed.
ACTIVE_PATH_EVENT = "active_path_changed"
RUNNING = (
    "A session is running on this thread: wait for the reply to finish (or stop it) "
    "before editing, regenerating or switching versions."
)
QUEUED = (
    "Messages are waiting in this thread's queue: continue or stop the thread before "
    "editing, regenerating or switching versions."
)
MESSAGE_NOT_FOUND = "Message not found"
UNFINISHED_STEP = (
    "That step's tool calls have not finished: fork from it once they have, or from the "
    "message before it."
)


@dataclass(frozen=True)
class Node:
    """What the tree needs of one stored message."""

    id: uuid.UUID
    follows: uuid.UUID | None
    parent: uuid.UUID | None  # a sub-prompt row's tool-result row (depth > 0)
    depth: int
    created_at: int
    abandoned: bool
    role: str
    status: str | None


class Tree:
    """A thread's messages as a tree: top-level rows by ``follows``, deeper rows under the
    tool-result row they belong to (``parent``)."""

    def __init__(self, nodes: Iterable[Node]) -> None:
        self.nodes = {n.id: n for n in nodes}
        self.children: dict[uuid.UUID | None, list[Node]] = defaultdict(list)
        self.nested: dict[uuid.UUID, list[Node]] = defaultdict(list)
        for node in sorted(self.nodes.values(), key=lambda n: n.created_at):
            if node.depth == 0:
                self.children[node.follows].append(node)
            elif node.parent is not None:
                self.nested[node.parent].append(node)

    def top(self, message_id: Any) -> Node:
        """The top-level message ``message_id`` of this thread; ``NotFound`` otherwise."""
        try:
            node = self.nodes.get(uuid.UUID(str(message_id)))
        except ValueError:
            node = None
        if node is None:
            raise NotFound(MESSAGE_NOT_FOUND)
        if node.depth != 0:
            raise Invalid("Only top-level messages have versions (this one is a sub-prompt's)")
        return node

    def ancestors(self, node: Node | None) -> list[Node]:
        """The path from the root down to ``node`` (included; empty for ``None``)."""
        path: list[Node] = []
        seen: set[uuid.UUID] = set()
        while node is not None and node.id not in seen:
            seen.add(node.id)
            path.append(node)
            node = self.nodes.get(node.follows) if node.follows else None
        return path[::-1]

    def newest_descendant(self, node: Node) -> list[Node]:
        """The path below ``node`` down to the newest message of its subtree."""
        below: dict[uuid.UUID, Node] = {}  # each descendant -> the child of its parent
        stack, newest = [node], node
        while stack:
            for child in self.children.get(stack.pop().id, []):
                if child.id in below:
                    continue
                below[child.id] = child
                stack.append(child)
                if child.created_at > newest.created_at:
                    newest = child
        return self.ancestors(newest)[len(self.ancestors(node)) :]

    def with_nested(self, path: Iterable[Node]) -> set[uuid.UUID]:
        """The ids of ``path`` and of every deeper row hanging under them."""
        ids: set[uuid.UUID] = set()
        stack = list(path)
        while stack:
            node = stack.pop()
            ids.add(node.id)
            stack.extend(self.nested.get(node.id, []))
        return ids

    def siblings(self, node: Node) -> list[Node]:
        return self.children.get(node.follows, [node]) if node.depth == 0 else [node]

    def active_path(self) -> list[Node]:
        return sorted(
            (n for n in self.nodes.values() if n.depth == 0 and not n.abandoned),
            key=lambda n: n.created_at,
        )


_NODE_FIELDS = (
    "id",
    "follows",
    "parent_id",
    "depth",
    "created_at",
    "abandoned",
    "role",
    "status",
)


def load_tree(thread_id: Any) -> Tree:
    rows = Message.objects.filter(thread_id=thread_id).values_list(*_NODE_FIELDS)
    return Tree(Node(*row) for row in rows)


def branch_info(tree: Tree, node: Node) -> dict[str, Any]:
    """``{index, count, sibling_ids, follows}``: ``node`` among the messages following the
    same one (``follows``, ``None`` for the first message)."""
    siblings = tree.siblings(node)
    ids = [str(s.id) for s in siblings]
    follows = str(node.follows) if node.depth == 0 and node.follows else None
    return {
        "index": ids.index(str(node.id)),
        "count": len(ids),
        "sibling_ids": ids,
        "follows": follows,
    }


# --- refusals ------------------------------------------------------------------------------


def _locked_idle(thread: Thread) -> Thread:
    """The thread row locked, when no session is open on it and nothing waits in its queue."""
    locked = sessions.lock_thread(thread.pk)
    if locked.terminated_at is not None:
        raise Locked(f"Thread is terminated (terminated_at={wire.micros(locked.terminated_at)})")
    state = sessions.session_state(locked)
    if state.active or state.parked:
        raise Conflict(RUNNING)
    if QueuedMessage.objects.filter(thread_id=locked.pk).exists():
        raise Conflict(QUEUED)
    return locked


# --- moving the active path ----------------------------------------------------------------


def _activate(thread: Thread, tree: Tree, path: list[Node]) -> list[str]:
    """Make ``path`` (root first) the active path: its rows (and the rows under them) lose
    the abandoned mark, every other row gets it. Returns the path's ids; the thread's
    sockets get an ``active_path_changed`` event on commit."""
    active = tree.with_nested(path)
    restore = [n.id for n in tree.nodes.values() if n.abandoned and n.id in active]
    abandon = [n.id for n in tree.nodes.values() if not n.abandoned and n.id not in active]
    rows = Message.objects.filter(thread_id=thread.pk)
    if restore:
        rows.filter(pk__in=restore).update(abandoned=False)
    if abandon:
        rows.filter(pk__in=abandon).update(abandoned=True)
    ids = [str(n.id) for n in path]
    frame = event(
        ACTIVE_PATH_EVENT,
        {"threadId": str(thread.pk), "leafId": ids[-1] if ids else None, "path": ids},
    )
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))
    return ids


@transaction.atomic
def active_set(*, thread: Thread, message_id: str) -> list[str]:
    """Make the path through ``message_id`` active, down to the newest message below it."""
    locked = _locked_idle(thread)
    tree = load_tree(locked.pk)
    node = tree.top(message_id)
    return _activate(locked, tree, tree.ancestors(node) + tree.newest_descendant(node))


@transaction.atomic
def message_edit(
    *,
    thread: Thread,
    message_id: str,
    content: str,
    attachments: list[NewAttachment] | None = None,
    idempotency: IdempotencyRequest | None = None,
    redactor: Redactor | None = None,
) -> Posted:
    """A new version of a user message: a sibling of it, posted as a message is (queued, a
    session requested), on a path that now ends at the edited message's parent."""
    locked = sessions.lock_thread(thread.pk)  # serializes retries with the same key
    if idempotency is not None:
        replay = idempotent_replay(idempotency, thread=locked)
        if replay is not None:
            return Posted(replay.status_code, replay.response, replayed=True)
    locked = _locked_idle(locked)
    tree = load_tree(locked.pk)
    node = tree.top(message_id)
    if node.role != Message.Role.USER:
        raise Invalid("Only a user message can be edited; ask for another reply instead")
    parent = tree.nodes.get(node.follows) if node.follows else None
    _activate(locked, tree, tree.ancestors(parent))
    return message_post(
        thread=locked,
        role="user",
        content=content,
        attachments=attachments,
        idempotency=idempotency,
        redactor=redactor,
    )


@transaction.atomic
def reply_regenerate(*, thread: Thread, message_id: str) -> dict[str, Any]:
    """Another reply in place of ``message_id`` (a model's message): its parent stays, the
    path ends there, and a session runs to write the new reply (a sibling of the old)."""
    locked = _locked_idle(thread)
    tree = load_tree(locked.pk)
    node = tree.top(message_id)
    if node.role != Message.Role.ASSISTANT:
        raise Invalid("Only a reply can be regenerated; edit a user message instead")
    side = Message.objects.filter(pk=node.id).values_list("side", flat=True).first() or "a"
    parent = tree.nodes.get(node.follows) if node.follows else None
    _activate(locked, tree, tree.ancestors(parent))
    limits.budget_check(locked)  # a new session
    locked.stopped = False
    locked.last_activity_at = timezone.now()
    locked.save(update_fields=["stopped", "last_activity_at"])
    session = sessions.session_request(locked, side=side)
    return {
        "status": "queued",
        "queueId": str(session.pk) if session else None,
        "message": "Regenerating the reply. Connect via WebSocket for real-time updates.",
    }


# --- fork ------------------------------------------------------------------------------------


def _copy_rows(source: Thread, target: Thread, tree: Tree, path: list[Node]) -> list[Message]:
    keep = tree.with_nested(path)
    rows = list(
        Message.objects.filter(thread_id=source.pk, pk__in=keep)
        .exclude(status=Message.Status.PENDING)
        .order_by("created_at")
    )
    new_ids = {row.pk: uuid.uuid4() for row in rows}
    copies = []
    for row in rows:
        copy = Message(
            **{
                f.attname: getattr(row, f.attname)
                for f in Message._meta.concrete_fields
                if f.attname not in ("id", "thread_id")
            }
        )
        copy.id, copy.thread_id = new_ids[row.pk], target.pk
        copy.follows = new_ids.get(row.follows) if row.follows else None
        copy.parent_id = new_ids.get(row.parent_id) if row.parent_id else None
        copy.abandoned = False
        # The source's logs and subagents stay with it: the copies only keep their text.
        copy.log_id, copy.subagent_id = None, None
        copy.metadata = {**(row.metadata or {}), "forked_from": str(row.pk)}
        copies.append(copy)
    Message.objects.bulk_create(copies)
    return copies


def _with_results(thread: Thread, tree: Tree, path: list[Node]) -> list[Node]:
    """``path`` down to the results of the tool calls of its last step.

    A result is a row of its own following its call, so a path that ends at a step calling
    tools (or at one of its results) would leave calls that nobody answers in the fork: the
    chat would show them running forever and the model be told they never completed."""
    step = len(path)
    while step and path[step - 1].role == Message.Role.TOOL:
        step -= 1
    if not step or path[step - 1].role != Message.Role.ASSISTANT:
        return path
    rows = Message.objects.filter(thread_id=thread.pk)
    calls = rows.filter(pk=path[step - 1].id).values_list("tool_calls", flat=True).first()
    wanted = {c["id"] for c in calls or [] if isinstance(c, dict) and c.get("id")}
    if not wanted:
        return path
    answers = dict(
        rows.filter(role=Message.Role.TOOL, depth=0, tool_call_id__in=wanted)
        .exclude(status=Message.Status.PENDING)
        .values_list("id", "tool_call_id")
    )
    path = list(path)
    answered = {answers.get(n.id) for n in path[step:]}
    while not wanted <= answered:
        # Results chain one after the other; the active branch first, should one have two.
        following = sorted(tree.children.get(path[-1].id, []), key=lambda n: n.abandoned)
        result = next(
            (n for n in following if n.id in answers and answers[n.id] not in answered), None
        )
        if result is None:
            raise Conflict(UNFINISHED_STEP)
        path.append(result)
        answered.add(answers[result.id])
    return path


def _copy_files(source: Thread, target: Thread, rows: list[Message]) -> int:
    """Copy the files the copied messages refer to (their attachments), same paths."""
    paths = {
        a["path"]
        for row in rows
        for a in row.attachments or []
        if isinstance(a, dict) and isinstance(a.get("path"), str)
    }
    copied = 0
    for file in ThreadFile.objects.filter(thread_id=source.pk, path__in=paths, is_directory=False):
        file_write(
            target,
            file.path,
            chunks(blobs_of(file)),
            file.mime_type,
            metadata=dict(file.metadata or {}),
            width=file.width,
            height=file.height,
        )
        copied += 1
    return copied


def thread_fork(*, thread: Thread, message_id: str, user: Any) -> Thread:
    """A new thread owned by ``user``, same agent, holding copies of the path from the first
    message down to ``message_id`` and of the files those messages refer to."""
    with transaction.atomic():
        tree = load_tree(thread.pk)
        node = tree.top(message_id)
        if node.status == Message.Status.PENDING:
            raise Conflict("That message is still being written: fork from it once it is done")
        path = _with_results(thread, tree, tree.ancestors(node))
        source = Thread.objects.get(pk=thread.pk)
        fork = Thread.objects.create(
            agent_id=source.agent_id,
            origin_agent_id=source.origin_agent_id,
            owner=user,
            tags=list(source.tags or []),
        )
        copies = _copy_rows(source, fork, tree, path)
        _copy_files(source, fork, copies)
        _stamp(fork, copies)
    item = selectors.registry_thread(fork.pk)
    if item is not None:
        send_registry({"type": "thread_created", "thread": item}, fork.owner_id)
    return fork


def _stamp(fork: Thread, copies: list[Message]) -> None:
    said = [m for m in copies if m.role == Message.Role.USER and not m.silent and not m.depth]
    if said and (said[-1].content or "").strip():
        fork.last_message_preview = preview_of(said[-1].content or "")
        fork.last_message_at = timezone.now()
        fork.save(update_fields=["last_message_preview", "last_message_at"])


# --- reading ---------------------------------------------------------------------------------

# The siblings of the page's rows: the abandoned rows following the same parents (the
# partial index ``message_abandoned_follows`` holds only those), with the page's own rows.
_PAGE_TREE_SQL = (
    f"SELECT id, follows, created_at, abandoned, depth FROM {Message._meta.db_table} "
    "WHERE thread_id = %s AND (id IN ({ids}) OR (abandoned = %s AND depth = 0 AND "
    "(follows IN (SELECT follows FROM {table} WHERE thread_id = %s AND id IN ({ids})) "
    "OR (follows IS NULL AND EXISTS (SELECT 1 FROM {table} WHERE thread_id = %s AND "
    "id IN ({ids}) AND depth = 0 AND follows IS NULL)))))"
)


def annotate_page(thread_id: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each row of a messages page its ``branch`` (``{index, count, sibling_ids,
    follows}``: its place among the messages following the same one, and that one's id), in
    one statement.

    ``parent_id`` keeps the reference's meaning (a sub-prompt row's tool-result row, ``null``
    on every top-level row): a reference client tells top-level rows by ``parent_id IS
    NULL``, and the socket's ``message_data`` rows carry the stored column, so the tree's
    link travels in ``branch.follows`` and a linear client sees exactly what it saw before."""
    stored = [m["id"] for m in messages if not (m.get("metadata") or {}).get("queued")]
    found: dict[str, tuple[str | None, int, bool, int]] = {}
    siblings: dict[str | None, list[tuple[int, str]]] = defaultdict(list)
    if stored:
        marks = ", ".join(["%s"] * len(stored))
        table = Message._meta.db_table
        sql = _PAGE_TREE_SQL.format(ids=marks, table=table)
        keys = [db_uuid(i) for i in stored]
        tid = db_uuid(thread_id)
        with connection.cursor() as cursor:
            cursor.execute(sql, [tid, *keys, True, tid, *keys, tid, *keys])
            for row_id, follows, created_at, abandoned, depth in cursor.fetchall():
                key, parent = str(text_uuid(row_id)), text_uuid(follows) if follows else None
                found[key] = (parent, created_at, bool(abandoned), depth)
                if depth == 0:
                    siblings[parent].append((created_at, key))
    for message in messages:
        row = found.get(message["id"])
        if row is None or row[3] != 0:
            message["branch"] = {
                "index": 0,
                "count": 1,
                "sibling_ids": [message["id"]],
                "follows": None,
            }
            continue
        parent = row[0]
        ids = [key for _, key in sorted(set(siblings[parent]))]
        message["branch"] = {
            "index": ids.index(message["id"]),
            "count": len(ids),
            "sibling_ids": ids,
            "follows": parent,
        }
    return messages


def tree_wire(thread: Thread) -> dict[str, Any]:
    """The whole tree, for the studio's inspector and clients that draw it: every top-level
    message with its parent, branch and a preview, and the active path's ids."""
    tree = load_tree(thread.pk)
    previews = dict(
        Message.objects.filter(thread_id=thread.pk, depth=0).values_list("id", "content")
    )
    nodes = []
    for node in sorted(tree.nodes.values(), key=lambda n: n.created_at):
        if node.depth != 0:
            continue
        nodes.append(
            {
                "id": str(node.id),
                "follows": str(node.follows) if node.follows else None,
                "role": node.role,
                "status": node.status,
                "created_at": node.created_at,
                "active": not node.abandoned,
                "preview": preview_of(previews.get(node.id) or ""),
                "branch": branch_info(tree, node),
            }
        )
    return {"nodes": nodes, "active_path": [str(n.id) for n in tree.active_path()]}
