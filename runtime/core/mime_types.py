"""MIME types of thread files: one normal form on write, a lenient reading on serve.

A MIME type reaches us from clients (upload headers, JSON ``mimeType``, message
attachments) and from tools. Browsers compare types case-insensitively and ignore
surrounding whitespace, so ``" text/html"`` or ``"IMAGE/SVG+XML"`` *are* HTML and SVG
to them; any check written against the stored text must therefore see one form.
``normalize_mime_type`` gives it (or refuses the value); ``essence`` reads any stored
value (rows written before normalization too) the way a browser would.
"""

from __future__ import annotations

import re

DEFAULT = "application/octet-stream"
MAX_LENGTH = 200

# RFC 6838 restricted names (type and subtype); RFC 9110 tokens and quoted strings (parameters).
_NAME = r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}"
_ESSENCE = re.compile(rf"({_NAME})/({_NAME})")
_TOKEN = r"[a-z0-9!#$%&'*+.^_`|~-]+"
_PARAM = re.compile(rf'\s*({_TOKEN})=({_TOKEN}|"[^"\\\x00-\x1f\x7f]*")\s*', re.IGNORECASE)


class MimeTypeError(ValueError):
    """A MIME type that is not ``type/subtype`` with optional ``; name=value`` parameters."""


def normalize_mime_type(raw: str | None) -> str:
    """``' TEXT/Plain ; Charset=UTF-8'`` → ``'text/plain; charset=UTF-8'``.

    Empty (or ``None``) means ``application/octet-stream``. Type, subtype and parameter
    names are lowercased, whitespace around the parts dropped; anything else that is not a
    well-formed MIME type raises ``MimeTypeError``.
    """
    text = (raw or "").strip()
    if not text:
        return DEFAULT
    if len(text) > MAX_LENGTH:
        raise MimeTypeError(f"MIME type is longer than {MAX_LENGTH} characters.")
    head, *params = text.split(";")
    match = _ESSENCE.fullmatch(head.strip().lower())
    if match is None:
        raise MimeTypeError(f"Invalid MIME type: {text[:60]!r} (expected type/subtype).")
    parts = [f"{match.group(1)}/{match.group(2)}"]
    for param in params:
        found = _PARAM.fullmatch(param)
        if found is None:
            raise MimeTypeError(f"Invalid MIME type parameter: {param.strip()[:60]!r}.")
        parts.append(f"{found.group(1).lower()}={found.group(2)}")
    return "; ".join(parts)


def essence(raw: str | None) -> str:
    """The ``type/subtype`` a browser would read from ``raw`` (lowercase, trimmed), or
    ``application/octet-stream`` when it is not a well-formed MIME type."""
    head = (raw or "").split(";", 1)[0].strip().lower()
    return head if _ESSENCE.fullmatch(head) else DEFAULT


def parameter(raw: str | None, name: str) -> str | None:
    """The value of parameter ``name`` of a normalized type (unquoted), or ``None``."""
    for param in (raw or "").split(";")[1:]:
        found = _PARAM.fullmatch(param)
        if found is not None and found.group(1).lower() == name:
            return found.group(2).strip('"')
    return None
