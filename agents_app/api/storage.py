"""A thread's key-value store (``/kv``) and file system (``/fs``)."""

from __future__ import annotations

import base64
import binascii
import html
import itertools
import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app import selectors, wire
from agents_app.api.authed import AuthedRequest
from agents_app.api.file_responses import harden, served_type
from agents_app.api.redacting import redacts_thread_data
from agents_app.api.schemas import ERRORS
from agents_app.api.storage_responses import (
    AttachmentRefOut,
    DirectoryMadeOut,
    FsFileOut,
    FsFoundOut,
    FsGrepOut,
    FsListingOut,
    FsStatsOut,
    ValueOut,
    ValuePageOut,
    ValueSetOut,
)
from agents_app.base.errors import Invalid, NotFound
from agents_app.base.storable_text import describe_unstorable, find_unstorable
from agents_app.models import Thread, ThreadFile
from agents_app.services.threads import files as thread_files
from agents_app.services.threads import values as thread_values
from agents_app.services.threads.values import KEY_MAX
from runtime.core.mime_types import essence
from runtime.store import file_images

router = Router(tags=["storage"])

UPLOAD_PIECE = 256 * 1024


def _thread(request: AuthedRequest, thread_id: str) -> Thread:
    return selectors.access_thread(thread_id, request.auth)


# --- kv ------------------------------------------------------------------------------------


class ValueQuery(Schema):
    key: str | None = Field(None, min_length=1, max_length=KEY_MAX)
    search: str = Field("", max_length=200)
    limit: int = Field(100, ge=1, le=200)
    offset: int = Field(0, ge=0, le=10_000_000)


class ValueIn(Schema):
    key: str = Field(..., min_length=1, max_length=KEY_MAX)
    value: Any = Field(..., description="Any JSON value; null deletes the key.")
    previousKey: str | None = Field(None, min_length=1, max_length=KEY_MAX)


class ValueKeyIn(Schema):
    key: str = Field(..., min_length=1, max_length=KEY_MAX)


@router.get(
    "/{thread_id}/kv", response={200: ValueOut | ValuePageOut, **ERRORS}, summary="Read values"
)
@redacts_thread_data
def value_get(request: AuthedRequest, thread_id: str, params: Query[ValueQuery]) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    if params.key is not None:
        row = selectors.value_get(thread, params.key)
        return {"key": row.key, "value": row.value}
    rows, total = selectors.value_page(thread, params.search, params.limit, params.offset)
    values = []
    for row in rows:
        text = json.dumps(row.value, ensure_ascii=False)
        values.append(
            {
                "key": row.key,
                "value": row.value,
                "serialized": text,
                "size": len(text),
                "updatedAt": row.updated_at,
            }
        )
    return {
        "values": values,
        "total": total,
        "limit": params.limit,
        "offset": params.offset,
        "search": params.search,
    }


@router.post("/{thread_id}/kv", response={200: ValueSetOut, **ERRORS}, summary="Write a value")
@redacts_thread_data
def value_set(request: AuthedRequest, thread_id: str, payload: ValueIn) -> dict[str, Any]:
    return thread_values.value_set(
        thread=_thread(request, thread_id),
        key=payload.key,
        value=payload.value,
        previous_key=payload.previousKey,
    )


@router.delete("/{thread_id}/kv", response={204: None, **ERRORS}, summary="Delete a value")
def value_delete(
    request: AuthedRequest,
    thread_id: str,
    key: str | None = Query(None, min_length=1, max_length=KEY_MAX),  # type: ignore[arg-type]
) -> Status:
    thread = _thread(request, thread_id)
    if key is None and request.body:
        try:
            body = json.loads(request.body)
        except ValueError:
            raise Invalid("Invalid JSON body") from None
        key = body.get("key") if isinstance(body, dict) else None
    if not isinstance(key, str):
        raise Invalid("key is required")
    thread_values.value_delete(thread=thread, key=key)
    return Status(204, None)


# --- fs ------------------------------------------------------------------------------------
# The service does the work (agents_app/services/threads/files.py); these views parse and shape.


class FsRootQuery(Schema):
    stats: str | None = Field(None, max_length=10)
    find: str | None = Field(None, max_length=500)
    grep: str | None = Field(None, max_length=500)
    path: str = Field("/", max_length=1024)
    type: Literal["file", "directory", "all"] = "all"
    limit: int = Field(100, ge=1, le=1000)


class FsPathQuery(Schema):
    format: Literal["json", "raw"] = "raw"
    thumbnail: str | None = Field(None, max_length=10)


def _listing(thread: Thread, path: str) -> dict[str, Any]:
    rows = thread_files.listing(str(thread.pk), path)
    return {"files": [thread_files.file_wire(r) for r in rows], "path": path}


@router.get(
    "/{thread_id}/fs",
    response={200: FsStatsOut | FsFoundOut | FsGrepOut | FsListingOut, **ERRORS},
    summary="Root, stats, find, grep",
)
@redacts_thread_data
def fs_root(request: AuthedRequest, thread_id: str, params: Query[FsRootQuery]) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    if params.stats is not None:
        stats = thread_files.stats(str(thread.pk))
        return {
            "totalSize": stats.total_size,
            "fileCount": stats.file_count,
            "directoryCount": stats.directory_count,
        }
    if params.find is not None:
        rows = thread_files.find(str(thread.pk), params.find, type=params.type, limit=params.limit)
        return {"files": [thread_files.file_wire(r) for r in rows], "pattern": params.find}
    if params.grep is not None:
        return {"results": _grep(thread, params), "pattern": params.grep}
    return _listing(thread, "/")


def _grep(thread: Thread, params: FsRootQuery) -> list[dict[str, Any]]:
    """A case-insensitive literal search (a client's regex could run for ever), shaped like
    the reference's snippets: the matching line with the match in ``<mark>``."""
    needle = params.grep or ""
    if not needle:
        raise Invalid("grep must not be empty")
    found = thread_files.grep(
        str(thread.pk),
        re.escape(needle),
        path=_path(params.path),
        ignore_case=True,
        limit=params.limit,
    )
    pattern = re.compile(re.escape(needle), re.IGNORECASE)
    results = []
    for result in found:
        for line, content in result.matches:
            results.append(
                {
                    "path": result.path,
                    "name": posixpath.basename(result.path),
                    "line": line,
                    "snippet": _snippet(pattern, content),
                }
            )
    return results


def _snippet(pattern: re.Pattern[str], line: str) -> str:
    hit = pattern.search(line)
    if hit is None:
        return html.escape(line[:200])
    start, end = max(0, hit.start() - 60), hit.end() + 60
    return (
        html.escape(line[start : hit.start()])
        + "<mark>"
        + html.escape(hit.group())
        + "</mark>"
        + html.escape(line[hit.end() : end])
    )


def _path(raw: str) -> str:
    return thread_files.normalize_path(raw)


# A file's own bytes (served with its type) or its JPEG thumbnail are not JSON: ninja
# describes one schema per status, so the raw types are added to the 200's content.
_RAW_CONTENT = {
    "*/*": {"schema": {"type": "string", "format": "binary"}},
    "image/jpeg": {"schema": {"type": "string", "format": "binary"}},
}


@router.get(
    "/{thread_id}/fs/{path:path}",
    response={200: FsListingOut | FsFileOut, **ERRORS},
    summary="Read (a directory's listing, ?format=json's record, else the bytes)",
    openapi_extra={"responses": {200: {"content": _RAW_CONTENT}}},
)
@redacts_thread_data
def fs_read(request: AuthedRequest, thread_id: str, path: str, params: Query[FsPathQuery]) -> Any:
    thread = _thread(request, thread_id)
    path = _path(path)
    if path == "/":
        return _listing(thread, "/")
    row = thread_files.row_at(str(thread.pk), path)
    if row is None:
        raise NotFound("Not found")
    if row.is_directory:
        return _listing(thread, path)
    if params.format == "json":
        return {"file": thread_files.file_wire(row)}
    if params.thumbnail is not None:
        thumbnail = thread_files.thumbnail(str(thread.pk), path)
        if thumbnail is None:
            raise NotFound("Not found")
        response = HttpResponse(thumbnail, content_type="image/jpeg")
        # ``private``: the route needs credentials, so no shared cache may keep the image.
        response["Cache-Control"] = "private, max-age=31536000"
        return harden(response)
    return _raw(row)


def _raw(row: ThreadFile) -> HttpResponseBase:
    """The file's bytes with the headers that keep them inert (``api/file_responses.py``)."""
    blobs = thread_files.blobs_of(row)
    response: HttpResponse | StreamingHttpResponse
    content_type = served_type(row.mime_type)
    if len(blobs) > 1:  # chunked: streamed chunk by chunk, as the reference does
        response = StreamingHttpResponse(thread_files.chunks(blobs), content_type=content_type)
    else:
        response = HttpResponse(b"".join(thread_files.chunks(blobs)), content_type=content_type)
    response["Content-Length"] = str(row.size)
    return harden(response, filename=row.name)


class FileJsonIn(Schema):
    data: str | None = None
    mimeType: str | None = Field(None, max_length=200)
    metadata: dict[str, Any] | None = None
    type: str | None = None


@router.post(
    "/{thread_id}/fs/{path:path}",
    response={201: AttachmentRefOut | DirectoryMadeOut, **ERRORS},
    summary="Write a file (raw body, or JSON {data, mimeType}) or make a directory",
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {"schema": FileJsonIn.model_json_schema()},
                "*/*": {"schema": {"type": "string", "format": "binary"}},
            }
        }
    },
)
@redacts_thread_data
def fs_write(request: AuthedRequest, thread_id: str, path: str) -> Status:
    thread = _thread(request, thread_id)
    _path(path)  # a bad path is refused before the body is read
    # The whole header (``request.content_type`` would drop the charset), normalized before
    # the body is read: a malformed type is a 400, ``" TEXT/HTML"`` is stored as text/html.
    content_type = thread_files.clean_mime_type(request.META.get("CONTENT_TYPE"))
    if essence(content_type) == "application/json":
        return _write_json(thread, path, request.body)
    row = thread_files.file_write(thread, path, _body(request, content_type), content_type)
    return Status(201, wire.attachment_ref(row))


def _body(request: HttpRequest, content_type: str) -> bytes | Iterator[bytes]:
    """The raw body: whole for images small enough to thumbnail, else streamed in pieces
    (so an upload is never held whole)."""
    if file_images.is_raster_image(content_type):
        head = request.read(file_images.THUMBNAIL_INPUT_MAX + 1)
        if len(head) <= file_images.THUMBNAIL_INPUT_MAX:
            return head
        return itertools.chain([head], iter(lambda: request.read(UPLOAD_PIECE), b""))
    return iter(lambda: request.read(UPLOAD_PIECE), b"")


def _write_json(thread: Thread, path: str, body: bytes) -> Status:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    if not isinstance(data, dict):
        raise Invalid("Invalid request body")
    found = find_unstorable(data)
    if found:
        raise Invalid(describe_unstorable(found))
    if data.get("type") == "directory":
        row = thread_files.dir_make(thread, path)
        return Status(201, {"directory": thread_files.file_wire(row)})
    if not isinstance(data.get("data"), str):
        raise Invalid("Invalid request body")
    try:
        content = base64.b64decode(data["data"], validate=True)
    except (binascii.Error, ValueError):
        raise Invalid("data is not valid base64") from None
    # The reference client's thumbnail is kept (re-encoded by us), not dropped.
    given = data.get("thumbnail")
    if given is not None and not isinstance(given, str):
        raise Invalid("Invalid request: thumbnail: Input should be a valid string")
    thumbnail = thread_files.client_thumbnail(given, "thumbnail") if given else None
    mime = data.get("mimeType")
    if mime is not None and not isinstance(mime, str):
        raise Invalid("Invalid request: mimeType: Input should be a valid string")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise Invalid("Invalid request: metadata: Input should be a valid dictionary")
    row = thread_files.file_write(
        thread,
        path,
        content,
        mime or "application/octet-stream",
        metadata=metadata,
        thumbnail=thumbnail,
    )
    return Status(201, wire.attachment_ref(row))


@router.delete("/{thread_id}/fs/{path:path}", response={204: None, **ERRORS}, summary="Delete")
def fs_delete(request: AuthedRequest, thread_id: str, path: str) -> Status:
    thread_files.file_delete(_thread(request, thread_id), path)
    return Status(204, None)
