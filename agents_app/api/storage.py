"""A thread's key-value store (``/kv``) and file system (``/fs``)."""

from __future__ import annotations

import base64
import binascii
import fnmatch
import json
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from ninja.responses import Status

from agents_app import selectors, wire
from agents_app.api.parser import NUL_ERROR, has_nul
from agents_app.api.schemas import ERRORS
from agents_app.errors import Invalid, NotFound
from agents_app.models import Thread, ThreadFile
from agents_app.services import thread_files, thread_values
from agents_app.services.thread_values import KEY_MAX

router = Router(tags=["storage"])

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")
INLINE_RISKY = ("text/html", "image/svg+xml", "application/xhtml+xml")


def _thread(request: HttpRequest, thread_id: str) -> Thread:
    return selectors.access_thread(thread_id, request.auth)  # type: ignore[attr-defined]


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


@router.get("/{thread_id}/kv", response={200: dict, **ERRORS}, summary="Read values")
def value_get(request: HttpRequest, thread_id: str, params: Query[ValueQuery]) -> dict[str, Any]:
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


@router.post("/{thread_id}/kv", response={200: dict, **ERRORS}, summary="Write a value")
def value_set(request: HttpRequest, thread_id: str, payload: ValueIn) -> dict[str, Any]:
    return thread_values.value_set(
        thread=_thread(request, thread_id),
        key=payload.key,
        value=payload.value,
        previous_key=payload.previousKey,
    )


@router.delete("/{thread_id}/kv", response={204: None, **ERRORS}, summary="Delete a value")
def value_delete(
    request: HttpRequest,
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


class FsRootQuery(Schema):
    stats: str | None = Field(None, max_length=10)
    find: str | None = Field(None, max_length=500)
    grep: str | None = Field(None, max_length=500)
    type: Literal["file", "directory", "all"] = "all"
    limit: int = Field(100, ge=1, le=1000)


class FsPathQuery(Schema):
    format: Literal["json", "raw"] = "raw"
    thumbnail: str | None = Field(None, max_length=10)


def _listing(thread: Thread, path: str) -> dict[str, Any]:
    return {
        "files": [wire.file_record(r) for r in selectors.file_listing(thread, path)],
        "path": path,
    }


@router.get("/{thread_id}/fs", response={200: dict, **ERRORS}, summary="Root, stats, find, grep")
def fs_root(request: HttpRequest, thread_id: str, params: Query[FsRootQuery]) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    if params.stats is not None:
        return selectors.file_stats(thread)
    if params.find is not None:
        return {"files": _find(thread, params), "pattern": params.find}
    if params.grep is not None:
        return {"results": _grep(thread, params.grep, params.limit), "pattern": params.grep}
    return _listing(thread, "/")


def _find(thread: Thread, params: FsRootQuery) -> list[dict[str, Any]]:
    pattern = params.find or "*"
    if not pattern.startswith("/"):
        pattern = "*" + pattern if pattern.startswith("*") else "*/" + pattern
    rows = ThreadFile.objects.filter(thread=thread).order_by("path")
    if params.type != "all":
        rows = rows.filter(is_directory=params.type == "directory")
    found = [r for r in rows if fnmatch.fnmatchcase(r.path, pattern)]
    return [wire.file_record(r) for r in found[: params.limit]]


def _grep(thread: Thread, needle: str, limit: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    rows = ThreadFile.objects.filter(thread=thread, is_directory=False, size__lte=1024 * 1024)
    for row in rows.order_by("path")[:500]:
        if not row.mime_type.startswith(TEXT_TYPES):
            continue
        text = thread_files.file_bytes(row).decode("utf-8", "replace")
        at = text.lower().find(needle.lower())
        if at >= 0:
            snippet = text[max(0, at - 40) : at + len(needle) + 40]
            results.append({"path": row.path, "name": row.name, "snippet": snippet})
            if len(results) >= limit:
                break
    return results


def _path(raw: str) -> str:
    return thread_files.normalize_path(raw)


@router.get("/{thread_id}/fs/{path:path}", response={200: dict, **ERRORS}, summary="Read")
def fs_read(request: HttpRequest, thread_id: str, path: str, params: Query[FsPathQuery]) -> Any:
    thread = _thread(request, thread_id)
    path = _path(path)
    if path == "/":
        return _listing(thread, "/")
    row = selectors.file_at(thread, path)
    if row is None:
        raise NotFound("Not found")
    if row.is_directory:
        return _listing(thread, path)
    if params.format == "json":
        return {"file": wire.file_record(row)}
    if params.thumbnail is not None:
        if not row.thumbnail:
            raise NotFound("Not found")
        with row.thumbnail.open("rb") as fh:
            response = HttpResponse(fh.read(), content_type="image/jpeg")
        response["Cache-Control"] = "public, max-age=31536000"
        return response
    return _raw(row)


def _raw(row: ThreadFile) -> HttpResponse:
    response = HttpResponse(thread_files.file_bytes(row), content_type=row.mime_type)
    disposition = "attachment" if row.mime_type.startswith(INLINE_RISKY) else "inline"
    safe_name = row.name.replace('"', "").replace("\r", "").replace("\n", "")
    response["Content-Disposition"] = f'{disposition}; filename="{safe_name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


class FileJsonIn(Schema):
    data: str | None = None
    mimeType: str | None = Field(None, max_length=200)
    metadata: dict[str, Any] | None = None
    type: str | None = None


@router.post(
    "/{thread_id}/fs/{path:path}",
    response={201: dict, **ERRORS},
    summary="Write a file (raw body, or JSON {data, mimeType}) or make a directory",
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {"schema": FileJsonIn.model_json_schema()},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            }
        }
    },
)
def fs_write(request: HttpRequest, thread_id: str, path: str) -> Status:
    thread = _thread(request, thread_id)
    content_type = request.content_type or "application/octet-stream"
    if content_type == "application/json":
        return _write_json(thread, path, request.body)
    row = thread_files.file_write(thread, path, request.body, content_type)
    return Status(201, wire.attachment_ref(row))


def _write_json(thread: Thread, path: str, body: bytes) -> Status:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    if not isinstance(data, dict):
        raise Invalid("Invalid request body")
    if has_nul(data):
        raise Invalid(NUL_ERROR)
    if data.get("type") == "directory":
        row = thread_files.dir_make(thread, path)
        return Status(201, {"directory": wire.file_record(row)})
    if not isinstance(data.get("data"), str):
        raise Invalid("Invalid request body")
    try:
        content = base64.b64decode(data["data"], validate=True)
    except (binascii.Error, ValueError):
        raise Invalid("data is not valid base64") from None
    mime = data.get("mimeType") if isinstance(data.get("mimeType"), str) else None
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    row = thread_files.file_write(
        thread, path, content, mime or "application/octet-stream", metadata=metadata
    )
    return Status(201, wire.attachment_ref(row))


@router.delete("/{thread_id}/fs/{path:path}", response={204: None, **ERRORS}, summary="Delete")
def fs_delete(request: HttpRequest, thread_id: str, path: str) -> Status:
    thread_files.file_delete(_thread(request, thread_id), path)
    return Status(204, None)
