"""Responses that carry bytes we did not write: thread files, thumbnails, thread endpoints.

Anyone who can write a thread file (an ordinary user, a tool, the model through a
tool) chooses its bytes and its MIME type, and the studio and the API share one
origin and one session cookie. Served as stored, an HTML, SVG or XML file would run
its script as the admin who opens it. So every such response gets:

- ``X-Content-Type-Options: nosniff``: the browser believes our type, never the bytes;
- ``Content-Security-Policy: sandbox; default-src 'none'; …``: even if rendered, the
  document has an opaque origin (no cookies, no same-origin fetch) and may run nothing;
- ``Content-Disposition: inline`` only for an allow-list of inert types (raster images,
  plain text, PDF); everything else is ``attachment`` (downloaded, never rendered).

The type is read the way a browser reads it (``runtime.core.mime_types.essence``), so rows
stored before types were normalized are served safely too.
"""

from __future__ import annotations

from django.http import HttpResponseBase
from django.utils.http import content_disposition_header

from runtime.core.mime_types import essence, parameter

# Inert when rendered: a browser shows them and runs nothing of theirs on our origin
# (Chromium's PDF viewer runs in its own extension origin).
INLINE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "application/pdf"}
)
# ``sandbox`` (no allow-* flags): opaque origin, no scripts, forms, popups or plugins.
# ``style-src 'unsafe-inline'`` only lets the browser's own image and text viewers style
# themselves; ``default-src 'none'`` blocks every fetch a rendered document could make.
FILE_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'"
# Chromium's PDF viewer shows nothing in a sandboxed document (tried: a blank viewer), so
# a PDF gets the same fetch policy without ``sandbox``. With nosniff the bytes go only to
# the viewer, which runs in its own (extension) origin, never as our origin's script.
PDF_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def served_type(stored: str) -> str:
    """The ``Content-Type`` header for a stored type: its essence, plus the charset of text."""
    kind = essence(stored)
    charset = parameter(stored, "charset") if kind.startswith("text/") else None
    return f"{kind}; charset={charset}" if charset else kind


def is_inline(content_type: str) -> bool:
    """Whether a type may be shown in the browser rather than downloaded."""
    return essence(content_type) in INLINE_TYPES


def harden(
    response: HttpResponseBase,
    *,
    filename: str | None = None,
    inline_types: frozenset[str] = INLINE_TYPES,
) -> HttpResponseBase:
    """Set the safe headers on a response carrying someone else's bytes (see the module doc).

    The disposition is ``inline`` only when the response's type is in ``inline_types``; an
    ``attachment`` disposition already set is kept (with its file name).
    """
    kind = essence(response.get("Content-Type"))
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = PDF_CSP if kind == "application/pdf" else FILE_CSP
    inline = kind in inline_types
    plain = "inline" if inline else "attachment"
    if filename:
        response["Content-Disposition"] = content_disposition_header(not inline, filename) or plain
    elif inline or not response.get("Content-Disposition", "").lower().startswith("attachment"):
        response["Content-Disposition"] = plain
    return response
