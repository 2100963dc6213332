"""The in-memory store copies only a message's containers (``memory._CONTAINERS``); a field
added to ``Message`` later that holds a list or a dict must be named there, or the store would
share it with the engine (which a database never does)."""

from __future__ import annotations

from dataclasses import fields

from runtime.core.messages import Message
from runtime.store import memory


def test_every_field_of_a_message_that_holds_a_list_or_a_dict_is_deep_copied() -> None:
    mutable = {f.name for f in fields(Message) if "list" in str(f.type) or "dict" in str(f.type)}
    assert mutable == set(memory._CONTAINERS)
