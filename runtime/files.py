"""Thread file system helpers shared by the stores: path normalization, globs, grep.

Paths are normalized the reference's way: a leading ``/``, no trailing ``/``,
no empty or ``.`` segments, and ``..`` resolved against the segments before
it. A ``..`` that would climb above the root is refused (``FilePathError``)
rather than clamped, so a traversal attempt is visible to the caller.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

ROOT = "/"
DIRECTORY_MIME = "inode/directory"


class FilePathError(ValueError):
    """A path that cannot name an entry of the thread's file system."""


def normalize_path(path: str) -> str:
    """``'a//b/./c/../d/'`` → ``'/a/b/d'``; ``FilePathError`` for a path above the root."""
    if "\x00" in path:
        raise FilePathError("Path may not contain NUL characters.")
    parts: list[str] = []
    for segment in path.replace("\\", "/").split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                raise FilePathError(f"Path escapes the thread's root directory: {path}")
            parts.pop()
            continue
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
