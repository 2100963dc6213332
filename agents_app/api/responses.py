"""Response schemas of the API's routes: what OpenAPI shows a client for each answer.

The JSON of every answer is the reference's wire format, byte for byte, so these schemas
describe it without touching it. Each field is passed through unchanged (``Any`` at run
time, with its JSON type for OpenAPI): a pydantic ``int`` would turn ``true`` into ``1``,
a ``str`` would refuse a UUID, and ninja's ``Schema`` drops keys it does not declare even
with ``extra="allow"``. So the models are plain pydantic models that keep unknown keys
(``extra="allow"``, appended after the declared ones), and each declares the keys its route
always sends, in the order the route sends them. A key a route sends only sometimes is not
declared (a declared key would be required, or added with a default).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, WithJsonSchema

_NULL: dict[str, Any] = {"type": "null"}
_OBJECT: dict[str, Any] = {"type": "object", "additionalProperties": True}
# Passed through as is, documented with their JSON type.
Str = Annotated[Any, WithJsonSchema({"type": "string"})]
StrOrNull = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "string"}, _NULL]})]
Int = Annotated[Any, WithJsonSchema({"type": "integer"})]
Bool = Annotated[Any, WithJsonSchema({"type": "boolean"})]
Object = Annotated[Any, WithJsonSchema(_OBJECT)]
Objects = Annotated[Any, WithJsonSchema({"type": "array", "items": _OBJECT})]
Strings = Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "string"}})]


class Out(BaseModel):
    """A response body: the declared keys in their order, then any others as sent."""

    model_config = ConfigDict(extra="allow")


class SuccessOut(Out):
    success: Bool


class ThreadCreatedOut(Out):
    threadId: Str
    agent_id: Str
    message: Str


class ThreadPageOut(Out):
    threads: Objects
    total: Int
    hasMore: Bool


class ThreadOwnerOut(Out):
    user_id: Str
    username: Str
    display_name: StrOrNull
    email: StrOrNull
    thread_count: Int


class ThreadOwnersOut(Out):
    owners: list[ThreadOwnerOut]


class ThreadDeletedOut(Out):
    success: Bool
    threadId: Str
    deletedThreadIds: Strings
    deletedCount: Int
    message: Str


class SubagentsOut(Out):
    subagents: Objects


class MessagePageOut(Out):
    messages: Objects
    total: Int
    hasMore: Bool


class MessageQueuedOut(Out):
    status: Str
    queueId: Str
    messageId: Str
    message: Str


class StoppedOut(Out):
    status: Str
    message: Str


class PendingToolCallsOut(Out):
    pending: Objects


class ContinueOut(Out):
    status: Str
    queueId: StrOrNull
    message: Str


class MeOut(Out):
    user: Object
    authType: Str


class TicketOut(Out):
    ticket: Str
    expires_in: Int
