"""What OpenAI's provider-executed tools leave in a response, as engine events.

Responses output items (``web_search_call``, ``code_interpreter_call``,
``file_search_call``, ``image_generation_call``) become ``ProviderToolDone`` (and
``WebSearchDone`` for searches); text annotations (Responses ``url_citation`` /
``file_citation`` / ``container_file_citation``, Chat's nested ``url_citation``) become
``Citation``s. Nothing here runs a tool.

Offsets: OpenAI's ``start_index`` / ``end_index`` (and ``file_citation.index``) index
the characters of the one ``output_text`` part they belong to, as the SDKs slice them
(Python ``str`` indices; the recordings are ASCII, where code points and bytes agree).
Each is shifted by where that part starts in the text the adapter emitted, so a
citation indexes the stored assistant text.
"""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import (
    Citation,
    ProviderExecutedToolResult,
    ProviderToolDone,
    ToolStatus,
    WebSearchDone,
)
from runtime.providers.base import StreamEvent

PROVIDER = "openai"
TOOL_ITEMS = {
    "web_search_call": "web_search",
    "code_interpreter_call": "code_interpreter",
    "file_search_call": "file_search",
    "image_generation_call": "image_generation",
}


def _status(item: dict[str, Any]) -> ToolStatus:
    status = item.get("status")
    if status in ("completed", "in_progress"):
        return status  # type: ignore[return-value]
    if status in ("failed", "incomplete"):
        return "failed"
    return "completed"


def _search_action(action: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": str(action.get("type") or "search")}
    for key in ("query", "url", "pattern"):
        if isinstance(action.get(key), str):
            out[key] = action[key]
    sources = [
        {"type": str(s.get("type") or "url"), "url": s["url"], "title": s.get("title")}
        for s in action.get("sources") or []
        if isinstance(s, dict) and isinstance(s.get("url"), str)
    ]
    if sources:
        out["sources"] = sources
    return out


def _tool_result(name: str, item: dict[str, Any]) -> dict[str, Any]:
    """The spec's ``result`` keys for one tool item (bulky image bytes left out)."""
    if name == "web_search":
        raw = item.get("action")
        action: dict[str, Any] = raw if isinstance(raw, dict) else {}
        queries = action.get("queries") or ([action["query"]] if action.get("query") else [])
        return {
            "actions": [_search_action(action)] if action else [],
            "input": {"queries": queries},
        }
    if name == "code_interpreter":
        outputs = [o for o in item.get("outputs") or [] if isinstance(o, dict)]
        logs = "".join(str(o.get("logs") or "") for o in outputs if o.get("type") == "logs")
        artifacts = [
            {"type": "image", "url": o["url"]}
            for o in outputs
            if o.get("type") == "image" and isinstance(o.get("url"), str)
        ]
        out: dict[str, Any] = {
            "input": {"code": item.get("code") or "", "container_id": item.get("container_id")},
            "output": logs,
        }
        if artifacts:
            out["artifacts"] = artifacts
        return out
    if name == "file_search":
        return {
            "input": {"queries": list(item.get("queries") or [])},
            "results": [
                {k: r.get(k) for k in ("file_id", "filename", "score", "text")}
                for r in item.get("results") or []
                if isinstance(r, dict)
            ],
        }
    # image_generation: the image itself arrives as an ImageDelta and is stored as a file.
    details = {k: item[k] for k in ("size", "quality", "background", "output_format") if k in item}
    out = {"input": {"revised_prompt": item.get("revised_prompt")}}
    if details:
        out["artifacts"] = [{"type": "image", "metadata": details}]
    return out


def tool_item_events(item: dict[str, Any]) -> list[StreamEvent]:
    """``ProviderToolDone`` (+ ``WebSearchDone``) for a finished tool output item."""
    name = TOOL_ITEMS.get(str(item.get("type")))
    if name is None:
        return []
    call_id = str(item.get("id") or "")
    result = _tool_result(name, item)
    tool = ProviderExecutedToolResult(call_id, name, PROVIDER, _status(item), result)
    events: list[StreamEvent] = [ProviderToolDone(tool)]
    if name == "web_search":
        events.append(
            WebSearchDone(
                call_id, {"id": call_id, "status": tool.status, "actions": result["actions"]}
            )
        )
    return events


def citations(annotations: Any, text: str, base: int) -> list[Citation]:
    """Citations of one text part's ``annotations``, offsets shifted by ``base`` (where the
    part starts in the emitted text). Chat nests the fields under ``url_citation``."""
    out: list[Citation] = []
    for raw in annotations or []:
        if not isinstance(raw, dict):
            continue
        kind = str(raw.get("type"))
        nested = raw.get(kind)
        fields: dict[str, Any] = nested if isinstance(nested, dict) else raw
        start, end = fields.get("start_index"), fields.get("end_index")
        if kind == "file_citation" and isinstance(fields.get("index"), int):
            start = end = fields["index"]
        if not (isinstance(start, int) and isinstance(end, int)):
            start = end = None
        if kind == "url_citation" and isinstance(fields.get("url"), str):
            url, title = fields["url"], fields.get("title")
        elif kind in ("file_citation", "container_file_citation") and fields.get("file_id"):
            url, title = f"openai-file:{fields['file_id']}", fields.get("filename")
        else:
            continue
        if start is None or end is None:
            out.append(Citation(url=url, title=title))
            continue
        cited = text[start:end] if end > start else None
        out.append(Citation(url, title, base + start, base + end, cited))
    return out
