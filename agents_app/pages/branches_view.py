"""The conversation tree as the studio's thread inspector shows it (issue #41).

The tree is drawn as the conversation reads, oldest first: a message with a single follower
continues at the same indent, and where a message has several versions, each version's
subtree is indented one step under a "version k of n" marker. A linear conversation is then
a flat list, whatever its length, and each branch point adds one level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents_app.models import Message, Thread
from agents_app.services.env.redaction import thread_redactor
from agents_app.services.threads.branches import Node, load_tree
from agents_app.services.threads.changes import preview_of

# A thread's tree beyond this many top-level messages is cut (the inspector says so).
MAX_NODES = 500


@dataclass(frozen=True)
class TreeRow:
    id: str
    role: str
    preview: str
    indent: int
    active: bool
    index: int  # among the versions of this message (0-based)
    count: int  # how many versions
    leaf: bool  # the active path's last message


@dataclass(frozen=True)
class TreeView:
    rows: list[TreeRow]
    branched: bool  # some message has more than one version
    abandoned: int  # messages kept off the active path
    cut: bool


def tree_view(thread: Thread) -> TreeView:
    tree = load_tree(thread.pk)
    top = [n for n in tree.nodes.values() if n.depth == 0]
    redactor = thread_redactor(str(thread.pk))  # a secret a tool echoed stays hidden here too
    texts = {
        key: redactor.text(text or "")
        for key, text in Message.objects.filter(thread_id=thread.pk, depth=0).values_list(
            "id", "content"
        )
    }
    path = tree.active_path()
    leaf = path[-1].id if path else None
    rows: list[TreeRow] = []
    # Depth-first, oldest version first; an explicit stack, since a conversation of
    # thousands of messages is a chain that deep.
    stack: list[tuple[Node, int]] = [(n, 0) for n in reversed(tree.children.get(None, []))]
    while stack and len(rows) < MAX_NODES:
        node, indent = stack.pop()
        siblings = tree.siblings(node)
        rows.append(_row(node, indent, siblings, texts, leaf))
        children = tree.children.get(node.id, [])
        step = 1 if len(children) > 1 else 0
        stack.extend((child, indent + step) for child in reversed(children))
    return TreeView(
        rows=rows,
        branched=any(len(c) > 1 for c in tree.children.values()),
        abandoned=sum(1 for n in top if n.abandoned),
        cut=len(rows) < len(top),
    )


def _row(
    node: Node, indent: int, siblings: list[Node], texts: dict[Any, str], leaf: Any
) -> TreeRow:
    ids = [s.id for s in siblings]
    return TreeRow(
        id=str(node.id),
        role=node.role,
        preview=preview_of(texts.get(node.id) or "") or "(no text)",
        indent=min(indent, 8),
        active=not node.abandoned,
        index=ids.index(node.id) if node.id in ids else 0,
        count=len(ids),
        leaf=node.id == leaf,
    )
