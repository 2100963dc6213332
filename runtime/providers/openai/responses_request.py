"""The OpenAI Responses API request body (``POST {base}/responses``).

The neutral (chat-shaped) history becomes ``input`` items:
- user / system messages: ``{role, content}``, content a string or ``input_text`` /
  ``input_image`` (``image_url`` a data or https URL, ``detail: auto``) / ``input_file``
  (``file_data`` data URL + ``filename``) parts;
- an assistant message: its output items as the vendor returned them, in order, when its
  ``provider_data["openai"]["items"]`` holds them (reasoning with ``encrypted_content``,
  provider tool calls, the message, the function calls), else a plain assistant message
  plus one ``function_call`` item per tool call;
- a tool message: ``function_call_output`` (``output`` a string, or ``input_text`` /
  ``input_image`` / ``input_file`` parts when the result carries images).

``store: false`` always (the runtime keeps the history; nothing is left at OpenAI), so
reasoning models get ``include: ["reasoning.encrypted_content"]`` and their reasoning
items are sent back on the next request.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.providers.adapter import (
    content_parts,
    document_of,
    image_of,
    is_media_part,
    joined_text,
    provider_data,
    schema_name,
    strict_compatible,
    tool_choice_name,
)
from runtime.providers.base import ProviderRequest, ToolSchema
from runtime.providers.openai.offers import responses_includes, responses_tool

# Model ids that reason (their reasoning items round-trip; others refuse the include).
_REASONING_MODEL = re.compile(r"^(openai/)?(o\d|gpt-5|codex)")
ENCRYPTED_REASONING = "reasoning.encrypted_content"


def is_reasoning_request(request: ProviderRequest) -> bool:
    """Whether the model reasons: the prompt asks for it, the model id says so, or the
    history already holds its reasoning items."""
    if request.reasoning is not None or _REASONING_MODEL.match(request.model):
        return True
    return any(
        item.get("type") == "reasoning"
        for m in request.messages
        if m.get("role") == "assistant"
        for item in provider_data(m, "openai").get("items") or []
        if isinstance(item, dict)
    )


# --- content -----------------------------------------------------------------------------------


def input_part(part: dict[str, Any]) -> dict[str, Any]:
    """One neutral content part as a Responses input part."""
    if image_of(part) is not None:  # a data or https URL, sent as it is
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, dict) else spec
        return {"type": "input_image", "image_url": url, "detail": _detail(part)}
    document = document_of(part)
    if document is not None:
        file = part.get("file") or {}
        return {
            "type": "input_file",
            "file_data": file.get("file_data"),
            "filename": str(file.get("filename") or "document.pdf"),
        }
    return {"type": "input_text", "text": str(part.get("text") or "")}


def _detail(part: dict[str, Any]) -> str:
    spec = part.get("image_url")
    detail = spec.get("detail") if isinstance(spec, dict) else None
    return detail if detail in ("low", "high", "auto") else "auto"


def _user_content(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content or ""
    return [input_part(p) for p in content_parts(content)]


def tool_output(message: dict[str, Any]) -> Any:
    """A tool result's ``output``: its text, or parts when it carries images/documents."""
    content = message.get("content")
    parts = content_parts(content)
    if not any(is_media_part(p) for p in parts):
        return joined_text(content)
    return [input_part(p) for p in parts if is_media_part(p) or p.get("text")]


# --- assistant turns -----------------------------------------------------------------------------


def _function_call(call: dict[str, Any], item_id: str | None = None) -> dict[str, Any]:
    function = call.get("function") or {}
    out: dict[str, Any] = {"type": "function_call"}
    if item_id:
        out["id"] = item_id
    out.update(
        {
            "call_id": call.get("id", ""),
            "name": function.get("name", ""),
            "arguments": function.get("arguments") or "{}",
        }
    )
    return out


def _message_item(text: str, item_id: str | None = None) -> dict[str, Any]:
    if item_id is None:
        return {"role": "assistant", "content": text}
    return {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _generated_images(content: Any) -> list[str]:
    """Base64 of the assistant's generated images still sent as pixels, in order."""
    images = [image_of(p) for p in content_parts(content)]
    return [i.data for i in images if i is not None and i.data]


def assistant_items(message: dict[str, Any], model: str = "") -> list[dict[str, Any]]:
    """An assistant message as input items (see the module docstring).

    The stored items are replayed only to the model that produced them (encrypted reasoning
    is that model's; a fallback to another model gets the plain form) and only when all of
    them can be: an image generation call needs its image back (the generated file, while it
    is among the recent images). Otherwise the message goes as plain text and calls without
    item ids (a reasoning item must never be sent without the item that followed it).
    """
    text = joined_text(message.get("content"), media_as_text=True)
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    data = provider_data(message, "openai")
    same_model = data.get("model") in (None, "", model)
    stored = [i for i in data.get("items") or [] if isinstance(i, dict)] if same_model else []
    replayed = (
        _replay(stored, joined_text(message.get("content")), calls, message) if stored else None
    )
    if replayed is not None:
        return replayed
    items = [_message_item(text)] if text else []
    return items + [_function_call(c) for c in calls]


def _replay(
    stored: list[dict[str, Any]],
    text: str,
    calls: list[dict[str, Any]],
    message: dict[str, Any],
) -> list[dict[str, Any]] | None:
    images = _generated_images(message.get("content"))
    by_call = {str(c.get("id")): c for c in calls}
    out: list[dict[str, Any]] = []
    text_sent = False
    for item in stored:
        kind = item.get("type")
        if kind == "message":
            if not text_sent:
                out.append(_message_item(text, str(item.get("id") or "")))
                text_sent = True
        elif kind == "function_call":
            call = by_call.pop(str(item.get("call_id")), None)
            if call is not None:
                out.append(_function_call(call, str(item.get("id") or "") or None))
        elif kind == "image_generation_call":
            if not images:
                return None
            out.append({**item, "result": images.pop(0)})
        else:
            out.append(dict(item))
    if text and not text_sent:
        out.append(_message_item(text))
    out.extend(_function_call(c) for c in by_call.values())
    return out


# --- the body ----------------------------------------------------------------------------------


def input_items(request: ProviderRequest) -> list[dict[str, Any]]:
    """The history as ``input`` items."""
    items: list[dict[str, Any]] = []
    for message in request.messages:
        role = message.get("role", "user")
        if role == "assistant":
            items.extend(assistant_items(message, request.model))
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id", ""),
                    "output": tool_output(message),
                }
            )
        else:
            items.append({"role": role, "content": _user_content(message.get("content"))})
    return items


def function_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    """Function tools, flat. ``strict`` is explicit: the Responses API defaults it to true,
    which refuses schemas with optional or open properties."""
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": strict_compatible(t.parameters),
        }
        for t in tools
    ]


def responses_tool_choice(choice: Any) -> Any:
    """``auto`` / ``none`` / ``required`` as they are; a named tool as ``{type, name}``."""
    name = tool_choice_name(choice)
    if name is not None:
        return {"type": "function", "name": name}
    return choice if choice in ("auto", "none", "required") else "auto"


def text_format(schema: dict[str, Any]) -> dict[str, Any]:
    """Structured output as ``text.format`` (flat, unlike Chat's ``json_schema`` nesting)."""
    return {
        "type": "json_schema",
        "name": schema_name(schema),
        "schema": schema,
        "strict": strict_compatible(schema),
    }


def responses_body(request: ProviderRequest, *, stream: bool) -> dict[str, Any]:
    """The whole request body."""
    body: dict[str, Any] = {"model": request.model, "input": input_items(request)}
    if request.system:
        body["instructions"] = request.system
    tools = function_tools(request.tools)
    tools += [t for t in map(responses_tool, request.provider_tools) if t is not None]
    if tools:
        body["tools"] = tools
        body["tool_choice"] = responses_tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    include = responses_includes(request.provider_tools)
    if is_reasoning_request(request):
        include.insert(0, ENCRYPTED_REASONING)
    if include:
        body["include"] = include
    config = request.reasoning
    if config is not None and (config.effort or not config.exclude):
        reasoning: dict[str, Any] = {}
        if config.effort:
            reasoning["effort"] = config.effort
        if not config.exclude:
            reasoning["summary"] = "auto"  # the readable summary, streamed as reasoning
        body["reasoning"] = reasoning
    if request.response_schema is not None:
        body["text"] = {"format": text_format(request.response_schema)}
    if request.max_output_tokens:
        body["max_output_tokens"] = request.max_output_tokens
    body["store"] = False
    body["stream"] = stream
    return body
