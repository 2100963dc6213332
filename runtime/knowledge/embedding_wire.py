"""The embeddings APIs' wire shapes: requests built and answers read, no I/O
(``agents_app/services/knowledge/provider_embeddings.py`` sends them; docs/knowledge.md).

- OpenAI-compatible: ``POST {base}/embeddings`` with ``{"model", "input": [...]}``; the answer
  is ``{"data": [{"index", "embedding": [...]}], "usage": {"prompt_tokens", ...}}``.
- Gemini: ``POST {base}/models/{model}:batchEmbedContents`` with ``{"requests": [{"model":
  "models/<id>", "content": {"parts": [{"text"}]}, "taskType"}]}``; the answer is
  ``{"embeddings": [{"values": [...]}]}`` and carries no token count (``usage`` is then
  estimated, and says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class WireError(ValueError):
    """The answer is not the documented shape; the message says what is wrong."""


@dataclass(frozen=True)
class WireRequest:
    path: str  # appended to the base URL
    body: dict[str, Any]


@dataclass(frozen=True)
class WireAnswer:
    vectors: list[list[float]]  # one per input, in input order
    tokens: int
    tokens_reported: bool  # False: the vendor gave no count and ``tokens`` is estimated


def openai_request(model_id: str, texts: list[str]) -> WireRequest:
    return WireRequest("/embeddings", {"model": model_id, "input": texts})


def openai_answer(data: Any, count: int) -> WireAnswer:
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list) or len(rows) != count:
        raise WireError(f"expected {count} embeddings in 'data'")
    ordered = sorted(rows, key=lambda r: r.get("index", 0) if isinstance(r, dict) else 0)
    vectors = [_floats(r.get("embedding") if isinstance(r, dict) else None) for r in ordered]
    usage = data.get("usage") or {}
    tokens = usage.get("prompt_tokens", usage.get("total_tokens"))
    if isinstance(tokens, int):
        return WireAnswer(vectors, tokens, True)
    return WireAnswer(vectors, 0, False)


def gemini_request(model_id: str, texts: list[str], *, query: bool) -> WireRequest:
    name = model_id if model_id.startswith("models/") else f"models/{model_id}"
    task = "RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT"
    requests = [
        {"model": name, "content": {"parts": [{"text": t}]}, "taskType": task} for t in texts
    ]
    return WireRequest(f"/{name}:batchEmbedContents", {"requests": requests})


def gemini_answer(data: Any, texts: list[str]) -> WireAnswer:
    rows = data.get("embeddings") if isinstance(data, dict) else None
    if not isinstance(rows, list) or len(rows) != len(texts):
        raise WireError(f"expected {len(texts)} embeddings in 'embeddings'")
    vectors = [_floats(r.get("values") if isinstance(r, dict) else None) for r in rows]
    return WireAnswer(vectors, estimated_tokens(texts), False)


def estimated_tokens(texts: list[str]) -> int:
    """About four characters a token (the vendors' own rule of thumb for English)."""
    return sum((len(t) + 3) // 4 for t in texts)


def _floats(values: Any) -> list[float]:
    if not isinstance(values, list) or not values:
        raise WireError("an embedding is not a list of numbers")
    if not all(isinstance(v, int | float) for v in values):
        raise WireError("an embedding is not a list of numbers")
    return [float(v) for v in values]
