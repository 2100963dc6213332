"""Issue #38 item 11: the reference client's image upload (``uploadFile(id, file, {thumbnail,
width, height})`` → ``POST …/fs/<path>`` with ``{data, mimeType, thumbnail, metadata}``, and
message attachments with ``thumbnail``) is accepted, and the thumbnail it sent is the one its
``?thumbnail`` URL serves: decoded and re-encoded by us as JPEG, never its bytes as sent."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agents_app.models import ThreadFile
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path


def _image(color: str, size: tuple[int, int], fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format=fmt)
    return out.getvalue()


def _served_color(client: Any, url: str) -> tuple[int, ...]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "image/jpeg"
    image = Image.open(
        io.BytesIO(b"".join(response.streaming_content) if response.streaming else response.content)
    )
    assert image.format == "JPEG"
    pixel = image.convert("RGB").getpixel((0, 0))
    assert isinstance(pixel, tuple), pixel  # an RGB image's pixel is (r, g, b)
    return pixel


def _reddish(pixel: tuple[int, ...]) -> bool:
    return pixel[0] > 200 and pixel[1] < 60 and pixel[2] < 60


def test_the_reference_clients_file_upload_with_a_thumbnail_serves_that_thumbnail(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    # A blue photo whose client-made thumbnail is red (as a data: URL, as browsers make them).
    photo = base64.b64encode(_image("blue", (800, 600), "PNG")).decode()
    thumb = "data:image/jpeg;base64," + base64.b64encode(_image("red", (64, 48), "JPEG")).decode()
    body = {"data": photo, "mimeType": "image/png", "thumbnail": thumb, "metadata": {"w": 800}}
    response = client.post_json(f"/api/threads/{thread.pk}/fs/photos/p.png", body)
    assert response.status_code == 201, response.content
    assert response.json()["width"] == 800 and response.json()["height"] == 600
    assert _reddish(_served_color(client, f"/api/threads/{thread.pk}/fs/photos/p.png?thumbnail=1"))


def test_message_attachments_keep_the_thumbnail_their_client_sent(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    attachment = {
        "name": "p.png",
        "mimeType": "image/png",
        "data": base64.b64encode(_image("blue", (300, 200), "PNG")).decode(),
        "width": 300,
        "height": 200,
        "thumbnail": base64.b64encode(_image("red", (30, 20), "PNG")).decode(),
    }
    response = client.post_json(
        f"/api/threads/{thread.pk}/messages", {"content": "look", "attachments": [attachment]}
    )
    assert response.status_code == 202, response.content
    path = ThreadFile.objects.get(thread=thread, is_directory=False).path
    assert _reddish(_served_color(client, f"/api/threads/{thread.pk}/fs{path}?thumbnail=1"))


def test_a_thumbnail_that_is_no_image_is_refused_with_its_field(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    hostile = base64.b64encode(b"<script>alert(1)</script>").decode()
    body = {"data": base64.b64encode(b"hi").decode(), "thumbnail": hostile}
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/fs/x.txt", body)
    assert response.status_code == 400
    assert response.json()["error"].startswith("Invalid request: thumbnail: not an image")
    assert not ThreadFile.objects.filter(thread=thread, is_directory=False).exists()
