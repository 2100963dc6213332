"""User image attachments are downsampled as the reference does (POST /messages)."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agents_app.models import QueuedMessage, ThreadFile
from agents_app.services.threads.files import file_bytes
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db
MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def _encode(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def _noise(width: int, height: int) -> Image.Image:
    return Image.frombytes("RGB", (width, height), os.urandom(width * height * 3))


def _post(client: Any, thread: Any, name: str, mime: str, data: bytes) -> dict[str, Any]:
    response = client.post_json(
        f"/api/threads/{thread.pk}/messages",
        {
            "content": "look",
            "attachments": [
                {"name": name, "mimeType": mime, "data": base64.b64encode(data).decode()}
            ],
        },
    )
    assert response.status_code == 202, response.content
    return QueuedMessage.objects.filter(thread=thread).order_by("-created_at")[0].attachments[0]


def _stored(thread: Any, ref: dict[str, Any]) -> tuple[ThreadFile, bytes]:
    row = ThreadFile.objects.get(thread=thread, path=ref["path"])
    return row, file_bytes(row)


def test_images_over_2_mib_become_jpeg_of_at_most_1_5_mib(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    png = _encode(_noise(1100, 1000), "PNG")
    assert len(png) > 2 * MiB
    ref = _post(as_(alice), thread, "photo.png", "image/png", png)
    assert ref["path"].startswith("/attachments/") and ref["path"].endswith(".jpg")
    assert ref["name"] == "photo.png" and ref["mimeType"] == "image/jpeg"
    row, data = _stored(thread, ref)
    assert len(data) <= 1536 * 1024 and ref["size"] == len(data)
    image = Image.open(io.BytesIO(data))
    assert image.format == "JPEG" and image.size[0] <= 1100
    assert (row.width, row.height) == image.size
    assert row.metadata["originalMimeType"] == "image/png" and row.thumbnail


def test_small_png_and_jpeg_are_kept_as_they_are(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    png = _encode(Image.new("RGB", (300, 200), (1, 2, 3)), "PNG")
    ref = _post(as_(alice), thread, "small.png", "image/png", png)
    row, data = _stored(thread, ref)
    assert ref["path"].endswith(".png") and data == png and row.mime_type == "image/png"
    assert (row.width, row.height) == (300, 200) and row.thumbnail


def test_other_formats_are_converted_and_sides_capped_at_4096(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    gif = _encode(Image.new("P", (50, 40), 3), "GIF")
    ref = _post(as_(alice), thread, "anim.gif", "image/gif", gif)
    assert ref["path"].endswith(".jpg") and ref["mimeType"] == "image/jpeg"
    bmp = _encode(Image.new("RGB", (6000, 150), (90, 90, 90)), "BMP")
    ref = _post(as_(alice), thread, "wide.bmp", "image/bmp", bmp)
    _, data = _stored(thread, ref)
    assert Image.open(io.BytesIO(data)).size == (4096, 102)


def test_undecodable_images_are_kept(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    junk = os.urandom(3 * MiB)
    ref = _post(as_(alice), thread, "broken.png", "image/png", junk)
    row, data = _stored(thread, ref)
    assert ref["path"].endswith(".png") and data == junk and not row.thumbnail
