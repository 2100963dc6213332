"""The embedded mode's channel layer: channels' in-memory layer, with a ``group_send`` that
costs nothing when no socket watches the group.

channels' ``InMemoryChannelLayer.group_send`` makes a task per member and collects them with
``asyncio.as_completed``, even for a group with no member; its ``send`` never waits (it puts
on the channel's queue or raises ``ChannelFull``), so the tasks only add work. A running
session sends every frame of a thread to that thread's group, mostly watched by nobody: about
thirteen ``group_send`` a step: 6% of the function calls of the engine bench's embedded
steps (docs/architecture.md, "Libraries we chose, and why").
This one sends to each member in turn: the same messages, in the same order, with the same
``ChannelFull`` rule (a full channel drops the message; the others still get it). A group
nobody watches also skips the layer's clean-up of expired messages and memberships (a pass
over every channel and group, O(all of them) per frame); the next send to a watched group
or a ``receive`` still runs it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer


class EmbeddedChannelLayer(InMemoryChannelLayer):  # type: ignore[misc]
    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        if not self.groups.get(group):
            return  # before the clean-up: it only ever removes members, never adds one
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)
