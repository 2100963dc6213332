"""Row I3 (spec 0.2.0): the resumable chunked upload, ``…/fs/<path>/upload/start``,
``PUT …/upload/chunk/<n>``, ``…/upload/complete``, over the API with real Postgres and the
real file storage (a temp media root). A file uploaded in chunks is stored by the one file
write, so it cannot be told from one uploaded in one go."""

from __future__ import annotations

import asyncio
import datetime
import io
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone
from PIL import Image

from agents_app.broadcast.events import thread_group
from agents_app.broadcast.live_frames import frame_of
from agents_app.models import ChunkedUpload, ChunkedUploadPart, Thread, ThreadFile
from agents_app.orchestration import periodic
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

CONTENT = b"0123456789"  # three chunks of 4, 4 and 2 bytes


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    settings.STUDIO_FILE_CHUNK_SIZE = 4
    return tmp_path


def _blobs(media: Path) -> set[str]:
    return {str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()}


def _referenced() -> set[str]:
    from agents_app.services.threads.files import blob_names_of_threads

    return set(blob_names_of_threads(Thread.objects.values_list("pk", flat=True)))


def _listen(thread: Thread) -> Any:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(thread_group(str(thread.pk)), channel)

    async def drain() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), 0.05)
            except TimeoutError:
                return out
            out.append(frame_of(message))

    return lambda: async_to_sync(drain)()


def _bytes(response: Any) -> bytes:
    assert response.status_code == 200, response
    if response.streaming:  # a chunked file is streamed chunk by chunk
        return b"".join(response.streaming_content)
    return bytes(response.content)


def _put(client: Any, url: str, data: bytes) -> Any:
    return client.put(url, data, content_type="application/octet-stream")


def _upload(client: Any, base: str, path: str, data: bytes, mime: str, **start: Any) -> Any:
    plan = client.post_json(
        f"{base}/{path}/upload/start", {"totalSize": len(data), "mimeType": mime, **start}
    )
    assert plan.status_code == 200, plan.content
    size = plan.json()["chunkSize"]
    count = plan.json()["expectedChunks"]
    for i in reversed(range(count)):  # any order
        sent = _put(client, f"{base}/{path}/upload/chunk/{i}", data[i * size : (i + 1) * size])
        assert sent.status_code == 200, sent.content
    return client.post_json(f"{base}/{path}/upload/complete", {"expectedChunks": count})


def test_I3_start_chunks_complete_stores_the_file_as_a_one_shot_upload_would(
    as_: Any,
    alice: Any,
    thread_of: Any,
    media: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    frames = _listen(thread)

    with django_capture_on_commit_callbacks(execute=True):
        plan = client.post_json(
            base + "/docs/a.txt/upload/start",
            {"totalSize": 10, "mimeType": "text/plain", "metadata": {"source": "phone"}},
        )
        assert plan.status_code == 200, plan.content
        body = plan.json()
        assert (body["chunkSize"], body["expectedChunks"], body["path"]) == (4, 3, "/docs/a.txt")
        assert body["uploadId"] == str(ChunkedUpload.objects.get().pk)
        # Out of order, one chunk sent twice (a retry): idempotent per index.
        assert _put(client, base + "/docs/a.txt/upload/chunk/2", b"89").json() == {
            "chunkIndex": 2,
            "received": 1,
        }
        assert _put(client, base + "/docs/a.txt/upload/chunk/0", b"xxxx").json()["received"] == 2
        assert _put(client, base + "/docs/a.txt/upload/chunk/0", b"0123").json()["received"] == 2
        assert _put(client, base + "/docs/a.txt/upload/chunk/1", b"4567").json()["received"] == 3
        assert not ThreadFile.objects.filter(path="/docs/a.txt").exists()  # not yet
        done = client.post_json(base + "/docs/a.txt/upload/complete", {"expectedChunks": 3})
        one_shot = client.post(base + "/docs/b.txt", CONTENT, content_type="text/plain")

    assert done.status_code == 201, done.content
    assert done.json() == {
        "id": "/docs/a.txt",
        "type": "file",
        "path": "/docs/a.txt",
        "name": "a.txt",
        "mimeType": "text/plain",
        "size": 10,
    }
    assert _bytes(client.get(base + "/docs/a.txt")) == CONTENT
    chunked = client.get(base + "/docs/a.txt?format=json").json()["file"]
    whole = client.get(base + "/docs/b.txt?format=json").json()["file"]
    different = {"path", "name", "createdAt", "metadata"}
    assert {k: v for k, v in chunked.items() if k not in different} == {
        k: v for k, v in whole.items() if k not in different
    }
    assert chunked["metadata"] == {"source": "phone"} and chunked["isChunked"] is True
    events = [(f["eventType"], f["data"]["path"]) for f in frames() if f.get("type") == "event"]
    assert ("file_created", "/docs/a.txt") in events
    # The upload's rows and chunk blobs are gone: every blob left belongs to a stored file.
    assert not ChunkedUpload.objects.exists() and not ChunkedUploadPart.objects.exists()
    assert _blobs(media) == _referenced()
    assert one_shot.status_code == 201


def test_I3_an_image_gets_its_thumbnail_and_dimensions_as_a_one_shot_upload_does(
    as_: Any, alice: Any, thread_of: Any, settings: Any
) -> None:
    settings.STUDIO_FILE_CHUNK_SIZE = 64
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buffer, "PNG")
    png = buffer.getvalue()
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"

    done = _upload(client, base, "pic.png", png, "image/png")

    assert done.status_code == 201, done.content
    assert (done.json()["width"], done.json()["height"]) == (40, 30)
    assert client.get(base + "/pic.png?thumbnail=1").status_code == 200
    assert _bytes(client.get(base + "/pic.png")) == png


def test_I3_errors_are_json_sentences(as_: Any, alice: Any, thread_of: Any, settings: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"

    def error(response: Any, status: int) -> str:
        assert response.status_code == status, response.content
        return str(response.json()["error"])

    assert error(_put(client, base + "/x.bin/upload/chunk/0", b"1"), 404) == (
        "No upload in progress at /x.bin: start one with POST …/upload/start"
    )
    client.post_json(base + "/x.bin/upload/start", {"totalSize": 10})
    assert error(_put(client, base + "/x.bin/upload/chunk/3", b"12"), 400) == (
        "Chunk index 3 is out of range: this upload has 3 chunks (0 to 2)"
    )
    assert error(_put(client, base + "/x.bin/upload/chunk/2", b"123"), 413) == (
        "Chunk 2 is larger than 2 bytes"
    )
    assert error(_put(client, base + "/x.bin/upload/chunk/0", b"12"), 400) == (
        "Chunk 0 has 2 bytes; it must have 4"
    )
    _put(client, base + "/x.bin/upload/chunk/0", b"1234")
    complete = base + "/x.bin/upload/complete"
    assert error(client.post_json(complete, {"expectedChunks": 2}), 400) == (
        "expectedChunks is 2, but this upload has 3 chunks"
    )
    assert error(client.post_json(complete, {"expectedChunks": 3}), 400) == "Missing chunks: 1, 2"
    assert not ThreadFile.objects.filter(path="/x.bin").exists()
    # The start's own checks: the size cap, unknown fields, a directory in the way.
    settings.STUDIO_FILE_MAX_SIZE = 5
    assert error(client.post_json(base + "/big/upload/start", {"totalSize": 6}), 413) == (
        "File is larger than the limit of 5 bytes."
    )
    assert "resume" in error(
        client.post_json(base + "/y/upload/start", {"totalSize": 1, "resume": True}), 400
    )
    client.post_json(base + "/dir", {"type": "directory"})
    assert error(client.post_json(base + "/dir/upload/start", {"totalSize": 1}), 409) == (
        "Is a directory: /dir"
    )


def test_I3_only_who_may_write_the_thread_may_upload(
    as_: Any, alice: Any, bob: Any, thread_of: Any, anonymous: Any
) -> None:
    thread = thread_of(alice)
    base = f"/api/threads/{thread.pk}/fs/f.txt/upload"
    refused = as_(bob).post_json(base + "/start", {"totalSize": 1})
    assert refused.status_code == 403 and refused.json()["error"]
    assert anonymous.post_json(base + "/start", {"totalSize": 1}).status_code == 401
    as_(alice).post_json(base + "/start", {"totalSize": 1})
    assert _put(as_(bob), base + "/chunk/0", b"1").status_code == 403
    assert as_(bob).post_json(base + "/complete", {"expectedChunks": 1}).status_code == 403
    assert ChunkedUploadPart.objects.count() == 0


def test_I3_an_abandoned_upload_expires_with_its_chunks(
    as_: Any, alice: Any, thread_of: Any, media: Path, django_capture_on_commit_callbacks: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs/late.bin/upload"
    client.post_json(base + "/start", {"totalSize": 8})
    _put(client, base + "/chunk/0", b"abcd")
    assert len(_blobs(media)) == 1  # the chunk is a blob in storage, not in memory
    ChunkedUpload.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))

    with django_capture_on_commit_callbacks(execute=True):
        removed = periodic.AUTOMATION["agents_app.expire_uploads"]()

    assert removed == 1 and not ChunkedUpload.objects.exists() and _blobs(media) == set()
    assert _put(client, base + "/chunk/1", b"efgh").status_code == 404


def test_I3_starting_again_replaces_the_pending_upload(
    as_: Any, alice: Any, thread_of: Any, media: Path, django_capture_on_commit_callbacks: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    with django_capture_on_commit_callbacks(execute=True):
        client.post_json(base + "/r.txt/upload/start", {"totalSize": 8})
        _put(client, base + "/r.txt/upload/chunk/0", b"abcd")
        done = _upload(client, base, "r.txt", b"xyz", "text/plain")
    assert done.status_code == 201 and _bytes(client.get(base + "/r.txt")) == b"xyz"
    assert ChunkedUpload.objects.count() == 0 and _blobs(media) == _referenced()


def test_I3_deleting_the_thread_removes_a_pending_uploads_chunks(
    as_: Any, alice: Any, thread_of: Any, media: Path, django_capture_on_commit_callbacks: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs/p.bin/upload"
    client.post_json(base + "/start", {"totalSize": 8})
    _put(client, base + "/chunk/1", b"efgh")
    assert len(_blobs(media)) == 1

    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete(f"/api/threads/{thread.pk}").status_code in (200, 204)

    assert not ChunkedUpload.objects.exists() and _blobs(media) == set()
