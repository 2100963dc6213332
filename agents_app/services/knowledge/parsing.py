"""Documents read into ``Section``s (text under a heading path, on a page) with well-kept
libraries: pypdf (PDF, one section per page), python-docx (DOCX, headings from the paragraph
styles), Beautiful Soup (HTML, scripts and styles dropped, headings from ``h1``–``h6``),
markdown-it-py (Markdown, headings from the parse) and plain text. The chunking is
``runtime/knowledge/chunking.py``'s.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import PurePath

from runtime.knowledge.chunking import Section

PDF, DOCX, HTML, MARKDOWN, TEXT = "pdf", "docx", "html", "markdown", "text"
_BY_EXTENSION = {
    ".pdf": PDF,
    ".docx": DOCX,
    ".html": HTML,
    ".htm": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".txt": TEXT,
    ".text": TEXT,
}
_BY_TYPE = {
    "application/pdf": PDF,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DOCX,
    "text/html": HTML,
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/plain": TEXT,
}
SUPPORTED = "PDF, DOCX, HTML, Markdown or plain text (.pdf, .docx, .html, .md, .txt)"
_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_HTML_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_HTML_BLOCKS = frozenset(
    [
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "br",
        "tr",
        "table",
        "section",
        "article",
        "blockquote",
        "pre",
        "dd",
        "dt",
        "figcaption",
        "td",
        "th",
    ]
)


class UnreadableDocument(Exception):
    """The document cannot be read; the message says why, in words."""


def document_format(filename: str, content_type: str) -> str | None:
    """Which parser reads the file: by its extension, else by its content type."""
    by_name = _BY_EXTENSION.get(PurePath(filename).suffix.lower())
    return by_name or _BY_TYPE.get(content_type.split(";")[0].strip().lower())


def parse_document(data: bytes, filename: str, content_type: str = "") -> list[Section]:
    """The document's sections in reading order (``UnreadableDocument`` when it cannot be)."""
    kind = document_format(filename, content_type)
    if kind is None:
        raise UnreadableDocument(f"{filename} is not a format we read: use {SUPPORTED}.")
    try:
        # PostgreSQL's text cannot hold NUL, which some PDFs' text layers carry.
        return [
            Section(s.text.replace("\x00", ""), s.headings, s.page) for s in _PARSERS[kind](data)
        ]
    except UnreadableDocument:
        raise
    except Exception as exc:  # each library raises its own kinds for a damaged file
        raise UnreadableDocument(
            f"{filename} could not be read as {kind.upper() if kind != 'markdown' else 'Markdown'}"
            f" ({type(exc).__name__}: {exc})."
        ) from exc


def _text(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _pdf(data: bytes) -> Iterator[Section]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        raise UnreadableDocument("The PDF is encrypted; upload a copy without a password.")
    for number, page in enumerate(reader.pages, start=1):
        yield Section(page.extract_text() or "", (), number)


class _Headings:
    """The heading path as headings of each level arrive."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, str]] = []

    def enter(self, level: int, text: str) -> None:
        self.stack = [(lv, t) for lv, t in self.stack if lv < level]
        if text.strip():
            self.stack.append((level, " ".join(text.split())))

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.stack)


def _docx(data: bytes) -> Iterator[Section]:
    from docx import Document

    document = Document(io.BytesIO(data))
    headings = _Headings()
    for paragraph in document.paragraphs:
        style = paragraph.style.name if paragraph.style is not None else ""
        match = _HEADING_STYLE.match(style or "")
        if match or style == "Title":
            headings.enter(int(match.group(1)) if match else 0, paragraph.text)
        elif paragraph.text.strip():
            yield Section(paragraph.text, headings.path)
    for table in document.tables:  # tables after the running text, a row a paragraph
        rows = [" | ".join(c.text.strip() for c in row.cells) for row in table.rows]
        yield Section("\n\n".join(rows), headings.path)


def _html(data: bytes) -> Iterator[Section]:
    from bs4 import BeautifulSoup, NavigableString, Tag
    from bs4.element import Comment, Doctype, ProcessingInstruction

    soup = BeautifulSoup(_text(data), "html.parser")
    for tag in soup(["script", "style", "noscript", "template", "head", "svg"]):
        tag.decompose()
    headings = _Headings()
    parts: list[str] = []
    for node in soup.descendants:
        if isinstance(node, Tag):
            if node.name in _HTML_HEADINGS:
                yield Section("".join(parts), headings.path)
                parts = []
                headings.enter(_HTML_HEADINGS[node.name], node.get_text(" "))
            elif node.name in _HTML_BLOCKS:
                parts.append("\n\n")
        elif (
            isinstance(node, NavigableString)
            and not isinstance(node, Comment | Doctype | ProcessingInstruction)
            and not any(p.name in _HTML_HEADINGS for p in node.parents)
        ):
            parts.append(str(node))
    yield Section("".join(parts), headings.path)


def _markdown(data: bytes) -> Iterator[Section]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(_text(data))
    headings = _Headings()
    level = 0
    for token in tokens:
        if token.type == "heading_open":
            level = int(token.tag[1])
        elif token.type == "inline" and level:
            headings.enter(level, token.content)
            level = 0
        elif (
            token.type == "inline"
            and token.content.strip()
            or token.type in ("fence", "code_block")
            and token.content.strip()
        ):
            yield Section(token.content, headings.path)


def _plain(data: bytes) -> Iterator[Section]:
    yield Section(_text(data))


_PARSERS = {PDF: _pdf, DOCX: _docx, HTML: _html, MARKDOWN: _markdown, TEXT: _plain}
