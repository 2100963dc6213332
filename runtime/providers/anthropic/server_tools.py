"""Anthropic's server tools (``web_search``, code execution): sent, recorded, sent back.

- A prompt's ``provider:web_search`` goes out as ``{type: web_search_20250305, name:
  web_search, …options}``, ``provider:code_execution`` as ``code_execution_20260120``.
- The response's ``server_tool_use`` + ``*_tool_result`` blocks become
  ``ProviderToolDone`` (and ``WebSearchDone`` for a search); text blocks' ``citations``
  (``web_search_result_location``) become ``CitationsFound`` spanning the block, in
  character offsets into the reply's text.
- The next turn must carry the blocks back as they came (``encrypted_content`` and
  ``encrypted_index`` are what lets the model see its earlier search), so a reply that used
  a server tool keeps its whole ordered content in ``provider_data["anthropic"]["blocks"]``
  (text blocks without their ``citations``, as the recorded second turns send them).
Nothing here runs a tool.
"""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import (
    Citation,
    CitationsFound,
    ProviderExecutedToolResult,
    ProviderToolChoice,
    ProviderToolDone,
    WebSearchDone,
)
from runtime.providers import errors
from runtime.providers.base import INVALID_REQUEST, ProviderError, StreamEvent

WEB_SEARCH_TYPE = "web_search_20250305"
CODE_EXECUTION_TYPE = "code_execution_20260120"
_RESULT_SUFFIX = "_tool_result"


def server_tools(choices: list[ProviderToolChoice]) -> list[dict[str, Any]]:
    """The prompt's provider tools in the Messages API's ``tools`` form."""
    out = []
    for choice in choices:
        if choice.name == "web_search":
            options = dict(choice.options)
            if isinstance(options.get("user_location"), dict):
                # The API wants the location's kind; "approximate" is the only one.
                options["user_location"] = {"type": "approximate", **options["user_location"]}
            out.append({"type": WEB_SEARCH_TYPE, "name": "web_search", **options})
        elif choice.name == "code_execution":
            out.append({"type": CODE_EXECUTION_TYPE, "name": "code_execution"})
        else:
            raise ProviderError(
                f"Anthropic does not run a tool named '{choice.name}' "
                "(it offers web_search and code_execution).",
                INVALID_REQUEST,
            )
    return out


def is_server_block(kind: str) -> bool:
    """Whether a content block is a server tool's call or result (sent back, never run)."""
    return kind == "server_tool_use" or kind.endswith(_RESULT_SUFFIX) and kind != "tool_result"


class ServerToolLog:
    """Follows one response's blocks: text offsets, server tool calls and their results,
    and the ordered blocks to send back next turn."""

    def __init__(self) -> None:
        self.offset = 0  # characters of reply text so far
        self.blocks: list[dict[str, Any]] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.used_server_tools = False
        self.container: dict[str, Any] | None = None

    def text(self, block: dict[str, Any], text: str) -> list[StreamEvent]:
        """A finished text block (``text`` is its full text): kept for the echo, its
        citations turned into spans of the reply text."""
        start, self.offset = self.offset, self.offset + len(text)
        self.blocks.append({"type": "text", "text": text})
        citations = [
            _citation(c, start, self.offset)
            for c in block.get("citations") or []
            if isinstance(c, dict) and c.get("url")
        ]
        return [CitationsFound(citations)] if citations else []

    def other(self, block: dict[str, Any]) -> None:
        """A thinking or client ``tool_use`` block, kept in place for the echo."""
        self.blocks.append(block)

    def server(self, block: dict[str, Any]) -> list[StreamEvent]:
        """A ``server_tool_use`` (remembered) or a ``*_tool_result`` (recorded)."""
        self.used_server_tools = True
        self.blocks.append(block)
        if block.get("type") == "server_tool_use":
            self.calls[str(block.get("id", ""))] = block
            return []
        call = self.calls.get(str(block.get("tool_use_id", ""))) or {}
        return tool_events(call, block)

    def provider_data(self, thinking: list[dict[str, Any]]) -> dict[str, Any]:
        """``provider_data["anthropic"]``: thinking always, the ordered blocks and the
        code execution container when a server tool ran."""
        data: dict[str, Any] = {}
        if thinking:
            data["thinking"] = thinking
        if self.used_server_tools:
            data["blocks"] = self.blocks
        if self.container:
            data["container"] = self.container
        return data


def tool_events(call: dict[str, Any], result: dict[str, Any]) -> list[StreamEvent]:
    """The record of one server tool run (``call``: its ``server_tool_use`` block)."""
    tool_id = str(result.get("tool_use_id") or call.get("id") or "")
    content = result.get("content")
    kind = str(result.get("type", ""))
    if kind == "web_search_tool_result":
        return _web_search(tool_id, call, content)
    failed = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    output = content if isinstance(content, dict) else {"content": content}
    record = ProviderExecutedToolResult(
        id=tool_id,
        name="code_execution" if "code_execution" in kind else str(call.get("name") or kind),
        provider="anthropic",
        status="failed" if failed else "completed",
        result={
            "input": dict(call.get("input") or {}),
            "output": _output_text(output),
            "results": [output],
        },
        metadata={"tool": call.get("name"), "result_type": kind},
    )
    return [ProviderToolDone(record)]


def _web_search(tool_id: str, call: dict[str, Any], content: Any) -> list[StreamEvent]:
    query = str((call.get("input") or {}).get("query", ""))
    if not isinstance(content, list):  # web_search_tool_result_error
        error = content.get("error_code") if isinstance(content, dict) else None
        record = ProviderExecutedToolResult(
            id=tool_id,
            name="web_search",
            provider="anthropic",
            status="failed",
            result={"input": {"query": query}, "output": str(error or "search failed")},
        )
        return [ProviderToolDone(record)]
    found = [r for r in content if isinstance(r, dict) and r.get("url")]
    sources = [{"type": "url", "url": str(r["url"]), "title": r.get("title")} for r in found]
    action = {"type": "search", "query": query, "sources": sources}
    results = [
        {"url": str(r["url"]), "title": r.get("title"), "page_age": r.get("page_age")}
        for r in found
    ]
    record = ProviderExecutedToolResult(
        id=tool_id,
        name="web_search",
        provider="anthropic",
        result={"actions": [action], "input": {"query": query}, "results": results},
    )
    return [
        ProviderToolDone(record),
        WebSearchDone(tool_id, {"status": "completed", "actions": [action]}),
    ]


def _output_text(output: dict[str, Any]) -> str:
    parts = [str(output.get(k) or "") for k in ("stdout", "stderr")]
    return "".join(parts) or str(output.get("content") or "")


def _citation(raw: dict[str, Any], start: int, end: int) -> Citation:
    return Citation(
        url=str(raw.get("url", "")),
        title=raw.get("title"),
        start=start,
        end=end,
        cited_text=raw.get("cited_text"),
    )


def echo_blocks(message: dict[str, Any], stored: Any, text: str) -> list[dict[str, Any]] | None:
    """The assistant turn as the vendor sent it (its stored ``blocks``), when they still
    match the message (same text, same tool calls); ``None``: rebuild it instead."""
    if not isinstance(stored, list) or not stored:
        return None
    blocks = [b for b in stored if isinstance(b, dict)]
    stored_text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    stored_calls = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
    calls = {str(c.get("id")) for c in message.get("tool_calls") or []}
    if stored_text != text or stored_calls != calls:
        return None
    return [dict(b) for b in blocks]


def malformed(detail: str) -> ProviderError:
    return errors.malformed("Anthropic", detail)
