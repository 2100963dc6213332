"""MIME types of thread files: one normal form on write (what a browser would read), malformed
types refused, and a lenient reading of whatever is already stored."""

from __future__ import annotations

import pytest

from runtime.core.mime_types import MimeTypeError, essence, normalize_mime_type, parameter


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        (" text/html", "text/html"),
        ("TEXT/HTML", "text/html"),
        ("IMAGE/SVG+XML", "image/svg+xml"),
        ("\tapplication/XML \n", "application/xml"),
        ("Text/Plain ; Charset=UTF-8", "text/plain; charset=UTF-8"),
        ('text/plain; charset="utf-8"', 'text/plain; charset="utf-8"'),
        ("application/vnd.ms-excel", "application/vnd.ms-excel"),
        ("", "application/octet-stream"),
        (None, "application/octet-stream"),
    ],
)
def test_mime_type_variants_a_browser_reads_alike_are_stored_alike(
    raw: str | None, normalized: str
) -> None:
    assert normalize_mime_type(raw) == normalized


@pytest.mark.parametrize(
    "raw",
    [
        "text",
        "text/",
        "/html",
        "text/ html",
        "text/html/x",
        "text/html<script>",
        "text/html\r\nX-Injected: 1",
        "text/html\x00",
        "text/html; charset",
        "text/html; =x",
        "tëxt/html",
        "a/" + "b" * 200,
    ],
)
def test_malformed_mime_types_are_refused(raw: str) -> None:
    with pytest.raises(MimeTypeError):
        normalize_mime_type(raw)


def test_mime_type_error_is_a_value_error() -> None:
    assert issubclass(MimeTypeError, ValueError)


@pytest.mark.parametrize(
    ("stored", "read"),
    [
        (" TEXT/HTML", "text/html"),
        ("image/PNG; x=y", "image/png"),
        ("garbage", "application/octet-stream"),
        ("", "application/octet-stream"),
    ],
)
def test_stored_types_are_read_like_a_browser_reads_them(stored: str, read: str) -> None:
    assert essence(stored) == read


def test_parameters_are_read_unquoted() -> None:
    assert parameter('text/plain; charset="utf-8"', "charset") == "utf-8"
    assert parameter("text/plain", "charset") is None
