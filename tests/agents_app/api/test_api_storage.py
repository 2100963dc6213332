"""A thread's key-value store and file system over HTTP."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from PIL import Image

from agents_app.broadcast.events import thread_group
from agents_app.broadcast.live_frames import frame_of
from agents_app.models import Thread, ThreadFile, ThreadValue
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    """Blobs go to a temp dir, not the media root."""
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


def test_values_write_read_list_rename_delete(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/kv"
    written = client.post_json(url, {"key": "plan", "value": {"steps": [1, 2]}}).json()
    assert written == {
        "key": "plan",
        "value": {"steps": [1, 2]},
        "previousKey": None,
        "deleted": False,
    }
    assert client.get(url + "?key=plan").json() == {"key": "plan", "value": {"steps": [1, 2]}}
    listed = client.get(url + "?search=ste").json()
    assert listed["total"] == 1 and listed["values"][0]["serialized"] == '{"steps": [1, 2]}'
    client.post_json(url, {"key": "plan2", "value": 3, "previousKey": "plan"})
    assert list(ThreadValue.objects.values_list("key", flat=True)) == ["plan2"]
    assert client.delete(url + "?key=plan2").status_code == 204
    missing = client.get(url + "?key=plan2")
    assert missing.status_code == 404 and missing.json() == {"error": "Key not found: plan2"}


def test_null_deletes_and_reserved_keys_are_403(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/kv"
    client.post_json(url, {"key": "a", "value": 1})
    assert client.post_json(url, {"key": "a", "value": None}).json()["deleted"] is True
    for key in ("execution_owner", "approval_x", "_runtime.child_thread.c1"):
        response = client.post_json(url, {"key": key, "value": 1})
        assert response.status_code == 403
        assert response.json() == {"error": "Key is reserved for server-managed state"}
    assert client.post_json(url, {"value": 1}).status_code == 400


def test_files_write_read_list_delete(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    ref = client.post(base + "/notes/today.md", b"# Hello", content_type="text/markdown")
    assert ref.status_code == 201
    assert ref.json() == {
        "id": "/notes/today.md",
        "type": "file",
        "path": "/notes/today.md",
        "name": "today.md",
        "mimeType": "text/markdown",
        "size": 7,
    }
    raw = client.get(base + "/notes/today.md")
    assert raw.content == b"# Hello" and raw["Content-Type"] == "text/markdown"
    assert raw["X-Content-Type-Options"] == "nosniff"
    assert [f["path"] for f in client.get(base).json()["files"]] == ["/notes"]
    assert [f["path"] for f in client.get(base + "/notes").json()["files"]] == ["/notes/today.md"]
    assert client.get(base + "/notes/today.md?format=json").json()["file"]["size"] == 7
    assert client.get(base + "?stats=1").json() == {
        "totalSize": 7,
        "fileCount": 1,
        "directoryCount": 1,
    }
    assert client.get(base + "?find=*.md").json()["files"][0]["name"] == "today.md"
    assert client.get(base + "?grep=hello").json()["results"][0]["path"] == "/notes/today.md"
    assert client.delete(base + "/notes").status_code == 409  # not empty
    assert client.delete(base + "/notes/today.md").status_code == 204
    assert client.delete(base + "/notes").status_code == 204
    assert not ThreadFile.objects.exists()
    assert client.get(base + "/notes").status_code == 404


def test_json_uploads_and_directories(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    data = base64.b64encode(b"{}").decode()
    made = client.post_json(base + "/data/x.json", {"data": data, "mimeType": "application/json"})
    assert made.status_code == 201 and made.json()["size"] == 2
    folder = client.post_json(base + "/empty", {"type": "directory"})
    assert folder.status_code == 201 and folder.json()["directory"]["isDirectory"] is True
    assert client.post_json(base + "/bad", {"data": "%%%"}).status_code == 400
    assert client.post_json(base + "/bad", {"nothing": 1}).status_code == 400


# --- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../escape", "escapes the thread's root"),
        ("a/../../b", "escapes the thread's root"),
        ("%2e%2e/escape", "escapes the thread's root"),
        ("%2E%2E%2Fescape", "escapes the thread's root"),
        ("a/%2e%2e/%2e%2e/etc/passwd", "escapes the thread's root"),
        ("..%5Cescape", "escapes the thread's root"),
        ("a%00b", "NUL"),
        ("C:%5CWindows%5Cwin.ini", "drive"),
        ("c:/x", "drive"),
        ("x" * 300, "longer than 255"),
    ],
)
def test_traversal_and_bad_paths_are_400(
    as_: Any, alice: Any, thread_of: Any, path: str, reason: str
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/{path}"
    for response in (
        client.post(url, b"x", content_type="text/plain"),
        client.post_json(url, {"type": "directory"}),
        client.get(url),
        client.delete(url),
    ):
        assert response.status_code == 400, (path, response.content)
        assert (
            response.json()["error"].startswith("Invalid path")
            and reason in response.json()["error"]
        )
    grep = client.get(f"/api/threads/{thread.pk}/fs?grep=x&path=../up")
    assert grep.status_code == 400
    assert not ThreadFile.objects.exists()


def test_kind_conflicts_are_409_and_root_is_400(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    client.post(base + "/f.txt", b"x", content_type="text/plain")
    under_file = client.post(base + "/f.txt/child", b"y", content_type="text/plain")
    assert under_file.status_code == 409 and under_file.json() == {
        "error": "Not a directory: /f.txt"
    }
    client.post_json(base + "/dir", {"type": "directory"})
    onto_dir = client.post(base + "/dir", b"z", content_type="text/plain")
    assert onto_dir.status_code == 409 and onto_dir.json() == {"error": "Is a directory: /dir"}
    assert client.delete(base + "/a/..").json() == {"error": "'/' cannot be deleted"}
    assert client.delete(base + "/nothing").json() == {"error": "Not found"}


def test_uploads_over_the_limit_are_413(
    as_: Any, alice: Any, thread_of: Any, settings: Any, media: Path
) -> None:
    settings.STUDIO_FILE_MAX_SIZE = 1000
    thread = thread_of(alice)
    response = as_(alice).post(
        f"/api/threads/{thread.pk}/fs/big.bin", b"x" * 1001, content_type="application/octet-stream"
    )
    assert response.status_code == 413
    assert response.json() == {"error": "File is larger than the limit of 1000 bytes."}
    assert not ThreadFile.objects.exists()
    assert [p for p in media.rglob("*") if p.is_file()] == []


# --- chunked files, grep, find, thumbnails ----------------------------------------------------------


def test_large_uploads_are_chunked_and_streamed_back(
    as_: Any, alice: Any, thread_of: Any, settings: Any
) -> None:
    settings.STUDIO_FILE_CHUNK_SIZE = 1000
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/data/big.bin"
    body = bytes(i % 256 for i in range(4321))
    assert client.post(url, body, content_type="application/octet-stream").status_code == 201
    info = client.get(url + "?format=json").json()["file"]
    assert (info["size"], info["isChunked"], info["chunkCount"]) == (4321, True, 5)
    response = client.get(url)
    assert response.streaming and response["Content-Length"] == "4321"
    assert b"".join(response.streaming_content) == body


def test_grep_is_literal_and_marks_the_match(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    client.post(base + "/a.txt", b"one\nthe <b>a.c</b> file\nabc", content_type="text/plain")
    client.post(base + "/sub/b.txt", b"A.C again", content_type="text/plain")
    found = client.get(base + "?grep=a.c").json()
    assert found["pattern"] == "a.c"
    assert found["results"] == [
        {
            "path": "/a.txt",
            "name": "a.txt",
            "line": 2,
            "snippet": "the &lt;b&gt;<mark>a.c</mark>&lt;/b&gt; file",
        },
        {"path": "/sub/b.txt", "name": "b.txt", "line": 1, "snippet": "<mark>A.C</mark> again"},
    ]
    scoped = client.get(base + "?grep=a.c&path=/sub").json()["results"]
    assert [r["path"] for r in scoped] == ["/sub/b.txt"]
    assert client.get(base + "?grep=(unclosed").json()["results"] == []  # literal, not a regex


def test_find_with_globs_and_types(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    for path in ("/a.md", "/docs/b.md", "/docs/deep/c.txt"):
        client.post(base + path, b"x", content_type="text/plain")

    def paths(query: str) -> list[str]:
        return [f["path"] for f in client.get(base + query).json()["files"]]

    assert paths("?find=*.md") == ["/a.md", "/docs/b.md"]
    assert paths("?find=/*.md") == ["/a.md"]
    assert paths("?find=**&type=directory") == ["/docs", "/docs/deep"]
    assert paths("?find=/docs/**&type=file&limit=1") == ["/docs/b.md"]


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def test_image_uploads_get_thumbnails(as_: Any, alice: Any, thread_of: Any) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    url = f"/api/threads/{thread.pk}/fs/pics/p.png"
    ref = client.post(url, _png(800, 400), content_type="image/png").json()
    assert (ref["width"], ref["height"]) == (800, 400)
    thumb = client.get(url + "?thumbnail=1")
    assert thumb["Content-Type"] == "image/jpeg"
    assert thumb["Cache-Control"] == "private, max-age=31536000"  # credentials: no shared cache
    assert Image.open(io.BytesIO(thumb.content)).size == (256, 128)
    client.post(f"/api/threads/{thread.pk}/fs/t.txt", b"x", content_type="text/plain")
    assert client.get(f"/api/threads/{thread.pk}/fs/t.txt?thumbnail=1").status_code == 404


# --- events ------------------------------------------------------------------------------------------


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


def test_changes_are_announced_as_file_events(
    as_: Any, alice: Any, thread_of: Any, django_capture_on_commit_callbacks: Any
) -> None:
    thread = thread_of(alice)
    client = as_(alice)
    base = f"/api/threads/{thread.pk}/fs"
    frames = _listen(thread)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(base + "/n.txt", b"1", content_type="text/plain")
        client.post(base + "/n.txt", b"22", content_type="text/plain")
        client.post_json(base + "/d", {"type": "directory"})
        client.delete(base + "/n.txt")
    events = [(f["eventType"], f["data"]) for f in frames() if f.get("type") == "event"]
    assert [(kind, data["path"]) for kind, data in events] == [
        ("file_created", "/n.txt"),
        ("file_updated", "/n.txt"),
        ("file_created", "/d"),
        ("file_deleted", "/n.txt"),
    ]
    assert events[1][1]["file"]["size"] == 2 and events[1][1]["file"]["mimeType"] == "text/plain"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"thumbnail": "aGk="}, "thumbnail"),
        ({"mimeType": 5}, "mimeType"),
        ({"metadata": "tag"}, "metadata"),
    ],
)
def test_json_uploads_refuse_fields_they_would_ignore(
    as_: Any, alice: Any, thread_of: Any, extra: dict[str, Any], field: str
) -> None:
    thread = thread_of(alice)
    body = {"data": base64.b64encode(b"hi").decode(), **extra}
    response = as_(alice).post_json(f"/api/threads/{thread.pk}/fs/x.txt", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"].startswith(f"Invalid request: {field}: ")
    assert not ThreadFile.objects.filter(thread=thread).exists()
