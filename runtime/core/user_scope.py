"""Spec 0.2.0 user scope, the small rules every layer shares: the user hooks' names and the
errors a user endpoint call ends with.

A user endpoint (``define_user_endpoint``, ``runtime.tools.user_endpoints``) runs in one
person's scope, one call at a time per user (§2.1). Thread code reaches it with
``await (await state.user()).call(method, path, body)``; the call's outcome is the
handler's answer, or one of these errors.
"""

from __future__ import annotations

from typing import Any

# Spec 0.2.0 §7: hooks of a person's scope, not of a thread. Every registered implementation
# runs (no prompt lists them), with the person's ``UserState``; they can never be a child's
# ``parentHooks`` (``SRC/agents/ParentHookResolver.ts:13-17``) nor a prompt's ``hooks``.
USER_HOOK_NAMES = (
    "user_value_changed",
    "user_client_attached",
    "user_client_detached",
)


class UserEndpointError(Exception):
    """A user endpoint answered with an error status (``status`` ≥ 400, ``body`` its answer),
    or could not be reached (no such route: 404; the wrong method: 405).

    A handler may raise it too, to answer with that status and ``{"error": message}``."""

    def __init__(self, status: int, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = {"error": message} if body is None else body


class ReentrantUserCall(UserEndpointError):
    """A call that would wait for itself (spec §2.2.3): a user endpoint reaching back into
    the thread that is waiting for it, or into its own user's scope. Refused at once
    (409) instead of deadlocking."""

    def __init__(self, message: str) -> None:
        super().__init__(409, message)
