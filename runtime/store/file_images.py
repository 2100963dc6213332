"""Images in the thread file system: thumbnails, dimensions, and the downsampling of user
image attachments (the reference's rules, see docs/files.md).

Pure functions over bytes (Pillow); callers run them off the event loop. Any image
Pillow cannot read, or one too large to decode safely, is left alone: no thumbnail,
the original bytes kept.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

#: Longest side of a thumbnail, in pixels (JPEG).
THUMBNAIL_SIZE = 256
#: Images above this many pixels are not decoded at all (decompression bombs).
PIXELS_MAX = 50_000_000
#: Images larger than this are not thumbnailed when written (the bytes would be held twice).
THUMBNAIL_INPUT_MAX = 20 * 1024 * 1024

# The reference's attachment rules.
ATTACHMENT_REENCODE_OVER = 2 * 1024 * 1024
ATTACHMENT_TARGET = 1536 * 1024
ATTACHMENT_SIDE_MAX = 4096
ATTACHMENT_INPUT_MAX = 20 * 1024 * 1024
KEPT_FORMATS = ("image/jpeg", "image/png")

_ERRORS = (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, SyntaxError)


@dataclass(slots=True)
class Thumbnail:
    """A JPEG thumbnail and the original image's dimensions."""

    data: bytes
    width: int
    height: int


def is_raster_image(mime_type: str) -> bool:
    """Images Pillow can decode (SVG is text, not a raster)."""
    base = mime_type.split(";", 1)[0].strip().lower()
    return base.startswith("image/") and base != "image/svg+xml"


def _open(data: bytes) -> Image.Image | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > PIXELS_MAX:
                return None
            image.load()
        return ImageOps.exif_transpose(image)
    except (*_ERRORS, Image.DecompressionBombWarning):
        return None


def _rgb(image: Image.Image) -> Image.Image:
    """JPEG has no alpha: flatten transparency onto white."""
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return image.convert("RGB") if image.mode != "RGB" else image


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    _rgb(image).save(out, format="JPEG", quality=quality, optimize=True)
    return out.getvalue()


def make_thumbnail(data: bytes) -> Thumbnail | None:
    """A JPEG of at most ``THUMBNAIL_SIZE`` px per side, or ``None`` when ``data`` is no image."""
    if len(data) > THUMBNAIL_INPUT_MAX:
        return None
    image = _open(data)
    if image is None:
        return None
    width, height = image.size
    try:
        image.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE))
        return Thumbnail(_jpeg(image, 80), width, height)
    except _ERRORS:
        return None


@dataclass(slots=True)
class Downsampled:
    """What to store for an uploaded image attachment."""

    data: bytes
    mime_type: str
    converted: bool


def downsample_attachment(data: bytes, mime_type: str) -> Downsampled:
    """The reference's rule for user image attachments.

    Images over 2 MiB, or in a format other than JPEG/PNG, are re-encoded as JPEG
    of at most 1.5 MiB and 4096 px per side: quality 85, then 75 … 45, then
    halving the size until it fits. Inputs over 20 MiB, and anything that fails
    to decode, are kept as they are.
    """
    unchanged = Downsampled(data, mime_type, False)
    base = mime_type.split(";", 1)[0].strip().lower()
    if not is_raster_image(base) or len(data) > ATTACHMENT_INPUT_MAX:
        return unchanged
    if len(data) <= ATTACHMENT_REENCODE_OVER and base in KEPT_FORMATS:
        return unchanged
    image = _open(data)
    if image is None:
        return unchanged
    try:
        image.thumbnail((ATTACHMENT_SIDE_MAX, ATTACHMENT_SIDE_MAX))
        while True:
            for quality in (85, 75, 65, 55, 45):
                encoded = _jpeg(image, quality)
                if len(encoded) <= ATTACHMENT_TARGET:
                    return Downsampled(encoded, "image/jpeg", True)
            if min(image.size) <= 16:
                return Downsampled(encoded, "image/jpeg", True)
            image = image.resize((max(1, image.width // 2), max(1, image.height // 2)))
    except _ERRORS:
        return unchanged


def open_image(data: bytes) -> Image.Image | None:
    """The decoded image (EXIF orientation applied), or ``None`` when unreadable or too large."""
    return _open(data)


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """``image`` as JPEG (transparency flattened onto white)."""
    return _jpeg(image, quality)
