"""The pure parts of automatic retrieval and memory recall: the token budget, the context the
model reads, the latest person message, and recall's fused ranking."""

from __future__ import annotations

from runtime.knowledge.retrieval import Retrieved, context_text, estimate_tokens, within_budget
from runtime.step.knowledge_context import latest_person_text
from runtime.tools.memory_tools import pack, rank, unpack


def _passage(text: str, page: int | None = None) -> Retrieved:
    return Retrieved("handbook", text, "staff", "", page, 0.03, estimate_tokens(text), False)


def test_a_passage_over_what_is_left_is_skipped_and_a_shorter_one_after_it_still_fits() -> None:
    long, longer, short = _passage("a" * 40), _passage("b" * 80), _passage("c" * 8)
    kept = within_budget([long, longer, short], max_tokens=15)
    assert [p.included for p in kept] == [True, False, True]
    text = context_text(kept)
    assert "a" * 40 in text and "b" * 80 not in text and "c" * 8 in text
    assert context_text(within_budget([longer], max_tokens=5)) == ""


def test_the_context_names_the_document_and_page_of_each_passage() -> None:
    (kept,) = within_budget([_passage("Bicycles at weekends.", page=3)], max_tokens=100)
    assert "[1] staff, page 3 (knowledge base handbook)\nBicycles at weekends." in context_text(
        [kept]
    )


def test_the_query_is_the_latest_person_message_text() -> None:
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image"}]},
        {"role": "tool", "content": "{}"},
    ]
    assert latest_person_text(messages) == "second"
    assert latest_person_text([{"role": "assistant", "content": "x"}]) == ""


def test_recall_fuses_words_and_meaning() -> None:
    texts = ["likes green tea", "rides a bicycle", "lives in Paris"]
    vectors = [pack([1.0, 0.0]), pack([0.0, 1.0]), pack([0.7, 0.7])]
    # No word matches "bike", the vector does: meaning finds the bicycle first.
    assert rank("bike", [0.0, 1.0], texts, vectors)[0][0] == 1
    # Without vectors, words alone.
    assert [i for i, _ in rank("Paris", None, texts, vectors)] == [2]
    assert unpack("not base64!") is None and unpack(pack([0.5])) == [0.5]
