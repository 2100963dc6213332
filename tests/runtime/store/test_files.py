"""Thread file system helpers: path normalization (traversal), globs, grep, text detection."""

from __future__ import annotations

import re

import pytest

from runtime.store.files import FilePathError, glob_match, grep_lines, is_text_mime, normalize_path


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("a", "/a"),
        ("/a/b/", "/a/b"),
        ("a//b/./c", "/a/b/c"),
        ("/a/b/../c", "/a/c"),
        ("a\\b", "/a/b"),
        ("/", "/"),
        ("", "/"),
        ("/a/..", "/"),
    ],
)
def test_paths_are_normalized(raw: str, normalized: str) -> None:
    assert normalize_path(raw) == normalized


@pytest.mark.parametrize("raw", ["..", "/../etc/passwd", "a/../../b", "/a/b/../../../c", "a\x00b"])
def test_traversal_above_the_root_is_refused(raw: str) -> None:
    with pytest.raises(FilePathError):
        normalize_path(raw)


def test_traversal_error_is_a_value_error_naming_the_path() -> None:
    with pytest.raises(ValueError, match="escapes the thread's root directory: ../x"):
        normalize_path("../x")


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("*.txt", "/notes/a.txt", True),  # relative: any depth
        ("/*.txt", "/notes/a.txt", False),  # absolute: from the root, one segment
        ("/*.txt", "/a.txt", True),
        ("/notes/**", "/notes/x/y.md", True),
        ("/notes/**/*.md", "/notes/y.md", True),
        ("/notes/?.md", "/notes/ab.md", False),
        ("a.[ch]", "/a.c", False),  # brackets are literal
    ],
)
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert glob_match(pattern, path) is hit


def test_grep_lines_numbers_and_limit() -> None:
    text = "alpha\nbeta\nalphabet\nalpine"
    assert grep_lines(re.compile("alp"), text, limit=2) == [(1, "alpha"), (3, "alphabet")]


def test_text_mime_types() -> None:
    assert is_text_mime("text/plain; charset=utf-8") and is_text_mime("application/json")
    assert not is_text_mime("image/png") and is_text_mime("application/ld+json")
