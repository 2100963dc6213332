"""The data model, one module per concept.

Dependency direction (a module may import only those to its right):
threads/messages/logs/values/files/uploads/effects/sessions/idempotency/versions → agents → prompts → language_models;
env → agents, prompts, threads; api_keys, user_values, user_streams, grants, retention, mcp_servers, a2a_agents, knowledge, audit, identity, oauth → (nothing); feedback, evals → messages, threads, agents; limits → agents, api_keys.

Timestamps follow the reference wire format where it is fixed to a column:
message and log times are integer microseconds; everything else is a datetime
and is converted at the API edge (threads: seconds, effects: milliseconds).
"""

from agents_app.models.a2a_agents import A2aAgent
from agents_app.models.agents import Agent
from agents_app.models.api_keys import ApiKey, WebSocketTicket
from agents_app.models.audit import AuditEvent
from agents_app.models.effects import ScheduledEffect
from agents_app.models.env import EnvValue
from agents_app.models.evals import EvalCase, EvalDataset, EvalResult, EvalRun
from agents_app.models.feedback import Feedback
from agents_app.models.files import ThreadFile, ThreadFileChunk
from agents_app.models.grants import CredentialGrant
from agents_app.models.idempotency import IdempotencyKey
from agents_app.models.identity import IdentityLink, ManagedGroup, ScimToken
from agents_app.models.knowledge import (
    DocumentStatus,
    KnowledgeBase,
    KnowledgeChunk,
    KnowledgeDocument,
)
from agents_app.models.language_models import LanguageModel, ModelFallback
from agents_app.models.limits import LimitedAction, SpendBudget, UsageLimit
from agents_app.models.logs import Log
from agents_app.models.mcp_servers import McpOAuthGrant, McpServer
from agents_app.models.messages import Message, QueuedMessage, ThreadMessageCount
from agents_app.models.oauth import OAuthAuthorizationCode, OAuthClient, OAuthToken
from agents_app.models.prompts import Prompt, PromptPart, PromptTool
from agents_app.models.retention import RetentionPolicy
from agents_app.models.schedules import Schedule, ScheduleRun
from agents_app.models.sessions import ThreadSession
from agents_app.models.threads import Thread
from agents_app.models.triggers import Trigger
from agents_app.models.uploads import ChunkedUpload, ChunkedUploadPart
from agents_app.models.user_streams import UserStreamClient
from agents_app.models.user_values import UserValue
from agents_app.models.values import ThreadValue
from agents_app.models.versions import DefinitionDraft, DefinitionKind, DefinitionVersion
from agents_app.models.webhooks import WebhookDelivery, WebhookSubscription

__all__ = [
    "A2aAgent",
    "Agent",
    "ApiKey",
    "AuditEvent",
    "ChunkedUpload",
    "ChunkedUploadPart",
    "CredentialGrant",
    "DefinitionDraft",
    "DefinitionKind",
    "DefinitionVersion",
    "EnvValue",
    "EvalCase",
    "EvalDataset",
    "EvalResult",
    "EvalRun",
    "Feedback",
    "IdempotencyKey",
    "IdentityLink",
    "KnowledgeBase",
    "KnowledgeChunk",
    "KnowledgeDocument",
    "DocumentStatus",
    "ManagedGroup",
    "LanguageModel",
    "LimitedAction",
    "Log",
    "McpOAuthGrant",
    "McpServer",
    "Message",
    "OAuthAuthorizationCode",
    "OAuthClient",
    "OAuthToken",
    "ModelFallback",
    "Prompt",
    "PromptPart",
    "PromptTool",
    "QueuedMessage",
    "RetentionPolicy",
    "Schedule",
    "ScimToken",
    "ScheduleRun",
    "ScheduledEffect",
    "SpendBudget",
    "Thread",
    "ThreadFile",
    "ThreadFileChunk",
    "ThreadMessageCount",
    "ThreadSession",
    "ThreadValue",
    "Trigger",
    "UserStreamClient",
    "UserValue",
    "WebhookDelivery",
    "WebhookSubscription",
    "UsageLimit",
    "WebSocketTicket",
]
