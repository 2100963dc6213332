"""Tool results (the spec's ``ToolResult``) and how whatever a tool returns becomes one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

SUCCESS_TEXT = "Tool executed successfully"
ERROR_PREFIX = "Failed to execute tool: "


@dataclass(slots=True)
class ToolResult:
    """What a tool produced: ``status``, ``result`` text or ``error`` text, optional attachments.

    ``attachments`` holds new files (``{name, mimeType, data (base64), width?, height?}``,
    stored under ``/attachments/``) or references to existing ones (``{id,
    type:'file', path, name, mimeType, size}``).
    """

    status: Literal["success", "error"] = "success"
    result: str | None = None
    error: str | None = None
    stack: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True for a successful result."""
        return self.status == "success"

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON shape (keys with no value left out)."""
        out: dict[str, Any] = {"status": self.status}
        for key in ("result", "error", "stack"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.attachments:
            out["attachments"] = self.attachments
        return out

    @property
    def content(self) -> str:
        """The text stored in the tool message and shown to the model."""
        if self.ok:
            return self.result if self.result not in (None, "") else SUCCESS_TEXT
        return ERROR_PREFIX + (self.error or "unknown error")


def success(result: str | None = None) -> ToolResult:
    """A successful result."""
    return ToolResult("success", result=result)


def failure(error: str, stack: str | None = None) -> ToolResult:
    """An error result (the model sees it; the session goes on)."""
    return ToolResult("error", error=error, stack=stack)


def result_from_dict(data: dict[str, Any]) -> ToolResult:
    """A ``ToolResult`` from its dict shape (as ``before_store_tool_result`` returns it)."""
    status: Literal["success", "error"] = "error" if data.get("status") == "error" else "success"
    return ToolResult(
        status=status,
        result=_text_or_none(data.get("result")),
        error=_text_or_none(data.get("error")),
        stack=_text_or_none(data.get("stack")),
        attachments=list(data.get("attachments") or []),
    )


def normalize(value: Any) -> ToolResult:
    """Turn what a tool returned into a ``ToolResult``.

    ``ToolResult`` as is; ``None`` → success; a string → success with that text;
    a dict with ``status`` → that result; a dict with MCP-style ``content``
    parts → their text joined by newlines; anything else → pretty JSON.
    """
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return success()
    if isinstance(value, str):
        return success(value)
    if isinstance(value, dict) and value.get("status") in ("success", "error"):
        return result_from_dict(value)
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return _from_content_parts(value)
    if isinstance(value, BaseModel):
        return success(value.model_dump_json(indent=2))
    return success(json.dumps(value, indent=2, default=str))


def _from_content_parts(value: dict[str, Any]) -> ToolResult:
    texts = [
        p.get("text", "")
        for p in value["content"]
        if isinstance(p, dict) and p.get("type") == "text"
    ]
    images = [
        {
            "name": f"image-{i}",
            "mimeType": p.get("mimeType", "image/png"),
            "data": p.get("data", ""),
        }
        for i, p in enumerate(value["content"])
        if isinstance(p, dict) and p.get("type") == "image"
    ]
    text = "\n".join(texts)
    if value.get("isError"):
        return ToolResult("error", error=text, attachments=images)
    return ToolResult("success", result=text, attachments=images)


def _text_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)
