"""Where a log's error came from (spec 0.2.0 ``ErrorOrigin``): ``runtime``,
``provider:<name>``, ``tool:<name>`` or ``hook:<id>``, for triage without reading the text.

The code that records an error says its origin where it knows it (a tool call's log, a
failed request's); ``with_origin`` gives every other log that carries an error one from
its kind, so no error leaves the recorder without an origin.
"""

from __future__ import annotations

import dataclasses

from runtime.store.protocol import LogRecord

HOOK_ERROR = "hook_error"


def provider_origin(provider: str) -> str:
    """The origin of a failed request to ``provider``."""
    return f"provider:{provider}" if provider else "runtime"


def tool_origin(tool_name: str) -> str:
    """The origin of a failed tool call."""
    return f"tool:{tool_name}"


def hook_origin(hook_id: str) -> str:
    """The origin of a hook that raised."""
    return f"hook:{hook_id}"


def origin_of(log: LogRecord) -> str:
    """The origin a log's error has by its kind (a hook's failure log names the hook id
    in ``tool_name``)."""
    if log.error_type == HOOK_ERROR and log.tool_name:
        return hook_origin(log.tool_name)
    if log.kind == "tool" and log.tool_name:
        return tool_origin(log.tool_name)
    if log.kind == "llm" and log.error_type != "interrupted":
        return provider_origin(log.provider)
    return "runtime"


def with_origin(log: LogRecord) -> LogRecord:
    """``log`` with an origin when it carries an error and none was said; else itself."""
    if log.error_origin or not (log.error or log.error_type):
        return log
    return dataclasses.replace(log, error_origin=origin_of(log))
