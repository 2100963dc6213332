"""The link a subagent child keeps to its parent: how the two talk, stored with the child.

The engine writes it when it creates a child thread (``NewThread.subagent``; the Django
store keeps it as ``Thread.subagent_config``) and reads it back from
``ThreadRecord.subagent`` when the child is messaged, listed or settles
(``runtime.delegation.subagents``). Only the fields a link was built with are stored (and a link the
entry gives no options stores none of them), so the stored JSON has the keys it had when
links were hand-built dicts; keys this model does not know are ignored on reading.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from runtime.core.messages import Role, Side
from runtime.core.spec import ToolConfig
from runtime.store.protocol import ThreadRecord


class SubagentLink(BaseModel):
    """How a child relates to its parent (all optional: a stored link says what it says)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    # A blocking child answers the tool call that messages it; a non-blocking one runs in
    # the background and its end is delivered to the parent as a message.
    blocking: bool | None = None
    resumable: bool | None = None
    receives_messages: Literal["side_a", "side_b"] | None = None
    owner_side: Side | None = None  # the parent's side that owns the relationship
    tool_call_id: str | None = None  # the call that created the child (None: immediate)
    immediate: bool | None = None
    arguments: dict[str, Any] | None = None  # the initial arguments the child was told
    parent_communication: Literal["implicit", "explicit"] | None = None
    hidden: bool | None = None  # kept out of the ``subagents`` listing
    # A 0.2.0 side relationship's child: a persistent thread whose every end settles ``idle``.
    persistent: bool | None = None

    @classmethod
    def of(cls, child: ThreadRecord) -> SubagentLink:
        """The child's stored link (an empty one when the thread has none)."""
        return cls.model_validate(child.subagent or {})

    def with_options(self, entry: ToolConfig, *, persistent: bool = False) -> SubagentLink:
        """This link plus the relationship options the tool entry sets (only those it sets)."""
        options: dict[str, Any] = {"persistent": True} if persistent else {}
        if entry.parent_communication:
            options["parent_communication"] = entry.parent_communication
        if entry.hidden:
            options["hidden"] = True
        return self.model_copy(update=options)

    def stored(self) -> dict[str, Any]:
        """The link as the store keeps it: the fields it was built with."""
        return self.model_dump(exclude_unset=True)

    def says_non_blocking(self) -> bool:
        """Whether the link says the child does not block (a link that does not say is not)."""
        return "blocking" in self.model_fields_set and not self.blocking

    def receiving_role(self) -> Role:
        """The role of messages the child receives (side B hears ``assistant``)."""
        return "assistant" if self.receives_messages == "side_b" else "user"

    def owner_role(self) -> Role:
        """Deliveries speak to the side that owns the relationship (A hears ``user``)."""
        return "assistant" if self.owner_side == "b" else "user"
