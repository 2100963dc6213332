"""A thread's key-value store and file system over HTTP."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agents_app.models import ThreadFile, ThreadValue
from tests.agents_app.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


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
    assert client.get(base + "?stats=1").json() == {"totalSize": 7, "fileCount": 1}
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


@pytest.mark.parametrize("path", ["../escape", "a/../../b"])
def test_paths_cannot_escape(as_: Any, alice: Any, thread_of: Any, path: str) -> None:
    thread = thread_of(alice)
    response = as_(alice).post(
        f"/api/threads/{thread.pk}/fs/{path}", b"x", content_type="text/plain"
    )
    assert response.status_code in (400, 404)
    assert not ThreadFile.objects.exists()
