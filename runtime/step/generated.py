"""Images a model generates: stored as thread files and attached to its message.

Each ``ImageDelta`` is written under ``/attachments/`` as it arrives (so the chat
can show it before the response ends) and becomes an ``AttachmentRef`` on the
assistant message (``generated: true``). An image given only as a URL, or whose
data is not a readable image, is not stored; the message says why in its
``metadata.image_errors``.
"""

from __future__ import annotations

import base64
import binascii
import io
import mimetypes
from typing import Any

from PIL import Image, UnidentifiedImageError

from runtime.core.messages import new_id, now_ms
from runtime.providers.base import ImageDelta
from runtime.state import ThreadState


def _name(image: ImageDelta) -> str:
    ext = (mimetypes.guess_extension(image.media_type) or ".png").lstrip(".")
    return f"generated-{image.index + 1}.{'jpg' if ext in ('jpe', 'jpeg') else ext}"


def decode_image(data: str) -> bytes:
    """The bytes of a base64 image; ``ValueError`` when it is not base64 of an image."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the image data is not valid base64") from None
    try:
        with Image.open(io.BytesIO(raw)) as probe:
            probe.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise ValueError("the image data is not a readable image") from None
    return raw


async def save_generated_image(
    state: ThreadState, image: ImageDelta, errors: list[str]
) -> dict[str, Any] | None:
    """Store ``image`` in the thread file system; its ``AttachmentRef``, or ``None``
    (with the reason appended to ``errors``)."""
    name = _name(image)
    if image.data is None:
        errors.append(f"{name}: only a URL was returned ({image.url}); not stored")
        return None
    try:
        data = decode_image(image.data)
    except ValueError as exc:
        errors.append(f"{name}: {exc}")
        return None
    path = f"/attachments/{now_ms()}-{new_id()[:8]}.{name.rsplit('.', 1)[-1]}"
    record = await state.write_file(path, data, image.media_type)
    ref: dict[str, Any] = {
        "id": new_id(),
        "type": "file",
        "path": record.path,
        "name": name,
        "mimeType": image.media_type,
        "size": record.size,
        "generated": True,
    }
    if record.width is not None:
        ref["width"], ref["height"] = record.width, record.height
    if image.revised_prompt:
        ref["description"] = image.revised_prompt
    return ref
