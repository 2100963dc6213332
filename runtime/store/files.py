"""Thread file system helpers shared by the stores: path normalization, globs, grep.

Paths are normalized the reference's way: a leading ``/``, no trailing ``/``,
no empty or ``.`` segments, and ``..`` resolved against the segments before
it. A ``..`` that would climb above the root is refused (``FilePathError``)
rather than clamped, so a traversal attempt is visible to the caller.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.store.protocol import FileRecord

ROOT = "/"
DIRECTORY_MIME = "inode/directory"
PATH_MAX = 1024
# ``C:\x``, ``c:/x``: a Windows drive would be a plain segment here, but it is always a
# client's mistake or a probe, so it is refused like traversal.
_DRIVE = re.compile(r"^[A-Za-z]:(?:[\\/]|$)")
_SURROGATE = re.compile("[\ud800-\udfff]")
NAME_MAX = 255


class FilePathError(ValueError):
    """A path that cannot name an entry of the thread's file system."""


def normalize_path(path: str) -> str:
    """``'a//b/./c/../d/'`` → ``'/a/b/d'``; ``FilePathError`` for a path above the root."""
    if "\x00" in path:
        raise FilePathError("Path may not contain NUL characters.")
    if _SURROGATE.search(path):
        # Not replaced like other stored text (runtime/store/storable.py): another name is
        # another file.
        raise FilePathError("Path may not contain lone UTF-16 surrogates.")
    if len(path) > PATH_MAX:
        raise FilePathError(f"Path is longer than {PATH_MAX} characters.")
    if _DRIVE.match(path):
        raise FilePathError(f"Path may not name a drive: {path}")
    parts: list[str] = []
    for segment in path.replace("\\", "/").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                raise FilePathError(f"Path escapes the thread's root directory: {path}")
            parts.pop()
            continue
        if len(segment) > NAME_MAX:
            raise FilePathError(f"A path segment is longer than {NAME_MAX} characters.")
        parts.append(segment)
    return posixpath.join(ROOT, *parts)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex for a glob: ``**`` any depth, ``*`` within a segment, ``?`` one char.

    Absolute patterns match from the root; relative ones match at any depth
    (the reference's ``find`` does the same).
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out)
    prefix = "" if pattern.startswith("/") else "(?:.*/)?"
    return re.compile(f"^{prefix}{body}$" if pattern.startswith("/") else f"^/?{prefix}{body}$")


def glob_match(pattern: str, path: str) -> bool:
    """Whether normalized ``path`` matches ``pattern`` (see ``glob_regex``)."""
    return glob_regex(pattern).match(path) is not None


TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/typescript",
        "application/sql",
        "application/graphql",
        "application/x-sh",
    }
)


def is_text_mime(mime_type: str) -> bool:
    """Text files are the ones ``grep`` searches (``text/*`` and a few application types)."""
    base = mime_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in TEXT_APPLICATION_TYPES or base.endswith("+json")


def grep_lines(pattern: re.Pattern[str], text: str, limit: int) -> list[tuple[int, str]]:
    """``(line number, line)`` of up to ``limit`` lines of ``text`` matching ``pattern``."""
    hits: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            hits.append((number, line))
            if len(hits) >= limit:
                break
    return hits


# --- errors ------------------------------------------------------------------------------


class DirectoryNotEmptyError(OSError):
    """``rmdir``/``unlink`` of a directory that still has entries."""


class FileTooLargeError(ValueError):
    """A write larger than the store's maximum file size (nothing is kept)."""


# --- chunking ------------------------------------------------------------------------------

#: The reference's chunk size: files above it are stored (and streamed) in pieces of this size.
CHUNK_SIZE = 1_835_008  # 1.75 MiB
#: The largest file a store accepts unless configured otherwise.
MAX_FILE_SIZE = 1024 * 1024 * 1024


def chunk_count(size: int, chunk_size: int) -> int:
    """How many chunks a file of ``size`` bytes is read in (an empty file is one empty chunk)."""
    return max(1, -(-size // chunk_size))


class _Chunker:
    """The state of re-cutting one stream: full chunks out as pieces come in."""

    def __init__(self, chunk_size: int, max_size: int) -> None:
        self.chunk_size, self.max_size = chunk_size, max_size
        self.buffer = bytearray()
        self.total = 0
        self.emitted = False

    def feed(self, piece: bytes) -> Iterator[bytes]:
        """Take ``piece``; yield the chunks it completes, one at a time (one held at once)."""
        self.total += len(piece)
        if self.total > self.max_size:
            raise FileTooLargeError(f"File is larger than the limit of {self.max_size} bytes.")
        self.buffer += piece
        while len(self.buffer) >= self.chunk_size:
            self.emitted = True
            yield _take(self.buffer, self.chunk_size)

    def rest(self) -> list[bytes]:
        """The last, shorter chunk (``b""`` when the stream was empty)."""
        return [bytes(self.buffer)] if self.buffer or not self.emitted else []


def rechunk(pieces: Iterable[bytes], chunk_size: int, max_size: int) -> Iterator[bytes]:
    """Re-cut a stream of byte pieces into ``chunk_size`` chunks (the last may be shorter).

    Always yields at least one chunk (``b""`` for an empty stream), holds at most
    one chunk plus one piece, and raises ``FileTooLargeError`` past ``max_size``.
    """
    chunker = _Chunker(chunk_size, max_size)
    for piece in pieces:
        yield from chunker.feed(piece)
    yield from chunker.rest()


def _take(buffer: bytearray, size: int) -> bytes:
    """The first ``size`` bytes, removed from ``buffer`` (one copy, not two)."""
    with memoryview(buffer) as view:
        out = bytes(view[:size])
    del buffer[:size]
    return out


async def arechunk(
    pieces: AsyncIterable[bytes], chunk_size: int, max_size: int
) -> AsyncIterator[bytes]:
    """``rechunk`` for an async source."""
    chunker = _Chunker(chunk_size, max_size)
    async for piece in pieces:
        for chunk in chunker.feed(piece):
            yield chunk
    for chunk in chunker.rest():
        yield chunk


# --- grep ------------------------------------------------------------------------------------

#: Lines longer than this are cut before matching, so one huge line cannot exhaust memory.
GREP_LINE_MAX = 64 * 1024


def compile_grep(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """The compiled regex, or ``ValueError`` with the regex's own complaint."""
    if not pattern:
        raise ValueError("Search pattern is empty.")
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"Invalid regular expression {pattern!r}: {exc}") from None


def grep_chunks(
    pattern: re.Pattern[str], chunks: Iterable[bytes], limit: int
) -> list[tuple[int, str]]:
    """``grep_lines`` over a file read in chunks (UTF-8, undecodable bytes replaced).

    Lines may span chunks; only one chunk and one partial line are held at a time.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    hits: list[tuple[int, str]] = []
    number = 0
    carry = ""
    for chunk in chunks:
        text = carry + decoder.decode(chunk)
        lines = text.split("\n")
        carry = lines.pop()[:GREP_LINE_MAX]
        for line in lines:
            number += 1
            line = line.removesuffix("\r")[:GREP_LINE_MAX]
            if pattern.search(line):
                hits.append((number, line))
                if len(hits) >= limit:
                    return hits
    carry += decoder.decode(b"", final=True)
    if carry:
        number += 1
        if pattern.search(carry):
            hits.append((number, carry.removesuffix("\r")))
    return hits


# --- wire ------------------------------------------------------------------------------------


def file_wire(record: FileRecord) -> dict[str, Any]:
    """The reference's ``FileRecord`` wire shape (``createdAt`` in ms), for events and tools."""
    return {
        "path": record.path,
        "name": record.name,
        "mimeType": record.mime_type,
        "storage": "local",
        "location": None,
        "size": record.size,
        "metadata": dict(record.metadata),
        "isDirectory": record.is_directory,
        "createdAt": record.created_at,
        "width": record.width,
        "height": record.height,
        "isChunked": record.is_chunked,
        "chunkCount": record.chunk_count,
    }


def check_move(src: str, dst: str) -> None:
    """``FilePathError`` for a move no store makes: of the root, onto it, or into itself
    (both paths normalized; what exists is the store's to check)."""
    if ROOT in (src, dst):
        raise FilePathError("The root directory cannot be moved or replaced.")
    if is_under(dst, src):
        raise FilePathError(f"Cannot move {src} into itself ({dst}).")


def moved_path(path: str, src: str, dst: str) -> str:
    """Where ``path`` (``src`` or inside it) lands when ``src`` moves to ``dst``."""
    return dst + path[len(src) :]


def rename_target(path: str, new_name: str) -> str:
    """The path of ``path`` renamed to ``new_name`` in the same directory; a name that is
    not one plain segment (a ``/``, ``..``) is refused, so a rename never moves."""
    if not new_name or new_name in (".", "..") or "/" in new_name or "\\" in new_name:
        raise FilePathError(f"A new name is one path segment, not {new_name!r}.")
    return normalize_path(posixpath.join(posixpath.dirname(path), new_name))


def is_under(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or inside it (both normalized)."""
    return directory == ROOT or path == directory or path.startswith(directory + "/")


def type_matches(is_directory: bool, wanted: str) -> bool:
    """``find``'s type filter: ``'file'``, ``'directory'`` or ``'all'``."""
    return wanted == "all" or (wanted == "directory") == is_directory
