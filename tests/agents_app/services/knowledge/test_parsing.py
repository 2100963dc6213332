"""Parsing real small documents of every format we read into sections with their headings
and pages (no database)."""

from __future__ import annotations

import pytest

from agents_app.services.knowledge.parsing import (
    UnreadableDocument,
    document_format,
    parse_document,
)
from runtime.knowledge.chunking import Section, chunk_sections
from tests.agents_app.services.knowledge.sample_files import docx_bytes, pdf_bytes


def test_pdf_pages_keep_their_numbers() -> None:
    data = pdf_bytes(
        [["Welcome to the handbook."], ["Holidays are booked in the portal."], ["Refunds (any)."]]
    )
    sections = parse_document(data, "handbook.pdf", "application/pdf")
    assert [s.page for s in sections] == [1, 2, 3]
    assert "Holidays are booked in the portal." in sections[1].text
    assert "Refunds (any)." in sections[2].text
    assert {c.page for c in chunk_sections(sections)} == {1, 2, 3}


def test_docx_headings_come_from_the_paragraph_styles() -> None:
    data = docx_bytes(
        [
            ("h1", "Handbook"),
            ("p", "Read this first."),
            ("h2", "Holidays"),
            ("p", "Book holidays in the portal."),
            ("h2", "Expenses"),
            ("p", "Keep every receipt."),
        ]
    )
    sections = parse_document(data, "handbook.docx", "")
    assert [(s.headings, s.text) for s in sections] == [
        (("Handbook",), "Read this first."),
        (("Handbook", "Holidays"), "Book holidays in the portal."),
        (("Handbook", "Expenses"), "Keep every receipt."),
    ]


def test_html_drops_scripts_and_styles_and_follows_headings() -> None:
    html = b"""<html><head><title>T</title><style>p{color:red}</style></head><body>
    <script>var secret = "do not index";</script>
    <h1>Guide</h1><p>Intro text.</p>
    <h2>Returns</h2><p>Send it back <b>within</b> thirty days.</p><ul><li>Keep the box.</li></ul>
    <h1>Other</h1><div>Last words.</div></body></html>"""
    sections = [s for s in parse_document(html, "guide.html", "text/html") if s.text.strip()]
    text = " ".join(s.text for s in sections)
    assert "do not index" not in text and "color" not in text
    chunks = chunk_sections(sections)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ("Guide", "Intro text."),
        ("Guide › Returns", "Send it back within thirty days. Keep the box."),
        ("Other", "Last words."),
    ]


def test_markdown_headings_and_code() -> None:
    md = "# Guide\n\nIntro.\n\n## Setup\n\nRun this:\n\n```\nmake install\n```\n\n# FAQ\n\nAsk us."
    chunks = chunk_sections(parse_document(md.encode(), "guide.md", ""))
    assert [(c.heading_path, c.text) for c in chunks] == [
        ("Guide", "Intro."),
        ("Guide › Setup", "Run this: make install"),
        ("FAQ", "Ask us."),
    ]


def test_plain_text_and_formats() -> None:
    assert parse_document("Just text.".encode("cp1252"), "notes.txt") == [Section("Just text.")]
    assert parse_document(b"N\x00UL gone.", "nul.txt") == [Section("NUL gone.")]
    assert document_format("a.PDF", "") == "pdf"
    assert document_format("upload", "text/markdown; charset=utf-8") == "markdown"
    assert document_format("a.exe", "application/x-msdownload") is None


def test_unreadable_documents_say_why_in_words() -> None:
    with pytest.raises(UnreadableDocument, match="not a format we read: use PDF, DOCX"):
        parse_document(b"MZ...", "tool.exe", "application/x-msdownload")
    with pytest.raises(UnreadableDocument, match="could not be read as DOCX"):
        parse_document(b"not a zip file", "broken.docx", "")
