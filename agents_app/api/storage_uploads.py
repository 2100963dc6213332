"""Resumable uploads into a thread's file system (spec 0.2.0 row I3), the reference's wire:

- ``POST …/fs/<path>/upload/start`` ``{totalSize, mimeType, metadata?, width?, height?}`` →
  ``{chunkSize, expectedChunks, path, uploadId, expiresAt}``;
- ``PUT …/fs/<path>/upload/chunk/<n>`` raw bytes → ``{chunkIndex, received}``;
- ``POST …/fs/<path>/upload/complete`` ``{expectedChunks, thumbnail?}`` → 201 AttachmentRef.

Mounted before ``storage.router``, whose ``fs/{path:path}`` would take these paths. The
service (``services/threads/uploads.py``) does the work; permissions are the one-shot
upload's (changing the thread).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict

from agents_app import selectors, wire
from agents_app.api.authed import AuthedRequest
from agents_app.api.redacting import redacts_thread_data
from agents_app.api.responses import Int, Out, Str, Value
from agents_app.api.schemas import ERRORS
from agents_app.api.storage_responses import AttachmentRefOut
from agents_app.base.errors import Invalid
from agents_app.models import Thread
from agents_app.services.threads import files as thread_files
from agents_app.services.threads import uploads

router = Router(tags=["storage"])


class UploadStartIn(Schema):
    model_config = ConfigDict(extra="forbid")

    totalSize: int = Field(..., ge=0)
    mimeType: str = Field("application/octet-stream", max_length=200)
    metadata: dict[str, Any] | None = None
    width: int | None = Field(None, ge=0, le=1_000_000)
    height: int | None = Field(None, ge=0, le=1_000_000)


class UploadCompleteIn(Schema):
    model_config = ConfigDict(extra="forbid")

    expectedChunks: int = Field(..., ge=1)
    thumbnail: str | None = None


class UploadStartOut(Out):
    chunkSize: Int
    expectedChunks: Int
    path: Str
    uploadId: Str
    expiresAt: Value


class UploadChunkOut(Out):
    chunkIndex: Int
    received: Int


def _thread(request: AuthedRequest, thread_id: str) -> Thread:
    return selectors.access_thread(thread_id, request.auth)


@router.post(
    "/{thread_id}/fs/{path:path}/upload/start",
    response={200: UploadStartOut, **ERRORS},
    summary="Start a resumable upload",
)
@redacts_thread_data
def upload_start(
    request: AuthedRequest, thread_id: str, path: str, payload: UploadStartIn
) -> dict[str, Any]:
    plan = uploads.upload_start(
        thread=_thread(request, thread_id),
        path=path,
        total_size=payload.totalSize,
        mime_type=payload.mimeType,
        metadata=payload.metadata,
        width=payload.width,
        height=payload.height,
    )
    return {
        "chunkSize": plan.chunk_size,
        "expectedChunks": plan.expected_chunks,
        "path": plan.path,
        "uploadId": plan.upload_id,
        "expiresAt": int(plan.expires_at.timestamp() * 1000),
    }


@router.put(
    "/{thread_id}/fs/{path:path}/upload/chunk/{index}",
    response={200: UploadChunkOut, **ERRORS},
    summary="Send one chunk of a resumable upload (raw bytes)",
    openapi_extra={
        "requestBody": {"content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}
    },
)
@redacts_thread_data
def upload_chunk(request: AuthedRequest, thread_id: str, path: str, index: int) -> dict[str, Any]:
    thread = _thread(request, thread_id)
    data = _read(request, uploads.read_limit(thread, path, index))
    chunk, received = uploads.upload_chunk(thread=thread, path=path, index=index, data=data)
    return {"chunkIndex": chunk, "received": received}


def _read(request: HttpRequest, limit: int) -> bytes:
    """At most ``limit`` bytes of the body (the service refuses a chunk that long)."""
    pieces: list[bytes] = []
    left = limit
    while left > 0 and (piece := request.read(min(left, 256 * 1024))):
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


@router.post(
    "/{thread_id}/fs/{path:path}/upload/complete",
    response={201: AttachmentRefOut, **ERRORS},
    summary="Complete a resumable upload (stores the file)",
)
@redacts_thread_data
def upload_complete(
    request: AuthedRequest, thread_id: str, path: str, payload: UploadCompleteIn
) -> Status:
    thread = _thread(request, thread_id)
    thumbnail = None
    if payload.thumbnail:
        thumbnail = thread_files.client_thumbnail(payload.thumbnail, "thumbnail")
    elif payload.thumbnail is not None:
        raise Invalid("Invalid request: thumbnail: must not be empty")
    row = uploads.upload_complete(
        thread=thread, path=path, expected_chunks=payload.expectedChunks, thumbnail=thumbnail
    )
    return Status(201, wire.attachment_ref(row))
