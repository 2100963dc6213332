"""Gemini's own tools (``google_search`` grounding, ``code_execution``): sent, recorded,
sent back.

- ``provider:google_search`` goes out as ``{googleSearch: {}}``, ``provider:code_execution``
  as ``{codeExecution: {}}``, beside any ``functionDeclarations``.
- ``groundingMetadata`` (the searches, their sources, and ``groundingSupports`` spans)
  becomes ``ProviderToolDone`` + ``WebSearchDone`` and ``CitationsFound``. Gemini's segment
  offsets count UTF-8 bytes of the answer text; they are converted to characters.
- ``executableCode`` / ``codeExecutionResult`` parts become ``ProviderToolDone``s; the next
  turn must carry them back in order with their ``thoughtSignature``s, so a reply that ran
  code keeps its parts in ``provider_data["google"]["parts"]``.
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
from runtime.providers.base import INVALID_REQUEST, ProviderError, StreamEvent

NATIVE = {"google_search": "googleSearch", "code_execution": "codeExecution"}


def gemini_tools(choices: list[ProviderToolChoice]) -> list[dict[str, Any]]:
    """The prompt's provider tools as entries of Gemini's ``tools`` list."""
    out: list[dict[str, Any]] = []
    for choice in choices:
        native = NATIVE.get(choice.name)
        if native is None:
            raise ProviderError(
                f"Gemini does not run a tool named '{choice.name}' "
                "(it offers google_search and code_execution).",
                INVALID_REQUEST,
            )
        out.append({native: {}})
    return out


def byte_to_char(text: str, byte_offset: int) -> int:
    """The character offset in ``text`` of a UTF-8 byte offset (Gemini's segment indexes)."""
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


class GeminiToolLog:
    """Follows a response's parts: the answer text (for offsets), code runs, and the
    parts to send back."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.parts: list[dict[str, Any]] = []
        self.pending_code: dict[str, dict[str, Any]] = {}
        self.ran_code = False
        self.grounded = False
        self.count = 0

    def part(self, part: dict[str, Any]) -> list[StreamEvent]:
        """Any answer part (not a thought): kept for the echo; code parts recorded."""
        self.parts.append(dict(part))
        if isinstance(part.get("text"), str):
            self.text.append(part["text"])
            return []
        code = part.get("executableCode")
        if isinstance(code, dict):
            self.ran_code = True
            self.pending_code[str(code.get("id") or len(self.pending_code))] = code
            return []
        result = part.get("codeExecutionResult")
        if isinstance(result, dict):
            self.ran_code = True
            # A streamed result may come without the id: it answers the oldest open run.
            key = str(result.get("id") or next(iter(self.pending_code), self.count))
            self.count += 1
            return [_code_run(self.pending_code.pop(key, {}), result, key)]
        return []

    def grounding(self, meta: Any) -> list[StreamEvent]:
        """A candidate's ``groundingMetadata``: the searches run and the answer's sources."""
        if not isinstance(meta, dict) or self.grounded:
            return []
        queries = [str(q) for q in meta.get("webSearchQueries") or []]
        chunks = [c.get("web") or {} for c in meta.get("groundingChunks") or []]
        sources = [
            {"type": "url", "url": str(w.get("uri", "")), "title": w.get("title")}
            for w in chunks
            if isinstance(w, dict) and w.get("uri")
        ]
        if not queries and not sources:
            return []
        self.grounded = True
        tool_id = f"google_search_{self.count}"
        self.count += 1
        actions = [{"type": "search", "query": q, "sources": sources} for q in queries] or [
            {"type": "search", "sources": sources}
        ]
        record = ProviderExecutedToolResult(
            id=tool_id,
            name="google_search",
            provider="google",
            result={"actions": actions, "input": {"queries": queries}, "results": sources},
        )
        events: list[StreamEvent] = [
            ProviderToolDone(record),
            WebSearchDone(tool_id, {"status": "completed", "actions": actions}),
        ]
        citations = self._supports(meta.get("groundingSupports") or [], chunks)
        if citations:
            events.append(CitationsFound(citations))
        return events

    def _supports(self, supports: list[Any], chunks: list[dict[str, Any]]) -> list[Citation]:
        text = "".join(self.text)
        out = []
        for support in supports:
            if not isinstance(support, dict):
                continue
            segment = support.get("segment") or {}
            start = byte_to_char(text, int(segment.get("startIndex") or 0))
            end = byte_to_char(text, int(segment.get("endIndex") or 0))
            for index in support.get("groundingChunkIndices") or []:
                if not isinstance(index, int) or not 0 <= index < len(chunks):
                    continue
                web = chunks[index]
                if not web.get("uri"):
                    continue
                out.append(
                    Citation(
                        url=str(web["uri"]),
                        title=web.get("title"),
                        start=start,
                        end=end,
                        cited_text=segment.get("text"),
                    )
                )
        return out

    def provider_data(self) -> dict[str, Any]:
        """The parts to send back next turn, when code ran (they must go back in order)."""
        return {"parts": self.parts} if self.ran_code else {}


def _code_run(code: dict[str, Any], result: dict[str, Any], key: str) -> ProviderToolDone:
    outcome = str(result.get("outcome", ""))
    record = ProviderExecutedToolResult(
        id=str(result.get("id") or code.get("id") or f"code_execution_{key}"),
        name="code_execution",
        provider="google",
        status="completed" if outcome == "OUTCOME_OK" else "failed",
        result={
            "input": {"code": code.get("code", ""), "language": code.get("language")},
            "output": str(result.get("output") or ""),
        },
        metadata={"outcome": outcome},
    )
    return ProviderToolDone(record)


def echo_parts(message: dict[str, Any], stored: Any, text: str) -> list[dict[str, Any]] | None:
    """The model turn as Gemini sent it (its stored ``parts``) when they still match the
    message (same text, same function calls); ``None``: rebuild it instead."""
    if not isinstance(stored, list) or not stored:
        return None
    parts = [p for p in stored if isinstance(p, dict)]
    stored_text = "".join(str(p.get("text", "")) for p in parts if isinstance(p.get("text"), str))
    stored_calls = {
        str((p.get("functionCall") or {}).get("id")) for p in parts if p.get("functionCall")
    }
    calls = {str(c.get("id")) for c in message.get("tool_calls") or []}
    if stored_text != text or stored_calls != calls:
        return None
    return [dict(p) for p in parts]
