"""Parsed text split into chunks that respect headings, pages and sentence ends.

A parser (``agents_app/services/knowledge/parsing.py``) turns a document into ``Section``s:
text under one heading path, on one page. A chunk never spans two sections (so its heading
and page say where all of it is), is made of whole sentences up to about ``target`` characters
(a single longer sentence is cut at word boundaries), and begins with the last sentences of
the chunk before it, up to ``overlap`` characters, so a passage cut in two is still found whole
in one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# About 200 tokens for multilingual-e5-small, which reads at most 512: room for the heading
# line the embedding text adds, and short enough that one chunk says one thing.
TARGET_CHARS = 800
OVERLAP_CHARS = 120

# A sentence ends at . ! ? (or their CJK forms), possibly followed by closing quotes or
# brackets, then whitespace; a blank line ends a paragraph.
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[.!?。！？][\"'”’)\]])\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Section:
    """Text under one heading path (outermost first), on one page (None: not paged)."""

    text: str
    headings: tuple[str, ...] = ()
    page: int | None = None


@dataclass(frozen=True)
class Chunk:
    """One chunk: its place in the document, its text, and where it is."""

    ordinal: int
    text: str
    headings: tuple[str, ...] = ()
    page: int | None = None

    @property
    def heading_path(self) -> str:
        """The headings as people read them: ``Guide › Returns``."""
        return " › ".join(self.headings)


def merge_sections(sections: Iterable[Section]) -> list[Section]:
    """Adjacent sections under the same headings on the same page, joined as paragraphs;
    sections with no text dropped."""
    out: list[Section] = []
    for s in sections:
        if not s.text.strip():
            continue
        if out and (out[-1].headings, out[-1].page) == (s.headings, s.page):
            out[-1] = Section(out[-1].text + "\n\n" + s.text, s.headings, s.page)
        else:
            out.append(s)
    return out


def sentences(text: str) -> list[str]:
    """``text`` as sentences, whitespace inside each collapsed; paragraph ends are ends too."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        for piece in _SENTENCE_END.split(paragraph.strip()):
            piece = _SPACE.sub(" ", piece).strip()
            if piece:
                out.append(piece)
    return out


def _cut_long(sentence: str, target: int) -> list[str]:
    """A sentence longer than ``target`` cut at word boundaries (a word longer than that, hard)."""
    out: list[str] = []
    current = ""
    for word in sentence.split(" "):
        while len(word) > target:
            if current:
                out.append(current)
                current = ""
            out.append(word[:target])
            word = word[target:]
        if current and len(current) + 1 + len(word) > target:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        out.append(current)
    return out


def _pieces(text: str, target: int, overlap: int) -> list[str]:
    units = [u for s in sentences(text) for u in _cut_long(s, target)]
    out: list[str] = []
    current: list[str] = []
    size = 0
    fresh = False  # whether ``current`` holds anything beyond the carried overlap
    for unit in units:
        if current and fresh and size + 1 + len(unit) > target:
            out.append(" ".join(current))
            current, size = _tail(current, overlap)
            fresh = False
        current.append(unit)
        size += len(unit) + (1 if size else 0)
        fresh = True
    if current and fresh:
        out.append(" ".join(current))
    return out


def _tail(units: list[str], overlap: int) -> tuple[list[str], int]:
    """The last whole sentences of ``units`` that fit in ``overlap`` characters."""
    kept: list[str] = []
    size = 0
    for unit in reversed(units):
        if size + len(unit) + (1 if kept else 0) > overlap:
            break
        kept.insert(0, unit)
        size += len(unit) + (1 if len(kept) > 1 else 0)
    return kept, size


def chunk_sections(
    sections: Iterable[Section], target: int = TARGET_CHARS, overlap: int = OVERLAP_CHARS
) -> list[Chunk]:
    """The document's chunks, numbered from 0 in reading order."""
    chunks: list[Chunk] = []
    for section in merge_sections(sections):
        for text in _pieces(section.text, target, overlap):
            chunks.append(Chunk(len(chunks), text, section.headings, section.page))
    return chunks
