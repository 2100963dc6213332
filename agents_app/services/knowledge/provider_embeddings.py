"""Embeddings from a provider's API, for a knowledge base whose ``embedding_model`` names a
model definition (docs/knowledge.md, "The embedding model").

The model definition gives the provider, the provider's model id, the base URL and the input
price. The key is the provider's usual env value (``OPENAI_API_KEY``, ``GOOGLE_API_KEY``, a
defined provider's ``key_env``), read from the instance's env values, then the server's
environment: ingestion runs for no one in particular, so a person's own key is not used. The
egress key rule applies as for chat (docs/security.md): that key goes to the vendor's own
host, or to a base URL a superuser allowed on that model definition; the egress policy
checks the address (``runtime.core.egress.sync_client``). No vendor SDK: httpx.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

import httpx

from agents_app.models import EnvValue, LanguageModel
from runtime.core import egress
from runtime.knowledge import embedding_wire as wire
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.openrouter.provider import OpenRouterProvider
from runtime.providers.registry import ADAPTERS, KEY_NAMES, provider_label, sync_defined

if TYPE_CHECKING:
    import numpy as np

TIMEOUT = httpx.Timeout(60.0, connect=10.0)
GEMINI = "google"


class EmbeddingUnavailable(Exception):
    """The provider could not embed; the message says why, in words, for staff (it may name
    the env value to set, never its value)."""


@dataclass(frozen=True)
class EmbeddingUsage:
    """One embeddings request, for the cost accounting (a Log row, a document's total)."""

    provider: str
    model: str  # the model definition's name
    model_id: str
    inputs: int
    tokens: int
    tokens_reported: bool
    cost: Decimal
    cost_known: bool
    latency_ms: int


def embedding_api(provider: str) -> str | None:
    """``"openai"`` or ``"gemini"``: which embeddings API ``provider`` has; ``None``: none."""
    if provider == GEMINI:
        return "gemini"
    sync_defined()
    adapter = ADAPTERS.get(provider)
    if adapter is not None and issubclass(adapter, OpenAIProvider | OpenRouterProvider):
        return "openai"
    return None


def model_problem(row: LanguageModel) -> str | None:
    """Why model definition ``row`` cannot embed, in a sentence; ``None`` when it can."""
    return provider_problem(row.name, row.provider)


def provider_problem(name: str, provider: str) -> str | None:
    """Why model definition ``name`` of ``provider`` cannot embed; ``None`` when it can."""
    if embedding_api(provider) is None:
        return (
            f"Model '{name}' uses {provider_label(provider)}, which has no embeddings API "
            "here: use an OpenAI-compatible provider or Google Gemini."
        )
    return None


def _base_url(row: LanguageModel) -> str:
    adapter = ADAPTERS.get(row.provider)
    return (row.base_url or (adapter.default_base_url if adapter else "")).rstrip("/")


def _key(row: LanguageModel, base_url: str) -> str:
    name = KEY_NAMES.get(row.provider, "")
    entry = EnvValue.objects.filter(scope="instance", key=name).first() if name else None
    key = entry.value if entry is not None else os.environ.get(name, "") if name else ""
    if not key:
        raise EmbeddingUnavailable(
            f"No API key for {provider_label(row.provider)}'s embeddings: set the env value "
            f"{name or 'for its key'} (the instance's env values or the server's environment)."
        )
    allowed = egress.is_official_host(row.provider, base_url) or row.send_instance_key_to_base_url
    if not allowed:
        where = "instance's" if entry is not None else "server's"
        raise EmbeddingUnavailable(
            f"The {where} {name} was not sent to {egress.host_of(base_url)}: it is not "
            f"{provider_label(row.provider)}'s own host and no superuser has allowed sending "
            f"the instance key to this base URL (model '{row.name}')."
        )
    return key


def embed_remote(
    row: LanguageModel, texts: list[str], *, query: bool
) -> tuple[np.ndarray, EmbeddingUsage]:
    """``texts`` embedded by ``row``'s provider: L2-normalised float32 rows, and the usage."""
    import numpy as np  # on use: its import is 0.13 s of every process's start

    base_url = _base_url(row)
    key = _key(row, base_url)
    gemini = embedding_api(row.provider) == "gemini"
    request = (
        wire.gemini_request(row.model, texts, query=query)
        if gemini
        else wire.openai_request(row.model, texts)
    )
    headers = {"x-goog-api-key": key} if gemini else {"authorization": f"Bearer {key}"}
    started = time.monotonic()
    data = _post(row, base_url + request.path, request.body, headers)
    try:
        answer = wire.gemini_answer(data, texts) if gemini else wire.openai_answer(data, len(texts))
    except wire.WireError as exc:
        raise EmbeddingUnavailable(
            f"{provider_label(row.provider)}'s embeddings answer was not understood: {exc}."
        ) from None
    vectors = np.asarray(answer.vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
    price = row.input_price
    return vectors, EmbeddingUsage(
        provider=row.provider,
        model=row.name,
        model_id=row.model,
        inputs=len(texts),
        tokens=answer.tokens,
        tokens_reported=answer.tokens_reported,
        cost=(Decimal(answer.tokens) * price / 1_000_000) if price is not None else Decimal(0),
        cost_known=price is not None,
        latency_ms=int((time.monotonic() - started) * 1000),
    )


def _post(row: LanguageModel, url: str, body: dict, headers: dict[str, str]) -> object:
    label = provider_label(row.provider)
    try:
        with egress.sync_client(timeout=TIMEOUT) as client:
            response = client.post(url, json=body, headers=headers)
    except egress.EgressRefused as exc:
        raise EmbeddingUnavailable(f"{label}'s embeddings API was not reached: {exc}") from None
    except httpx.HTTPError as exc:
        raise EmbeddingUnavailable(
            f"{label}'s embeddings API could not be reached ({type(exc).__name__})."
        ) from None
    if response.status_code >= 400:
        raise EmbeddingUnavailable(
            f"{label}'s embeddings API answered {response.status_code}: {_vendor_message(response)}"
        )
    try:
        return response.json()
    except ValueError:
        raise EmbeddingUnavailable(f"{label}'s embeddings answer is not JSON.") from None


def _vendor_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return response.reason_phrase or "an error"
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:300] if message else response.reason_phrase or "an error"
