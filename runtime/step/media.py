"""Files the model sees: attachment references → image, document or text parts.

Three stages, each where the information it needs is known:

1. ``history.to_llm_messages`` (sync, no I/O) turns a message's attachments into
   ``{"type": "attachment", "attachment": AttachmentRef}`` parts.
2. ``resolve_attachments`` (async, reads the thread file system) replaces them:
   images and PDFs of the newest ``recentImageThreshold`` messages that carry any
   become ``image_url`` / ``file`` parts with inline base64 (data URLs); older ones
   become a text placeholder naming the file (``[Image: name (WxH)]``); other files
   a text reference with name, type, size and path (readable with the file tools).
   Older media are never read, so a long thread costs only its recent images.
3. ``fit_for_model`` (per attempt, because a fallback may be another vendor):
   a model whose capabilities say ``vision: false`` gets a text placeholder instead
   of each image or document; for the others, images larger than the vendor's
   documented limits are downsampled (the stored file is never changed).

Every media part keeps its ``attachment`` key (the reference) so the placeholder
can name the file; adapters send only the vendor's own keys.
"""

from __future__ import annotations

import asyncio
import base64
import io
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from runtime.core.spec import ModelDefinition
from runtime.store import file_images

ReadFile = Callable[[str], Awaitable[bytes | None]]

DOCUMENT_TYPES = ("application/pdf",)
DEFAULT_THRESHOLD = 10


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """A vendor's documented per-image limits (longest side in pixels, bytes of the file)."""

    side: int
    size: int


# Documented limits, with margin:
# - Anthropic: at most 8000 px per side, 2000 px when a request holds more than 20
#   images, 5 MB per image (base64 counted) → 2000 px and 3.75 MB of bytes;
# - OpenAI: 20 MB per image; "high" detail scales into 2048 px → 2048 px;
# - Gemini: a request with inline data is capped at 20 MB; images are scaled to
#   3072 px → 3072 px and 7 MB (room for a few per request);
# - OpenRouter routes to any of them (Anthropic included): Anthropic's limits.
VENDOR_LIMITS: dict[str, ImageLimits] = {
    "anthropic": ImageLimits(2000, 3_750_000),
    "openrouter": ImageLimits(2000, 3_750_000),
    "openai": ImageLimits(2048, 15_000_000),
    "google": ImageLimits(3072, 7_000_000),
}


# --- stage 1: references ----------------------------------------------------------------------


def attachment_part(ref: dict[str, Any]) -> dict[str, Any]:
    """The unresolved part for one ``AttachmentRef``."""
    return {"type": "attachment", "attachment": dict(ref)}


def with_attachments(text: str | None, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content parts: the text (when any), then one reference part per attachment."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    parts.extend(attachment_part(r) for r in refs if isinstance(r, dict))
    return parts


# --- stage 2: resolving -----------------------------------------------------------------------


def _mime(ref: dict[str, Any]) -> str:
    return str(ref.get("mimeType") or ref.get("mime_type") or "application/octet-stream")


def _name(ref: dict[str, Any]) -> str:
    return str(ref.get("name") or ref.get("path") or "file")


def is_media(ref: dict[str, Any]) -> bool:
    """Whether the attachment is sent as pixels or a document (not a text reference)."""
    mime = _mime(ref)
    return file_images.is_raster_image(mime) or mime in DOCUMENT_TYPES


def _media_refs(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(
        isinstance(p, dict) and p.get("type") == "attachment" and is_media(p["attachment"])
        for p in content
    )


def image_placeholder(ref: dict[str, Any]) -> str:
    """The text standing for an image that is not sent (older than the threshold)."""
    if ref.get("description"):
        return f"[Image: {_name(ref)}: {ref['description']}]"
    if ref.get("width") and ref.get("height"):
        return f"[Image: {_name(ref)} ({ref['width']}x{ref['height']})]"
    return f"[Image: {_name(ref)}]"


def file_reference(ref: dict[str, Any]) -> str:
    """The text standing for a file the model reads with the file tools."""
    size = ref.get("size")
    details = _mime(ref) + (f", {size} bytes" if isinstance(size, int) else "")
    path = ref.get("path")
    where = f" at {path}" if path else ""
    return f"[Attached file: {_name(ref)} ({details}){where}]"


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def media_part(ref: dict[str, Any], data: bytes) -> dict[str, Any]:
    """The inline part for a media attachment's bytes (``image_url`` or ``file``)."""
    mime = _mime(ref)
    if mime in DOCUMENT_TYPES:
        file = {"file_data": _data_url(mime, data), "filename": _name(ref)}
        return {"type": "file", "file": file, "attachment": ref}
    return {"type": "image_url", "image_url": {"url": _data_url(mime, data)}, "attachment": ref}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


async def _resolve_part(part: dict[str, Any], recent: bool, read: ReadFile) -> dict[str, Any]:
    ref = part["attachment"]
    if not is_media(ref):
        return _text(file_reference(ref))
    is_image = file_images.is_raster_image(_mime(ref))
    if not recent:
        return _text(image_placeholder(ref) if is_image else file_reference(ref))
    data = await read(str(ref.get("path") or ""))
    if data is None:
        return _text(f"[Missing file: {_name(ref)} is no longer in the thread's file system]")
    return media_part(ref, data)


async def resolve_attachments(
    messages: list[dict[str, Any]], read: ReadFile, threshold: int = DEFAULT_THRESHOLD
) -> list[dict[str, Any]]:
    """``messages`` with every ``attachment`` part resolved (see the module docstring).

    Only the newest ``threshold`` messages carrying images or documents send them
    inline; ``threshold`` 0 sends none.
    """
    # Runs over the whole history at every step: most messages are plain text, told apart
    # without a call.
    carrying = [
        i for i, m in enumerate(messages) if isinstance(m.get("content"), list) and _media_refs(m)
    ]
    recent = set(carrying[len(carrying) - threshold :]) if threshold > 0 else set()
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list) or not any(
            isinstance(p, dict) and p.get("type") == "attachment" for p in content
        ):
            out.append(message)
            continue
        parts = [
            await _resolve_part(p, index in recent, read)
            if isinstance(p, dict) and p.get("type") == "attachment"
            else p
            for p in content
        ]
        out.append({**message, "content": parts})
    return out


# --- stage 3: per model -----------------------------------------------------------------------


def supports_vision(model: ModelDefinition) -> bool:
    """Images are sent unless the model's capabilities say ``supportsImages: false`` (0.1.0:
    ``vision: false``), as the reference decides."""
    return not (model.capabilities is not None and model.capabilities.images is False)


def vision_placeholder(part: dict[str, Any]) -> str:
    """What a model without vision reads instead of an image or document."""
    ref = part.get("attachment") or {}
    kind = "Document" if part.get("type") == "file" else "Image"
    return f"[{kind} omitted: {_name(ref)}; this model does not support vision]"


def _is_inline_media(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image_url", "file")


def media_count(messages: list[dict[str, Any]]) -> int:
    """How many image and document parts ``messages`` hold."""
    return sum(
        1
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if _is_inline_media(p)
    )


async def fit_for_model(
    messages: list[dict[str, Any]], model: ModelDefinition
) -> list[dict[str, Any]]:
    """``messages`` as ``model`` may receive them: placeholders without vision, images
    downsampled to its vendor's limits otherwise. Returns ``messages`` itself when
    nothing changes."""
    vision = supports_vision(model)
    limits = VENDOR_LIMITS.get(model.provider)
    if vision and limits is None:
        return messages
    if not media_count(messages):
        return messages
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(_is_inline_media(p) for p in content):
            out.append(message)
            continue
        parts = []
        for part in content:
            if not _is_inline_media(part):
                parts.append(part)
            elif not vision:
                parts.append(_text(vision_placeholder(part)))
            elif part["type"] == "image_url" and limits is not None:
                parts.append(await _fit_image(part, limits, model.provider))
            else:
                parts.append(part)
        out.append({**message, "content": parts})
    return out


def _too_large(ref: dict[str, Any], data_len: int, limits: ImageLimits) -> bool:
    width, height = ref.get("width"), ref.get("height")
    if isinstance(width, int) and isinstance(height, int) and max(width, height) > limits.side:
        return True
    return data_len * 3 // 4 > limits.size


# Downsampled data URLs by (path, encoded length, vendor); "" marks an image that fits (the
# check decodes it, so it is not repeated on every step). Bounded: entries can be megabytes.
_fitted: OrderedDict[tuple[str, int, str], str] = OrderedDict()
_FITTED_MAX = 32


async def _fit_image(part: dict[str, Any], limits: ImageLimits, vendor: str) -> dict[str, Any]:
    url = str((part.get("image_url") or {}).get("url") or "")
    if not url.startswith("data:"):
        return part
    header, _, encoded = url.partition(",")
    ref = part.get("attachment") or {}
    if not _too_large(ref, len(encoded), limits) and ref.get("width"):
        return part
    key = (str(ref.get("path") or ""), len(encoded), vendor)
    fitted = _fitted.get(key)
    if fitted is None:
        fitted = await asyncio.to_thread(_downsample_url, header, encoded, limits)
        _fitted[key] = fitted
        while len(_fitted) > _FITTED_MAX:
            _fitted.popitem(last=False)
    if not fitted:
        return part
    return {**part, "image_url": {**part["image_url"], "url": fitted}}


def _downsample_url(header: str, encoded: str, limits: ImageLimits) -> str:
    """The data URL within ``limits``, or ``""`` when it already fits or cannot be read."""
    try:
        data = base64.b64decode(encoded)
    except ValueError:
        return ""
    fitted = downsample_to(data, limits)
    return _data_url("image/jpeg", fitted) if fitted is not None else ""


def downsample_to(data: bytes, limits: ImageLimits) -> bytes | None:
    """JPEG bytes within ``limits``, or ``None`` when ``data`` already fits or is unreadable."""
    try:
        with Image.open(io.BytesIO(data)) as probe:
            size = probe.size
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    if max(size) <= limits.side and len(data) <= limits.size:
        return None
    image = file_images.open_image(data)
    if image is None:
        return None
    image.thumbnail((limits.side, limits.side))
    for quality in (85, 70, 55, 40):
        encoded = file_images.encode_jpeg(image, quality)
        if len(encoded) <= limits.size:
            return encoded
    while len(encoded) > limits.size and min(image.size) > 16:
        image = image.resize((max(1, image.width // 2), max(1, image.height // 2)))
        encoded = file_images.encode_jpeg(image, 70)
    return encoded
