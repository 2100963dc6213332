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
Number = Annotated[Any, WithJsonSchema({"type": "number"})]
# A cost: null when no price was known for the model (docs/providers.md "Cost").
NumberOrNull = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "number"}, _NULL]})]
IntOrNull = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, _NULL]})]
Null = Annotated[Any, WithJsonSchema(_NULL)]
# Any JSON value (a stored value, a timestamp whose encoding the route does not fix).
Value = Annotated[Any, WithJsonSchema({})]


class Out(BaseModel):
    """A response body: the declared keys in their order, then any others as sent."""

    model_config = ConfigDict(extra="allow")


class SuccessOut(Out):
    success: Bool


class ThreadCreatedOut(Out):
    threadId: Str
    agent_id: Str
    message: Str


class ThreadFieldsOut(Out):
    id: Str
    agent_id: Str
    user_id: StrOrNull
    tags: Strings
    parent: StrOrNull
    terminated: IntOrNull
    created_at: Int
    # A session is queued or running now (ours, as in the thread list): a page opened
    # mid-reply shows it working and offers Stop before the next frame arrives.
    executing: Bool


class ThreadAgentOut(Out):
    id: Str
    title: Str
    description: StrOrNull
    icon: StrOrNull
    side_a_backing: Str
    side_b_backing: Str
    side_a_label: StrOrNull
    side_b_label: StrOrNull
    side_a_agent_prompt: Str
    side_b_agent_prompt: StrOrNull
    side_a_handler: Null
    side_b_handler: Null
    feedback_reasons: Strings
    tool_activity: Value


class ThreadStatsOut(Out):
    message_count: Int
    log_count: Int


class ThreadDetailOut(Out):
    thread: ThreadFieldsOut
    agent: ThreadAgentOut
    stats: ThreadStatsOut


class ThreadUpdatedOut(Out):
    id: Str
    agent_id: Str
    user_id: StrOrNull
    tags: Strings
    env_types: Object
    created_at: Int


class ModelCostOut(Out):
    modelName: Str
    totalCost: Number
    inputCost: Number
    cachedCost: Number
    outputCost: Number
    routerFeeCost: Number
    requestCount: Int
    avgCostPerRequest: Number


class ThreadCostOut(Out):
    totalCost: Number
    inputCost: Number
    cachedCost: Number
    outputCost: Number
    routerFeeCost: Number
    ownCost: Number
    requestCount: Int
    messageCount: Int
    avgCostPerMessage: Number
    modelBreakdown: list[ModelCostOut]
    avgCostPerMessageByModel: Object
    threads: Objects
    truncated: Bool
    unknownCostRequests: Int


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


class ActivePathOut(Out):
    active_path: Strings
    leaf_id: StrOrNull


class ThreadForkedOut(Out):
    threadId: Str
    message: Str


class TreeNodeOut(Out):
    id: Str
    follows: StrOrNull
    role: Str
    status: Str
    created_at: Value
    active: Bool
    preview: Str
    branch: Object


class MessageTreeOut(Out):
    nodes: list[TreeNodeOut]
    active_path: Strings


class FeedbackOut(Out):
    score: Int
    reason: StrOrNull
    comment: StrOrNull


class FeedbackSetOut(Out):
    feedback: FeedbackOut


class FeedbackWithdrawnOut(Out):
    withdrawn: Bool
    feedback: Null


class TriggerFiredOut(Out):
    threadId: Str
    messageId: Str


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
