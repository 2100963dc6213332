"""Who may do what: one permission model for the studio, the API, WebSockets and ``/mcp``.

Django's permissions decide everywhere, as the studio (Django admin) already does: the
permission to change language models in the studio is the permission to create one over
the API. Being staff grants nothing by itself: it only lets a user sign in to the studio,
where every page still asks for its permission. Threads add ownership: a thread's owner
may do everything with it; anyone else needs ``view_thread`` to read it, ``change_thread``
to post, stop, approve or write its files and values, ``delete_thread`` to delete it.

``API_ROUTES`` names the rule of every ``/api/`` route in one place; ``agents_app.api``
refuses to start when a route has no row, and the permission-matrix test is generated
from it. This module imports only Django and the models, so every layer may use it.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Literal

ThreadAction = Literal["view", "change", "delete"]

# Permission codenames, named once (the studio's model permissions).
MODELS_VIEW = "agents_app.view_languagemodel"
MODELS_ADD = "agents_app.add_languagemodel"
MODELS_CHANGE = "agents_app.change_languagemodel"
MODELS_DELETE = "agents_app.delete_languagemodel"
PROMPTS_VIEW = "agents_app.view_prompt"
PROMPTS_ADD = "agents_app.add_prompt"
PROMPTS_CHANGE = "agents_app.change_prompt"
PROMPTS_DELETE = "agents_app.delete_prompt"
AGENTS_VIEW = "agents_app.view_agent"
AGENTS_ADD = "agents_app.add_agent"
AGENTS_CHANGE = "agents_app.change_agent"
AGENTS_DELETE = "agents_app.delete_agent"
ENV_VIEW = "agents_app.view_envvalue"
ENV_CHANGE = "agents_app.change_envvalue"
MCP_VIEW = "agents_app.view_mcpserver"
MCP_CHANGE = "agents_app.change_mcpserver"
A2A_VIEW = "agents_app.view_a2aagent"
A2A_ADD = "agents_app.add_a2aagent"
A2A_CHANGE = "agents_app.change_a2aagent"
A2A_DELETE = "agents_app.delete_a2aagent"
KNOWLEDGE_VIEW = "agents_app.view_knowledgebase"
KNOWLEDGE_ADD = "agents_app.add_knowledgebase"
KNOWLEDGE_CHANGE = "agents_app.change_knowledgebase"
KNOWLEDGE_DELETE = "agents_app.delete_knowledgebase"
DOCUMENTS_VIEW = "agents_app.view_knowledgedocument"
DOCUMENTS_ADD = "agents_app.add_knowledgedocument"
DOCUMENTS_CHANGE = "agents_app.change_knowledgedocument"
DOCUMENTS_DELETE = "agents_app.delete_knowledgedocument"
# Accounts (the users admin API, spec 0.2.0 F7) are Django's own users.
USERS_VIEW = "auth.view_user"
USERS_ADD = "auth.add_user"
USERS_CHANGE = "auth.change_user"
USERS_DELETE = "auth.delete_user"
# Someone who may change an account (set its password) may watch its user event stream.
USERS_STREAM = USERS_CHANGE
GRANTS_VIEW = "agents_app.view_credentialgrant"
GRANTS_ADD = "agents_app.add_credentialgrant"
GRANTS_CHANGE = "agents_app.change_credentialgrant"
GRANTS_DELETE = "agents_app.delete_credentialgrant"

# Acting in another person's scope (their user endpoints: their values, their threads) is
# changing their account.
USER_SCOPE_ADMIN = "auth.change_user"


@dataclass(frozen=True)
class Public:
    """Anyone, signed in or not (sign-in, CSRF token, icons)."""

    def describe(self) -> str:
        return "anyone"


@dataclass(frozen=True)
class SignedIn:
    """Any signed-in user (their own keys, their own env values, who am I)."""

    def describe(self) -> str:
        return "any signed-in user"


@dataclass(frozen=True)
class InPerson:
    """A signed-in person (the session cookie or a login token), never an API key: what a
    leaked key must not be able to do (create more keys that outlive it)."""

    refusal: str

    def describe(self) -> str:
        return "a signed-in person (session or login token), not an API key"


@dataclass(frozen=True)
class Perm:
    """One Django permission (``app_label.codename``), and ``also`` those a studio page asks
    for together with it (uploading an eval dataset file adds and changes datasets)."""

    codename: str
    also: tuple[str, ...] = ()

    @property
    def codenames(self) -> tuple[str, ...]:
        return (self.codename, *self.also)

    def describe(self) -> str:
        return "permission " + " and ".join(self.codenames)


@dataclass(frozen=True)
class ThreadRule:
    """The thread's owner, or a user holding ``<action>_thread`` for others' threads."""

    action: ThreadAction

    def describe(self) -> str:
        return f"the thread's owner, or permission agents_app.{self.action}_thread"


Rule = Public | SignedIn | InPerson | Perm | ThreadRule

_PUBLIC, _SIGNED = Public(), SignedIn()
_VIEW, _CHANGE, _DELETE = ThreadRule("view"), ThreadRule("change"), ThreadRule("delete")
_ALL = ("GET", "POST", "PUT", "PATCH", "DELETE")

# (method, path under /api) → rule. The order follows agents_app.api's routers.
API_ROUTES: dict[tuple[str, str], Rule] = {
    ("GET", "/auth/csrf"): _PUBLIC,
    ("POST", "/auth/login"): _PUBLIC,
    ("GET", "/auth/config"): _PUBLIC,
    ("POST", "/auth/logout"): _SIGNED,
    ("GET", "/auth/me"): _SIGNED,
    ("POST", "/auth/websocket-ticket"): _SIGNED,
    ("DELETE", "/auth/current-key"): _SIGNED,
    ("GET", "/api-keys"): _SIGNED,
    ("POST", "/api-keys"): InPerson(
        "An API key cannot create API keys. Sign in (the studio, or POST /api/auth/login "
        "for a login token) to create one."
    ),
    ("DELETE", "/api-keys/{key_id}"): _SIGNED,
    # Your own account-wide values (spec 0.2.0 user KV): always the caller's.
    ("GET", "/users/me/kv"): _SIGNED,
    ("POST", "/users/me/kv"): _SIGNED,
    ("DELETE", "/users/me/kv"): _SIGNED,
    # Your own credential grants (spec 0.2.0 F6): write-only secrets, always the caller's.
    ("GET", "/users/me/grants"): _SIGNED,
    ("PUT", "/users/me/grants/{name}"): _SIGNED,
    ("DELETE", "/users/me/grants/{name}"): _SIGNED,
    # The user event stream is a WebSocket (agents_app.sockets.user_stream); a plain GET is 426.
    ("GET", "/users/me/stream"): _SIGNED,
    ("GET", "/users/{user_id}/stream"): Perm(USERS_STREAM),
    # The users admin API (spec 0.2.0 F7) and another person's env and grants.
    ("GET", "/users"): Perm(USERS_VIEW),
    ("POST", "/users"): Perm(USERS_ADD),
    ("PUT", "/users/{user_id}"): Perm(USERS_CHANGE),
    ("DELETE", "/users/{user_id}"): Perm(USERS_DELETE),
    ("GET", "/users/{user_id}/env"): Perm(ENV_VIEW, also=(USERS_VIEW,)),
    ("PATCH", "/users/{user_id}/env"): Perm(ENV_CHANGE, also=(USERS_CHANGE,)),
    ("GET", "/users/{user_id}/grants"): Perm(GRANTS_VIEW),
    ("PUT", "/users/{user_id}/grants/{name}"): Perm(GRANTS_CHANGE, also=(GRANTS_ADD,)),
    ("DELETE", "/users/{user_id}/grants/{name}"): Perm(GRANTS_DELETE),
    # Instance-wide grants: used when a thread's owner has none of that name.
    ("GET", "/grants"): Perm(GRANTS_VIEW),
    ("PUT", "/grants/{name}"): Perm(GRANTS_CHANGE, also=(GRANTS_ADD,)),
    ("DELETE", "/grants/{name}"): Perm(GRANTS_DELETE),
    ("GET", "/envs/instance"): Perm(ENV_VIEW),
    ("PATCH", "/envs/instance"): Perm(ENV_CHANGE),
    ("GET", "/users/me/env"): _SIGNED,
    ("PATCH", "/users/me/env"): _SIGNED,
    # Discovery and catalog look-ups call vendors with the instance's keys.
    ("GET", "/providers/{name}/models"): Perm(MODELS_CHANGE),
    ("POST", "/models/available"): Perm(MODELS_CHANGE),
    ("POST", "/models/capabilities"): Perm(MODELS_CHANGE),
    ("POST", "/models/endpoints"): Perm(MODELS_CHANGE),
    # The list answers everyone; the definition fields only to holders of view_agent.
    ("GET", "/agents"): _SIGNED,
    ("POST", "/agents"): Perm(AGENTS_ADD),
    ("GET", "/agents/{name}"): Perm(AGENTS_VIEW),
    ("PUT", "/agents/{name}"): Perm(AGENTS_CHANGE),
    ("DELETE", "/agents/{name}"): Perm(AGENTS_DELETE),
    ("GET", "/prompts"): Perm(PROMPTS_VIEW),
    ("POST", "/prompts"): Perm(PROMPTS_ADD),
    ("GET", "/prompts/{name}"): Perm(PROMPTS_VIEW),
    ("PUT", "/prompts/{name}"): Perm(PROMPTS_CHANGE),
    ("DELETE", "/prompts/{name}"): Perm(PROMPTS_DELETE),
    ("GET", "/models"): Perm(MODELS_VIEW),
    ("POST", "/models"): Perm(MODELS_ADD),
    ("GET", "/models/{name}"): Perm(MODELS_VIEW),
    ("PUT", "/models/{name}"): Perm(MODELS_CHANGE),
    ("DELETE", "/models/{name}"): Perm(MODELS_DELETE),
    ("GET", "/models/{name}/curl-data"): Perm(MODELS_VIEW),
    ("GET", "/tools"): Perm(PROMPTS_VIEW),
    ("GET", "/tools/{name}"): Perm(PROMPTS_VIEW),
    ("GET", "/hooks"): Perm(PROMPTS_VIEW),
    ("GET", "/handlers"): Perm(AGENTS_VIEW),
    ("GET", "/config"): _PUBLIC,
    ("GET", "/providers"): Perm(MODELS_VIEW),
    ("GET", "/providers/{name}/icon"): _PUBLIC,
    ("GET", "/providers/{name}/tools"): Perm(MODELS_VIEW),
    ("GET", "/diagnostics"): Perm(AGENTS_VIEW),
    ("GET", "/variables/agents/{name}"): Perm(AGENTS_VIEW),
    ("GET", "/variables/prompts/{name}"): Perm(PROMPTS_VIEW),
    ("GET", "/variables/tools/{name}"): Perm(PROMPTS_VIEW),
    # Remote A2A agents (docs/api.md "The A2A client"): the studio's permissions on them.
    ("GET", "/a2a-agents"): Perm(A2A_VIEW),
    ("POST", "/a2a-agents"): Perm(A2A_ADD),
    ("GET", "/a2a-agents/{name}"): Perm(A2A_VIEW),
    ("PUT", "/a2a-agents/{name}"): Perm(A2A_CHANGE),
    ("DELETE", "/a2a-agents/{name}"): Perm(A2A_DELETE),
    # Knowledge bases (docs/knowledge.md): the studio's permissions on bases and documents;
    # the search answers anyone the base is offered to (its audience; others get 404).
    ("GET", "/knowledge"): Perm(KNOWLEDGE_VIEW),
    ("POST", "/knowledge"): Perm(KNOWLEDGE_ADD),
    ("GET", "/knowledge/{name}"): Perm(KNOWLEDGE_VIEW),
    ("PUT", "/knowledge/{name}"): Perm(KNOWLEDGE_CHANGE),
    ("DELETE", "/knowledge/{name}"): Perm(KNOWLEDGE_DELETE),
    ("POST", "/knowledge/{name}/search"): _SIGNED,
    ("GET", "/knowledge/{name}/documents"): Perm(DOCUMENTS_VIEW),
    ("POST", "/knowledge/{name}/documents"): Perm(DOCUMENTS_ADD),
    ("GET", "/knowledge/{name}/documents/{document_id}"): Perm(DOCUMENTS_VIEW),
    ("POST", "/knowledge/{name}/documents/{document_id}"): Perm(DOCUMENTS_CHANGE),
    ("DELETE", "/knowledge/{name}/documents/{document_id}"): Perm(DOCUMENTS_DELETE),
    ("POST", "/knowledge/{name}/documents/{document_id}/reindex"): Perm(DOCUMENTS_CHANGE),
    # Evals (docs/observability.md): the studio's eval permissions.
    ("GET", "/evals/datasets"): Perm("agents_app.view_evaldataset"),
    ("GET", "/evals/datasets/{name}/file"): Perm("agents_app.view_evaldataset"),
    # As the studio's "Upload a dataset file": it may create a dataset or change one.
    ("POST", "/evals/datasets/file"): Perm(
        "agents_app.add_evaldataset", also=("agents_app.change_evaldataset",)
    ),
    ("POST", "/evals/runs"): Perm("agents_app.add_evalrun"),
    ("GET", "/evals/runs"): Perm("agents_app.view_evalrun"),
    ("GET", "/evals/runs/{run_id}"): Perm("agents_app.view_evalrun"),
    ("POST", "/evals/runs/{run_id}/cancel"): Perm("agents_app.change_evalrun"),
    ("GET", "/evals/compare"): Perm("agents_app.view_evalrun"),
    # Schedules (docs/automation.md): the studio's schedule permissions; runs are threads of
    # the schedule's creator.
    ("POST", "/schedules/preview"): Perm("agents_app.view_schedule"),
    ("POST", "/schedules"): Perm("agents_app.add_schedule"),
    ("GET", "/schedules"): Perm("agents_app.view_schedule"),
    ("GET", "/schedules/{schedule_id}"): Perm("agents_app.view_schedule"),
    ("POST", "/schedules/{schedule_id}/pause"): Perm("agents_app.change_schedule"),
    ("POST", "/schedules/{schedule_id}/resume"): Perm("agents_app.change_schedule"),
    ("POST", "/schedules/{schedule_id}/run"): Perm("agents_app.change_schedule"),
    ("DELETE", "/schedules/{schedule_id}"): Perm("agents_app.delete_schedule"),
    # Outbound webhooks (docs/automation.md): the studio's subscription permissions.
    ("POST", "/webhooks"): Perm("agents_app.add_webhooksubscription"),
    ("GET", "/webhooks"): Perm("agents_app.view_webhooksubscription"),
    ("DELETE", "/webhooks/{subscription_id}"): Perm("agents_app.delete_webhooksubscription"),
    ("GET", "/webhooks/{subscription_id}/deliveries"): Perm("agents_app.view_webhooksubscription"),
    ("POST", "/webhooks/{subscription_id}/deliveries/{delivery_id}/redeliver"): Perm(
        "agents_app.change_webhooksubscription"
    ),
    # Inbound triggers: managed with the studio's trigger permissions; fired by whoever
    # holds the token (the token is the credential; revoked or unknown → 404).
    ("POST", "/triggers"): Perm("agents_app.add_trigger"),
    ("GET", "/triggers"): Perm("agents_app.view_trigger"),
    ("DELETE", "/triggers/{trigger_id}"): Perm("agents_app.delete_trigger"),
    ("POST", "/inbound/{token}"): _PUBLIC,
    # Threads: creating and listing are for everyone (the list holds what the caller may see).
    ("POST", "/threads"): _SIGNED,
    ("GET", "/threads"): _SIGNED,
    ("GET", "/threads/owners"): Perm("agents_app.view_thread"),
    ("GET", "/threads/{thread_id}"): _VIEW,
    ("PATCH", "/threads/{thread_id}"): _CHANGE,
    ("DELETE", "/threads/{thread_id}"): _DELETE,
    ("GET", "/threads/{thread_id}/subagents"): _VIEW,
    ("GET", "/threads/{thread_id}/cost"): _VIEW,
    ("GET", "/threads/{thread_id}/stream"): _VIEW,
    ("GET", "/threads/{thread_id}/messages"): _VIEW,
    ("POST", "/threads/{thread_id}/messages"): _CHANGE,
    ("PATCH", "/threads/{thread_id}/messages/{message_id}"): _CHANGE,
    ("DELETE", "/threads/{thread_id}/messages/{message_id}"): _CHANGE,
    # Conversation branches (agents_app.api.branches): changing the path is posting; the
    # tree is read as the messages are; a fork copies into a thread the caller owns.
    ("POST", "/threads/{thread_id}/messages/{message_id}/edit"): _CHANGE,
    ("POST", "/threads/{thread_id}/messages/{message_id}/regenerate"): _CHANGE,
    ("PUT", "/threads/{thread_id}/active"): _CHANGE,
    ("POST", "/threads/{thread_id}/fork"): _CHANGE,
    ("GET", "/threads/{thread_id}/tree"): _VIEW,
    ("POST", "/threads/{thread_id}/stop"): _CHANGE,
    ("GET", "/threads/{thread_id}/pending-tool-calls"): _VIEW,
    ("POST", "/threads/{thread_id}/tool-result"): _CHANGE,
    ("GET", "/threads/{thread_id}/variables/{request_id}"): _VIEW,
    ("POST", "/threads/{thread_id}/variables/{request_id}"): _CHANGE,
    ("GET", "/threads/{thread_id}/inputs/{request_id}"): _VIEW,
    ("POST", "/threads/{thread_id}/inputs/{request_id}"): _CHANGE,
    ("POST", "/threads/{thread_id}/continue"): _CHANGE,
    ("GET", "/threads/{thread_id}/effects"): _VIEW,
    ("POST", "/threads/{thread_id}/effects/{effect_id}/cancel"): _CHANGE,
    ("POST", "/threads/{thread_id}/effects/{effect_id}/run"): _CHANGE,
    ("GET", "/threads/{thread_id}/logs"): _VIEW,
    ("GET", "/threads/{thread_id}/logs/{log_id}"): _VIEW,
    ("GET", "/threads/{thread_id}/logs/{log_id}/inspect/{provider}"): _VIEW,
    ("GET", "/threads/{thread_id}/diagnostics"): _VIEW,
    ("POST", "/threads/{thread_id}/revive"): _CHANGE,
    ("GET", "/threads/{thread_id}/kv"): _VIEW,
    ("POST", "/threads/{thread_id}/kv"): _CHANGE,
    ("DELETE", "/threads/{thread_id}/kv"): _CHANGE,
    ("GET", "/threads/{thread_id}/fs"): _VIEW,
    ("GET", "/threads/{thread_id}/fs/{path:path}"): _VIEW,
    ("POST", "/threads/{thread_id}/fs/{path:path}"): _CHANGE,
    ("DELETE", "/threads/{thread_id}/fs/{path:path}"): _CHANGE,
    # Resumable uploads (agents_app.api.storage_uploads): writing a file, as the one-shot POST.
    ("POST", "/threads/{thread_id}/fs/{path:path}/upload/start"): _CHANGE,
    ("PUT", "/threads/{thread_id}/fs/{path:path}/upload/chunk/{index}"): _CHANGE,
    ("POST", "/threads/{thread_id}/fs/{path:path}/upload/complete"): _CHANGE,
    # The dev/test passthrough (agents_app.api.thread_rpc): posting's rule, and off unless
    # STUDIO_THREAD_RPC is set, and loopback callers only.
    ("POST", "/threads/{thread_id}/rpc"): _CHANGE,
    # Rating a reply: anyone who may read the thread rates it for themselves.
    ("POST", "/threads/{thread_id}/messages/{message_id}/feedback"): _VIEW,
    ("DELETE", "/threads/{thread_id}/messages/{message_id}/feedback"): _VIEW,
    # Thread endpoints (define_thread_endpoint): reading runs as view, the rest as change.
    **{(m, "/threads/{thread_id}/"): (_VIEW if m == "GET" else _CHANGE) for m in _ALL},
    **{(m, "/threads/{thread_id}/{path:rest}"): (_VIEW if m == "GET" else _CHANGE) for m in _ALL},
    # User endpoints (define_user_endpoint): your own scope, or, with the right to change
    # accounts, another person's (spec 0.2.0 F2; agents_app.api.user_endpoints).
    **{(m, "/users/me/"): _SIGNED for m in _ALL},
    **{(m, "/users/me/{path:rest}"): _SIGNED for m in _ALL},
    **{(m, "/users/{user_id}/"): Perm(USER_SCOPE_ADMIN) for m in _ALL},
    **{(m, "/users/{user_id}/{path:rest}"): Perm(USER_SCOPE_ADMIN) for m in _ALL},
    # Controllers (define_controller): the definition says public or signed-in, and
    # agents_app.api.controllers authenticates the non-public ones itself.
    **{(m, "/{path:rest}"): _PUBLIC for m in _ALL},
}


def may(user: Any, codename: str) -> bool:
    """``user`` holds the permission (superusers hold all; inactive users none)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return bool(user.has_perm(codename))


def may_use_thread(user: Any, owner_id: Any, action: ThreadAction) -> bool:
    """The owner may do anything with their thread; others need ``<action>_thread``.

    The owner's check reads nothing, so posts and message pages (which count their
    statements) pay no permission query; ownerless threads need the permission."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if owner_id is not None and owner_id == user.pk:
        return True
    return may(user, f"agents_app.{action}_thread")


def may_see_all_threads(user: Any) -> bool:
    return may(user, "agents_app.view_thread")


def may_read_instance_env(user: Any) -> bool:
    """Whether a studio action by ``user`` may resolve instance env values (secrets)."""
    return may(user, ENV_VIEW)


# The action the route being served needs on its thread, set by the API's route gate
# (agents_app.api.route_rules) for the length of one view, and read by
# ``selectors.access_thread`` when its caller names none: the route table stays the one
# place that says which action a route needs.
_route_thread_action: contextvars.ContextVar[ThreadAction] = contextvars.ContextVar(
    "route_thread_action", default="view"
)


def route_thread_action() -> ThreadAction:
    return _route_thread_action.get()


def set_route_thread_action(action: ThreadAction) -> contextvars.Token[ThreadAction]:
    return _route_thread_action.set(action)


def reset_route_thread_action(token: contextvars.Token[ThreadAction]) -> None:
    _route_thread_action.reset(token)
