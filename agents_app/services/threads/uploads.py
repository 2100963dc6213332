"""Resumable uploads (spec 0.2.0 row I3): a client declares a file, sends it in chunks of
the size we chose, in any order and as often as it needs, then completes it.

- ``upload_start``: the declared size, type, metadata and image dimensions; answers the
  chunk size (``STUDIO_FILE_CHUNK_SIZE``) and how many chunks to send. One pending upload per
  thread and path: starting again replaces it.
- ``upload_chunk``: stores one chunk's bytes as a blob in Django storage (where thread files
  live; never held beyond the one chunk); sending an index again replaces it.
- ``upload_complete``: every chunk present and of its size, then the one file write
  (``files.file_write``): the same size cap, path and type checks, thumbnails and
  ``file_created``/``file_updated`` frames as a one-shot upload, so the stored file cannot be
  told from one uploaded whole.

An upload not completed within ``STUDIO_UPLOAD_EXPIRE_SECONDS`` is removed with its blobs by
``uploads_expire`` (the ``expire-uploads`` periodic job).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents_app.base.errors import Conflict, Invalid, NotFound
from agents_app.models import ChunkedUpload, ChunkedUploadPart, Thread, ThreadFile
from agents_app.services.threads import files
from runtime.store import file_images
from runtime.store import files as fs


@dataclass(frozen=True)
class UploadPlan:
    """What ``upload_start`` answers (the reference's ``{chunkSize, expectedChunks, path}``)."""

    upload_id: str
    path: str
    chunk_size: int
    expected_chunks: int
    expires_at: datetime.datetime


def expire_seconds() -> int:
    """``STUDIO_UPLOAD_EXPIRE_SECONDS``: how long an unfinished upload is kept."""
    return int(getattr(settings, "STUDIO_UPLOAD_EXPIRE_SECONDS", 24 * 3600))


def upload_start(
    *,
    thread: Thread,
    path: str,
    total_size: int,
    mime_type: str,
    metadata: dict[str, Any] | None = None,
    width: int | None = None,
    height: int | None = None,
) -> UploadPlan:
    """Declare an upload at ``path``; a pending one there is replaced (its chunks removed)."""
    path = files.normalize_path(path)
    if path == fs.ROOT:
        raise Invalid("Cannot write to '/'")
    mime_type = files.clean_mime_type(mime_type)
    if total_size < 0:
        raise Invalid("totalSize must be 0 or more")
    if total_size > files.max_size():
        raise files.TooLarge(f"File is larger than the limit of {files.max_size()} bytes.")
    existing = files.row_at(str(thread.pk), path)
    if existing is not None and existing.is_directory:
        raise files.domain_errors(IsADirectoryError(f"Is a directory: {path}"))
    size = files.chunk_size()
    expected = max(1, -(-total_size // size))
    with transaction.atomic():
        _discard(ChunkedUpload.objects.filter(thread=thread, path=path))
        upload = ChunkedUpload.objects.create(
            thread=thread,
            path=path,
            total_size=total_size,
            mime_type=mime_type,
            metadata=dict(metadata or {}),
            width=width,
            height=height,
            chunk_size=size,
            expected_chunks=expected,
            expires_at=timezone.now() + datetime.timedelta(seconds=expire_seconds()),
        )
    return UploadPlan(str(upload.pk), path, size, expected, upload.expires_at)


def _pending(thread: Thread, path: str, *, lock: bool = False) -> ChunkedUpload:
    path = files.normalize_path(path)
    rows = ChunkedUpload.objects.filter(thread=thread, path=path, expires_at__gt=timezone.now())
    found = (rows.select_for_update() if lock else rows).first()
    if found is None:
        raise NotFound(f"No upload in progress at {path}: start one with POST …/upload/start")
    return found


def chunk_length(upload: ChunkedUpload, index: int) -> int:
    """How many bytes chunk ``index`` holds: the chunk size, the last one the rest."""
    if index < upload.expected_chunks - 1:
        return upload.chunk_size
    return upload.total_size - upload.chunk_size * (upload.expected_chunks - 1)


def read_limit(thread: Thread, path: str, index: int) -> int:
    """How many bytes to read of chunk ``index``'s body: its length plus one, so a longer
    body is seen without reading it all (checks the upload and the index first)."""
    upload = _pending(thread, path)
    _check_index(upload, index)
    return chunk_length(upload, index) + 1


def _check_index(upload: ChunkedUpload, index: int) -> None:
    if not 0 <= index < upload.expected_chunks:
        raise Invalid(
            f"Chunk index {index} is out of range: this upload has {upload.expected_chunks} "
            f"chunk{'s' if upload.expected_chunks != 1 else ''} (0 to {upload.expected_chunks - 1})"
        )


def upload_chunk(*, thread: Thread, path: str, index: int, data: bytes) -> tuple[int, int]:
    """Store chunk ``index`` (again: it replaces the earlier one); returns the index and
    how many distinct chunks the upload holds now."""
    upload = _pending(thread, path)
    _check_index(upload, index)
    want = chunk_length(upload, index)
    if len(data) > want:
        raise files.TooLarge(f"Chunk {index} is larger than {want} bytes")
    if len(data) != want:
        raise Invalid(f"Chunk {index} has {len(data)} bytes; it must have {want}")
    name, size = files.save_blob(str(thread.pk), data)
    try:
        with transaction.atomic():
            locked = _pending(thread, path, lock=True)
            if locked.pk != upload.pk:  # started again meanwhile: its chunks may differ
                raise Conflict(
                    f"The upload at {upload.path} was started again; send chunk {index} again"
                )
            upload = locked
            old = list(upload.parts.filter(index=index).values_list("blob", flat=True))
            upload.parts.filter(index=index).delete()
            ChunkedUploadPart.objects.create(upload=upload, index=index, blob=name, size=size)
            received = upload.parts.count()
            transaction.on_commit(lambda: files.discard_blobs(old))
    except BaseException:
        files.discard_blobs([name])
        raise
    return index, received


def upload_complete(
    *, thread: Thread, path: str, expected_chunks: int, thumbnail: bytes | None = None
) -> ThreadFile:
    """Assemble the chunks into the file at ``path`` through the one file write; the
    upload's rows and blobs are removed once that commits."""
    with transaction.atomic():
        upload = _pending(thread, path, lock=True)
        if expected_chunks != upload.expected_chunks:
            raise Invalid(
                f"expectedChunks is {expected_chunks}, but this upload has "
                f"{upload.expected_chunks} chunks"
            )
        parts = list(upload.parts.order_by("index"))
        missing = sorted(set(range(upload.expected_chunks)) - {p.index for p in parts})
        if missing:
            shown = ", ".join(str(i) for i in missing[:20])
            raise Invalid(f"Missing chunks: {shown}{' …' if len(missing) > 20 else ''}")
        if sum(p.size for p in parts) != upload.total_size:
            raise Invalid(f"The chunks do not add up to the declared {upload.total_size} bytes")
        row = files.file_write(
            thread,
            upload.path,
            _content(upload, parts),
            upload.mime_type,
            metadata=upload.metadata,
            width=upload.width,
            height=upload.height,
            thumbnail=thumbnail,
        )
        _discard(ChunkedUpload.objects.filter(pk=upload.pk))
    return row


def _content(upload: ChunkedUpload, parts: list[ChunkedUploadPart]) -> bytes | Iterator[bytes]:
    """As the one-shot upload reads its body: whole for an image small enough to thumbnail
    (so it gets its thumbnail and dimensions), else streamed chunk by chunk."""
    pieces = (piece for part in parts for piece in files.read_blob(part.blob, 256 * 1024))
    if (
        file_images.is_raster_image(upload.mime_type)
        and upload.total_size <= file_images.THUMBNAIL_INPUT_MAX
    ):
        return b"".join(pieces)
    return pieces


def _discard(uploads: Any) -> None:
    """Delete these uploads; their blobs go once the deletion commits."""
    names = list(
        ChunkedUploadPart.objects.filter(upload__in=uploads).values_list("blob", flat=True)
    )
    uploads.delete()
    if names:
        transaction.on_commit(lambda: files.discard_blobs(names))


def uploads_expire(now: datetime.datetime | None = None) -> int:
    """Remove uploads past their expiry, with their blobs; how many."""
    with transaction.atomic():
        expired = ChunkedUpload.objects.filter(expires_at__lte=now or timezone.now())
        count = expired.count()
        _discard(expired)
    return count
