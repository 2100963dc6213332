"""Vendor errors → a small set of codes, each with a ``retryable`` flag and an optional delay.

Every adapter failure becomes an ``AdapterError`` (a ``ProviderError``) whose
``code`` is one of ``CODES``. The HTTP status gives a first answer; the vendor's
own error type or code refines it (``insufficient_quota`` is a 429 that no
retry will fix; ``context_length_exceeded`` is a 400 that a model with a larger
window may accept). Messages are scrubbed of the API key before they exist, so
a key can never reach a log or a traceback through an error.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from runtime.core.egress import EgressRefused
from runtime.providers.base import (
    AUTHENTICATION,
    CONTEXT_TOO_LONG,
    ERROR_CODES,
    INVALID_REQUEST,
    NETWORK,
    OVERLOADED,
    RATE_LIMIT,
    TIMEOUT,
    UNKNOWN,
    ProviderError,
    status_kind,
)

CODES = ERROR_CODES

REDACTED = "[redacted]"
# ``vendor_code`` of a request the egress policy refused to send (runtime/core/egress.py).
EGRESS_REFUSED = "egress_refused"
MAX_MESSAGE_CHARS = 2000
# A vendor code or request id is an identifier; more than this is not one.
MAX_FIELD_CHARS = 200


class AdapterError(ProviderError):
    """A ``ProviderError`` raised by an HTTP adapter.

    ``retry_after`` comes from ``Retry-After``, ``retry-after-ms`` or Gemini's
    ``RetryInfo``; ``vendor_code`` is the vendor's own error type/code; ``request_id``
    the vendor's request id when it sent one (all three live on ``ProviderError``).
    """


class PartialResponseError(AdapterError):
    """A failure after output already reached the caller: never retried silently.

    ``partial_text`` / ``partial_reasoning`` keep what was streamed, so the engine
    can store the truncated reply as failed rather than lose it; ``cause`` is the
    original error (its code is kept on this one).
    """

    def __init__(self, cause: ProviderError, partial_text: str, partial_reasoning: str) -> None:
        super().__init__(
            f"{cause.message} (the response failed after output had reached the caller; "
            "not retried)",
            cause.code,
            cause.status,
            retryable=False,
            retry_after=cause.retry_after,
            vendor_code=cause.vendor_code,
            request_id=cause.request_id,
        )
        self.cause = cause
        self.partial_text = partial_text
        self.partial_reasoning = partial_reasoning


# --- redaction -----------------------------------------------------------------------------


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret (and its URL-encoded form) replaced by ``[redacted]``."""
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        text = text.replace(secret, REDACTED)
        quoted = urllib.parse.quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, REDACTED)
    return text


# --- classification ------------------------------------------------------------------------

# Vendor error types, codes and gRPC statuses → (code, retryable). Looked up most
# specific first: the error's ``code``, then a Gemini ErrorInfo ``reason``, then
# its ``type`` / ``status``.
_VENDOR_KINDS: dict[str, tuple[str, bool]] = {
    # OpenAI / OpenRouter
    "context_length_exceeded": (CONTEXT_TOO_LONG, False),
    "string_above_max_length": (CONTEXT_TOO_LONG, False),
    "insufficient_quota": (RATE_LIMIT, False),
    "rate_limit_exceeded": (RATE_LIMIT, True),
    "invalid_api_key": (AUTHENTICATION, False),
    "model_not_found": (INVALID_REQUEST, False),
    "server_error": (UNKNOWN, True),
    # Anthropic
    "invalid_request_error": (INVALID_REQUEST, False),
    "authentication_error": (AUTHENTICATION, False),
    "permission_error": (AUTHENTICATION, False),
    "not_found_error": (INVALID_REQUEST, False),
    "request_too_large": (CONTEXT_TOO_LONG, False),
    "rate_limit_error": (RATE_LIMIT, True),
    "overloaded_error": (OVERLOADED, True),
    "api_error": (UNKNOWN, True),
    "billing_error": (RATE_LIMIT, False),
    "enforced_spend_limit_reached": (RATE_LIMIT, False),
    # Gemini (gRPC statuses and ErrorInfo reasons)
    "API_KEY_INVALID": (AUTHENTICATION, False),
    "INVALID_ARGUMENT": (INVALID_REQUEST, False),
    "FAILED_PRECONDITION": (INVALID_REQUEST, False),
    "NOT_FOUND": (INVALID_REQUEST, False),
    "PERMISSION_DENIED": (AUTHENTICATION, False),
    "UNAUTHENTICATED": (AUTHENTICATION, False),
    "RESOURCE_EXHAUSTED": (RATE_LIMIT, True),
    "UNAVAILABLE": (OVERLOADED, True),
    "INTERNAL": (UNKNOWN, True),
    "DEADLINE_EXCEEDED": (TIMEOUT, True),
}

# Context overflows that arrive as a plain 400 invalid-request.
_CONTEXT_PATTERNS = re.compile(
    r"prompt is too long|maximum context length|context length|context window"
    r"|input token count .* exceeds|too many tokens",
    re.IGNORECASE,
)


def classify(
    vendor: str,
    status: int | None,
    error: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
    secrets: Iterable[str | None] = (),
) -> AdapterError:
    """An ``AdapterError`` for a vendor error object (``body["error"]``) and its HTTP status."""
    numeric = error.get("code") if isinstance(error.get("code"), int) else None
    effective = status if status is not None else numeric
    code, retryable = status_kind(effective) if effective is not None else (UNKNOWN, False)
    vendor_code = _vendor_code(error)
    for key in _vendor_keys(error):
        if key in _VENDOR_KINDS:
            # A generic vendor "server error" does not blur a precise status (503 → overloaded).
            if _VENDOR_KINDS[key][0] != UNKNOWN or effective is None:
                code, retryable = _VENDOR_KINDS[key]
            break
    if effective in (401, 403):
        code, retryable = (
            AUTHENTICATION,
            False,
        )  # whatever type the body gives (OpenAI: invalid_request_error)
    message = _error_message(error)
    if code == INVALID_REQUEST and _CONTEXT_PATTERNS.search(message):
        code, retryable = CONTEXT_TOO_LONG, False
    retryable = _should_retry_header(headers, retryable)
    text = f"{vendor} error"
    if effective is not None:
        text += f" {effective}"
    if vendor_code:
        text += f" ({vendor_code})"
    secrets = list(secrets)  # used three times below; a generator would be spent after one
    text = redact(f"{text}: {message}", secrets)[:MAX_MESSAGE_CHARS]
    request_id = (headers or {}).get("request-id") or (headers or {}).get("x-request-id")
    return AdapterError(
        text,
        code,
        effective,
        retryable,
        retry_after=retry_after(headers or {}, error),
        # Both are the vendor's words too (a body or header may echo the key): they are
        # stored with the message and shown in logs, so they get the message's redaction.
        vendor_code=redact_field(vendor_code, secrets),
        request_id=redact_field(request_id, secrets),
    )


def scrub(exc: ProviderError, secrets: Iterable[str | None]) -> ProviderError:
    """``exc`` with ``secrets`` redacted from its message, vendor code and request id (for
    errors classified where the key was not at hand: a vendor's error event mid-stream)."""
    secrets = list(secrets)
    exc.message = redact(exc.message, secrets)
    exc.args = (exc.message,)
    exc.vendor_code = redact_field(exc.vendor_code, secrets)
    exc.request_id = redact_field(exc.request_id, secrets)
    return exc


def redact_field(value: str | None, secrets: Iterable[str | None]) -> str | None:
    """A short vendor-given field, redacted and bounded like the message."""
    # Redacted before it is cut, so a cut never leaves the start of a secret behind.
    return redact(str(value), secrets)[:MAX_FIELD_CHARS] if value else None


def from_response(
    vendor: str, status: int, body: bytes, headers: Mapping[str, str], secrets: Iterable[str | None]
) -> AdapterError:
    """Classify a non-2xx HTTP response from its status, headers and (JSON or text) body."""
    payload: Any = None
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        payload = None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # Gemini's JSON-array stream wraps errors in a list
    error: Mapping[str, Any]
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        if "request_id" in payload and "request-id" not in headers:
            headers = {**headers, "request-id": str(payload["request_id"])}
    else:
        text = body.decode("utf-8", "replace").strip()
        error = {"message": text[:500] or httpx.codes.get_reason_phrase(status)}
    return classify(vendor, status, error, headers=headers, secrets=secrets)


def from_transport(
    vendor: str, exc: httpx.HTTPError, secrets: Iterable[str | None]
) -> AdapterError:
    """A connection-level failure: timeouts, refused connections, cut streams."""
    detail = redact(str(exc) or type(exc).__name__, secrets)
    if isinstance(exc, EgressRefused):
        # The platform refused, not the vendor: no retry can change the answer.
        return AdapterError(
            f"{vendor}: {detail}", INVALID_REQUEST, retryable=False, vendor_code=EGRESS_REFUSED
        )
    if isinstance(exc, httpx.ReadTimeout):
        return AdapterError(f"{vendor}: the response timed out ({detail})", TIMEOUT, retryable=True)
    if isinstance(exc, httpx.RemoteProtocolError):
        return AdapterError(
            f"{vendor}: the connection closed before the response was complete ({detail})",
            NETWORK,
            retryable=True,
        )
    return AdapterError(
        f"{vendor}: network error ({type(exc).__name__}: {detail})", NETWORK, retryable=True
    )


def incomplete_stream(vendor: str, terminal: str) -> AdapterError:
    """The byte stream ended without the vendor's terminal event: a truncated reply."""
    return AdapterError(
        f"{vendor}: the stream ended before {terminal}; the response is incomplete",
        NETWORK,
        retryable=True,
    )


def malformed(vendor: str, what: str) -> AdapterError:
    """The vendor sent something we cannot read (not JSON, wrong shape)."""
    return AdapterError(f"{vendor}: malformed response ({what})", UNKNOWN, retryable=True)


# --- helpers -------------------------------------------------------------------------------


def _vendor_keys(error: Mapping[str, Any]) -> list[str]:
    keys: list[str] = []
    code = error.get("code")
    if isinstance(code, str):
        keys.append(code)
    details = error.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("error_code"), str):
        keys.append(details["error_code"])  # Anthropic spend limits
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, Mapping) and isinstance(detail.get("reason"), str):
            keys.append(detail["reason"])
    for name in ("type", "status"):
        if isinstance(error.get(name), str):
            keys.append(error[name])
    return keys


def _vendor_code(error: Mapping[str, Any]) -> str | None:
    keys = _vendor_keys(error)
    return keys[0] if keys else None


def _error_message(error: Mapping[str, Any]) -> str:
    message = str(error.get("message") or "").strip() or "no message"
    metadata = error.get("metadata")
    if isinstance(metadata, Mapping):
        # OpenRouter: "Provider returned error" says little; the upstream text says why.
        raw = metadata.get("raw")
        if raw:
            message += f" — {raw if isinstance(raw, str) else json.dumps(raw)}"
        if metadata.get("provider_name"):
            message += f" [provider: {metadata['provider_name']}]"
    return message


def _should_retry_header(headers: Mapping[str, str] | None, default: bool) -> bool:
    """Honour ``x-should-retry`` (OpenAI and Anthropic send it to override the status)."""
    value = (headers or {}).get("x-should-retry", "").strip().lower()
    if value == "true":
        return True
    if value == "false":
        return False
    return default


def retry_after(headers: Mapping[str, str], error: Mapping[str, Any] | None = None) -> float | None:
    """The delay the vendor asked for, in seconds, or ``None``."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        seconds = _parse_retry_after(value)
        if seconds is not None:
            return seconds
    return _google_retry_delay(error or {})


def _parse_retry_after(value: str) -> float | None:
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _google_retry_delay(error: Mapping[str, Any]) -> float | None:
    """Gemini puts the delay in ``details[].RetryInfo.retryDelay`` ("34.4s"), not in a header."""
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        if not isinstance(detail, Mapping):
            continue
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(float(delay[:-1]), 0.0)
            except ValueError:
                return None
    return None
