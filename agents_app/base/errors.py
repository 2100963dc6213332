"""Domain errors raised by services and selectors; ``agents_app.api`` maps them to HTTP.

Each carries the sentence the client sees as ``{"error": …}``. Consumers and
tasks catch the same classes, so one rule decides what "not found" or
"forbidden" means everywhere.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base class; ``status`` is the HTTP status the API answers with."""

    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Invalid(DomainError):
    """The request is well-formed JSON but its content is not acceptable."""

    status = 400


class NotAuthenticated(DomainError):
    status = 401


class Forbidden(DomainError):
    status = 403


class NotFound(DomainError):
    status = 404


class Conflict(DomainError):
    status = 409


class Unprocessable(DomainError):
    """Well-formed, but contradicts what was stored (an idempotency key reused with another body)."""

    status = 422


class Locked(DomainError):
    """The thread cannot take this action any more (terminated)."""

    status = 423


class RateLimited(DomainError):
    """A limit, quota or budget is used up; ``retry_after`` seconds until it may pass."""

    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


THREAD_FORBIDDEN = "Forbidden: You don't have access to this thread"
