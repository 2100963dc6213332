"""Chunking: chunks keep to one heading path and page, end at sentence ends, stay near the
size target and carry the previous chunk's last sentences (no database)."""

from __future__ import annotations

from runtime.knowledge.chunking import Section, chunk_sections, merge_sections, sentences


def _sentence(i: int) -> str:
    return f"Sentence number {i} says something about refunds and returns."


def test_chunks_end_at_sentence_ends_and_stay_near_the_target() -> None:
    text = " ".join(_sentence(i) for i in range(40))
    chunks = chunk_sections([Section(text, ("Guide",), 2)], target=300, overlap=80)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.text.endswith("returns.")
        assert chunk.text.startswith("Sentence number")
        assert (chunk.headings, chunk.page) == (("Guide",), 2)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_each_chunk_begins_with_the_last_sentences_of_the_one_before() -> None:
    text = " ".join(_sentence(i) for i in range(20))
    chunks = chunk_sections([Section(text)], target=300, overlap=80)
    for before, after in zip(chunks, chunks[1:], strict=False):
        first = sentences(after.text)[0]
        assert before.text.endswith(first)
        assert len(first) <= 80
    # Every sentence of the text is in some chunk.
    joined = " ".join(c.text for c in chunks)
    assert all(_sentence(i) in joined for i in range(20))


def test_a_chunk_never_spans_two_headings_or_two_pages() -> None:
    chunks = chunk_sections(
        [
            Section("Returns are free. Send them back.", ("Guide", "Returns"), 1),
            Section("Shipping takes two days.", ("Guide", "Shipping"), 1),
            Section("Shipping abroad takes a week.", ("Guide", "Shipping"), 2),
        ]
    )
    assert [(c.heading_path, c.page) for c in chunks] == [
        ("Guide › Returns", 1),
        ("Guide › Shipping", 1),
        ("Guide › Shipping", 2),
    ]


def test_adjacent_sections_under_one_heading_are_joined_and_empty_ones_dropped() -> None:
    merged = merge_sections(
        [Section("One.", ("A",)), Section("  "), Section("Two.", ("A",)), Section("Three.", ("B",))]
    )
    assert merged == [Section("One.\n\nTwo.", ("A",)), Section("Three.", ("B",))]


def test_a_sentence_longer_than_the_target_is_cut_at_word_boundaries() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    chunks = chunk_sections([Section(words)], target=120, overlap=0)
    assert all(len(c.text) <= 120 for c in chunks)
    assert " ".join(c.text for c in chunks) == words


def test_sentences_split_at_ends_and_paragraphs() -> None:
    assert sentences('He said "Stop." Then he left!\n\nA new   paragraph') == [
        'He said "Stop."',
        "Then he left!",
        "A new paragraph",
    ]
