"""The JSON of the OpenAI-compatible API (``/v1``): OpenAI's objects, built from our turns.

Chat Completions (``chat.completion``, ``chat.completion.chunk``), Responses (``response``
and its stream events) and models (``model``), in the shapes OpenAI's client libraries
parse. Ours on top, documented in docs/api.md: ``usage.cost`` (USD, what the turn's LLM
requests cost by our prices) and ``thread_id``-bearing ids (``response_id``).
"""

from __future__ import annotations

from typing import Any

import orjson

from agents_app.models import Agent
from agents_app.orchestration.openai_turns import Turn
from agents_app.services.doors.openai_compat import (
    OpenAIError,
    Usage,
    completion_id,
    response_id,
)

OWNED_BY = "standard-agents-studio"


def encode(value: Any) -> bytes:
    return orjson.dumps(value)


def sse(value: Any, event: str | None = None) -> bytes:
    """One server-sent event (``event:`` named for the Responses stream)."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(value) + b"\n\n"


DONE = b"data: [DONE]\n\n"


# --- models -----------------------------------------------------------------------------------


def model(agent: Agent) -> dict[str, Any]:
    return {
        "id": agent.name,
        "object": "model",
        "created": int(agent.created_at.timestamp()),
        "owned_by": OWNED_BY,
        # Ours: what the studio's agent picker shows.
        "title": agent.title or agent.name,
        "description": agent.description or "",
    }


def models(agents: list[Agent]) -> dict[str, Any]:
    return {"object": "list", "data": [model(a) for a in agents]}


# --- usage ------------------------------------------------------------------------------------


def chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "cost": usage.cost,
    }


def responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
        "cost": usage.cost,
    }


# --- Chat Completions -------------------------------------------------------------------------


def chat_completion(turn: Turn, text: str, usage: Usage) -> dict[str, Any]:
    return {
        "id": completion_id(turn.thread_id, turn.question_id),
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": chat_usage(usage),
        "system_fingerprint": None,
    }


def chat_chunk(
    turn: Turn,
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: Usage | None = None,
) -> dict[str, Any]:
    """A ``chat.completion.chunk``; with ``usage`` the last one (no choices), as OpenAI sends
    it for ``stream_options.include_usage``."""
    chunk: dict[str, Any] = {
        "id": completion_id(turn.thread_id, turn.question_id),
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "system_fingerprint": None,
    }
    if usage is not None:
        chunk["choices"] = []
        chunk["usage"] = chat_usage(usage)
        return chunk
    chunk["choices"] = [
        {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    ]
    if turn.ask.include_usage:
        chunk["usage"] = None
    return chunk


# --- Responses --------------------------------------------------------------------------------


def output_message(message_id: str, text: str, *, done: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{message_id.replace('-', '')}",
        "type": "message",
        "status": "completed" if done else "in_progress",
        "role": "assistant",
        "content": [output_text(text)] if done else [],
    }


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def response(
    turn: Turn,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None = None,
    error: OpenAIError | None = None,
) -> dict[str, Any]:
    previous = turn.ask.previous
    return {
        "id": response_id(turn.thread_id, turn.question_id),
        "object": "response",
        "created_at": turn.created,
        "status": status,
        "model": turn.model,
        "output": output,
        "usage": responses_usage(usage) if usage is not None else None,
        "error": {"code": error.code, "message": error.message} if error is not None else None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": False,
        "previous_response_id": (
            response_id(previous.thread_id, previous.message_id) if previous else None
        ),
        "store": True,
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "none",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
    }


class ResponseEvents:
    """The Responses stream's events, numbered (``sequence_number``) as they are made; one
    output message per reply the agent writes."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self._open: tuple[str, str] | None = None  # the reply being written: (id, text)

    def _event(self, kind: str, **fields: Any) -> bytes:
        value = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return sse(value, kind)

    def started(self) -> list[bytes]:
        snapshot = response(self.turn, status="in_progress", output=[])
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=snapshot),
        ]

    def delta(self, message_id: str, text: str) -> list[bytes]:
        events = []
        if self._open is None or self._open[0] != message_id:
            events += self.close()
            self._open = (message_id, "")
            item = output_message(message_id, "", done=False)
            events.append(
                self._event("response.output_item.added", output_index=len(self.output), item=item)
            )
            events.append(
                self._event(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=len(self.output),
                    content_index=0,
                    part=output_text(""),
                )
            )
        self._open = (message_id, self._open[1] + text)
        events.append(
            self._event(
                "response.output_text.delta",
                item_id=f"msg_{message_id.replace('-', '')}",
                output_index=len(self.output),
                content_index=0,
                delta=text,
                logprobs=[],
            )
        )
        return events

    def close(self) -> list[bytes]:
        """End the reply being written (its text is final)."""
        if self._open is None:
            return []
        message_id, text = self._open
        self._open = None
        item = output_message(message_id, text, done=True)
        index = len(self.output)
        self.output.append(item)
        return [
            self._event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            ),
            self._event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=output_text(text),
            ),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def completed(self, usage: Usage) -> list[bytes]:
        events = self.close()
        final = response(self.turn, status="completed", output=self.output, usage=usage)
        return [*events, self._event("response.completed", response=final)]

    def failed(self, error: OpenAIError) -> list[bytes]:
        events = self.close()
        failed = response(self.turn, status="failed", output=self.output, error=error)
        return [
            *events,
            self._event("error", code=error.code, message=error.message, param=error.param),
            self._event("response.failed", response=failed),
        ]
