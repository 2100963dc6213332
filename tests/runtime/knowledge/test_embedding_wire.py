"""The embeddings APIs' wire shapes (runtime/knowledge/embedding_wire.py): requests as the
vendors document them, answers read in input order, and a malformed answer refused in words
rather than stored as a wrong vector."""

from __future__ import annotations

import pytest

from runtime.knowledge import embedding_wire as wire


def test_openai_request_and_answer_in_input_order_with_the_reported_tokens() -> None:
    request = wire.openai_request("text-embedding-3-small", ["a", "b"])
    assert (request.path, request.body) == (
        "/embeddings",
        {"model": "text-embedding-3-small", "input": ["a", "b"]},
    )
    answer = wire.openai_answer(
        {
            "data": [{"index": 1, "embedding": [0, 1]}, {"index": 0, "embedding": [1, 0]}],
            "usage": {"prompt_tokens": 7, "total_tokens": 7},
        },
        2,
    )
    assert answer == wire.WireAnswer([[1.0, 0.0], [0.0, 1.0]], 7, True)


def test_gemini_request_names_the_task_and_its_answer_estimates_tokens() -> None:
    request = wire.gemini_request("text-embedding-004", ["abcdefgh"], query=True)
    assert request.path == "/models/text-embedding-004:batchEmbedContents"
    assert request.body["requests"][0] == {
        "model": "models/text-embedding-004",
        "content": {"parts": [{"text": "abcdefgh"}]},
        "taskType": "RETRIEVAL_QUERY",
    }
    answer = wire.gemini_answer({"embeddings": [{"values": [0.5, 0.5]}]}, ["abcdefgh"])
    assert (answer.tokens, answer.tokens_reported) == (2, False)


@pytest.mark.parametrize(
    "data",
    [
        {"data": []},
        {"data": [{"index": 0, "embedding": "nope"}]},
        {"data": [{"index": 0, "embedding": []}]},
        ["not", "an", "object"],
    ],
)
def test_a_malformed_openai_answer_is_refused(data: object) -> None:
    with pytest.raises(wire.WireError):
        wire.openai_answer(data, 1)


def test_a_gemini_answer_with_too_few_embeddings_is_refused() -> None:
    with pytest.raises(wire.WireError, match="expected 2 embeddings"):
        wire.gemini_answer({"embeddings": [{"values": [1.0]}]}, ["a", "b"])
