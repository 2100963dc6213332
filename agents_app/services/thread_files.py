"""A thread's file system over HTTP: write, make directories, delete.

Paths are normalized like the engine's (leading ``/``, no trailing ``/``, no
``.``/``..`` segments). Bytes live in Django storage; storage files are removed
after the database change commits. Every change is announced as an ``event``
frame (``file_created`` / ``file_updated`` / ``file_deleted``).
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from agents_app import wire
from agents_app.bridge.events import send_thread_frames
from agents_app.errors import Conflict, Invalid, NotFound
from agents_app.models import Thread, ThreadFile
from runtime.events import event

logger = logging.getLogger(__name__)

DIRECTORY = "inode/directory"
PATH_MAX = 1024


def normalize_path(raw: str) -> str:
    """``a//b/./c/`` → ``/a/b/c``; ``Invalid`` for ``..``, NUL or over-long paths."""
    if "\x00" in raw or len(raw) > PATH_MAX:
        raise Invalid("Invalid path")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise Invalid("Invalid path: '..' is not allowed")
    return "/" + "/".join(parts)


def _ensure_dirs(thread: Thread, path: str) -> None:
    while path not in ("/", ""):
        row, _ = ThreadFile.objects.get_or_create(
            thread=thread,
            path=path,
            defaults={
                "name": posixpath.basename(path),
                "mime_type": DIRECTORY,
                "is_directory": True,
            },
        )
        if not row.is_directory:
            raise Conflict(f"Not a directory: {path}")
        path = posixpath.dirname(path)


def _after_commit_delete(names: list[str]) -> None:
    def delete() -> None:
        for name in names:
            try:
                default_storage.delete(name)
            except OSError:
                logger.warning("could not delete %s", name, exc_info=True)

    if names:
        transaction.on_commit(delete)


def _announce(thread: Thread, frame: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))


@transaction.atomic
def file_write(
    thread: Thread,
    path: str,
    data: bytes,
    mime_type: str,
    *,
    metadata: dict[str, Any] | None = None,
    width: int | None = None,
    height: int | None = None,
) -> ThreadFile:
    """Create or replace a file (parent directories are created)."""
    path = normalize_path(path)
    if path == "/":
        raise Invalid("Cannot write to '/'")
    _ensure_dirs(thread, posixpath.dirname(path))
    row, created = ThreadFile.objects.select_for_update().get_or_create(
        thread=thread, path=path, defaults={"name": posixpath.basename(path)}
    )
    if row.is_directory:
        raise Conflict(f"Is a directory: {path}")
    old = [str(row.blob.name)] if row.blob else []
    row.mime_type, row.size = (mime_type or "application/octet-stream")[:200], len(data)
    row.metadata, row.width, row.height = dict(metadata or {}), width, height
    row.blob.save(uuid.uuid4().hex, ContentFile(data), save=False)
    row.save()
    _after_commit_delete(old)
    kind = "file_created" if created else "file_updated"
    _announce(thread, event(kind, {"path": path, "file": wire.file_record(row)}))
    return row


@transaction.atomic
def dir_make(thread: Thread, path: str) -> ThreadFile:
    path = normalize_path(path)
    if path == "/":
        raise Invalid("'/' always exists")
    _ensure_dirs(thread, path)
    row = ThreadFile.objects.get(thread=thread, path=path)
    _announce(thread, event("file_created", {"path": path, "file": wire.file_record(row)}))
    return row


@transaction.atomic
def file_delete(thread: Thread, path: str) -> None:
    """Delete a file or an empty directory."""
    path = normalize_path(path)
    row = ThreadFile.objects.filter(thread=thread, path=path).first()
    if row is None:
        raise NotFound("Not found")
    if (
        row.is_directory
        and ThreadFile.objects.filter(thread=thread, path__startswith=path + "/").exists()
    ):
        raise Conflict("Directory not empty")
    names = [str(f.name) for f in (row.blob, row.thumbnail) if f]
    names += [str(c.blob.name) for c in row.chunks.all() if c.blob]
    row.delete()
    _after_commit_delete(names)
    _announce(thread, event("file_deleted", {"path": path}))


def file_bytes(row: ThreadFile) -> bytes:
    if row.is_chunked:
        return b"".join(_read(c.blob) for c in row.chunks.order_by("index"))
    return _read(row.blob) if row.blob else b""


def _read(field: Any) -> bytes:
    with field.open("rb") as fh:
        return bytes(fh.read())
