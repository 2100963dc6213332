"""The file-system part of ``DjangoStore`` (see ``runtime/store/protocol.py``, "files").

A thin async face over ``agents_app.services.threads.files``: each call runs the
service in a worker thread. Streams cross the boundary one chunk at a time, so a
large file is never held whole: writes store each chunk blob as it fills, reads
fetch one blob piece per ``await``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Generator
from typing import Any

from asgiref.sync import sync_to_async

from agents_app.services.threads import files as service
from runtime.store import files as fs
from runtime.store.protocol import (
    FileChunk,
    FileRecord,
    FileSource,
    FileStats,
    FileType,
    GrepResult,
)


async def _store_stream(thread_id: str, data: AsyncIterable[bytes]) -> list[service.Blob]:
    blobs: list[service.Blob] = []
    try:
        async for chunk in fs.arechunk(data, service.chunk_size(), service.max_size()):
            blobs.append(await sync_to_async(service.save_blob)(thread_id, chunk))
    except BaseException:
        await sync_to_async(service.discard_blobs)([name for name, _ in blobs])
        raise
    return blobs


class FileStoreMixin:
    """``write_file`` … ``file_thumbnail`` of the store protocol over the ORM and storage."""

    async def write_file(
        self,
        thread_id: str,
        path: str,
        data: FileSource,
        mime_type: str,
        *,
        metadata: dict[str, Any] | None = None,
        width: int | None = None,
        height: int | None = None,
        thumbnail: bytes | None = None,
    ) -> FileRecord:
        options: dict[str, Any] = {
            "metadata": metadata,
            "width": width,
            "height": height,
            "thumbnail": thumbnail,
        }
        if isinstance(data, bytes):
            row, _ = await sync_to_async(service.write)(thread_id, path, data, mime_type, **options)
            return service.record(row)
        await sync_to_async(service.check_thread)(thread_id)
        blobs = await _store_stream(thread_id, data)

        def commit() -> FileRecord:
            row, _ = service.commit_or_discard(
                blobs, lambda: service.commit_file(thread_id, path, blobs, mime_type, **options)
            )
            return service.record(row)

        return await sync_to_async(commit)()

    async def read_file(self, thread_id: str, path: str) -> bytes | None:
        stream = await self.read_file_stream(thread_id, path)
        if stream is None:
            return None
        return b"".join([chunk.data async for chunk in stream])

    async def read_file_stream(self, thread_id: str, path: str) -> AsyncIterator[FileChunk] | None:
        blobs = await sync_to_async(service.plan)(thread_id, path)
        return None if blobs is None else _stream(blobs)

    async def stat_file(self, thread_id: str, path: str) -> FileRecord | None:
        return await sync_to_async(service.stat)(thread_id, path)

    async def list_dir(self, thread_id: str, path: str) -> list[FileRecord]:
        def run() -> list[FileRecord]:
            return [service.record(r) for r in service.listing(thread_id, path)]

        return await sync_to_async(run)()

    async def delete_file(self, thread_id: str, path: str) -> bool:
        return await sync_to_async(service.remove)(thread_id, path)

    async def remove_dir(self, thread_id: str, path: str) -> bool:
        return await sync_to_async(service.remove)(thread_id, path, directory_only=True)

    async def move_file(self, thread_id: str, src: str, dst: str) -> FileRecord:
        return await sync_to_async(service.move)(thread_id, src, dst)

    async def make_dir(self, thread_id: str, path: str) -> FileRecord:
        made, _ = await sync_to_async(service.make_dir)(thread_id, path)
        return made

    async def file_stats(self, thread_id: str) -> FileStats:
        return await sync_to_async(service.stats)(thread_id)

    async def grep_files(
        self,
        thread_id: str,
        pattern: str,
        *,
        path: str = "/",
        ignore_case: bool = False,
        limit: int = 100,
    ) -> list[GrepResult]:
        return await sync_to_async(service.grep)(
            thread_id, pattern, path=path, ignore_case=ignore_case, limit=limit
        )

    async def find_files(
        self, thread_id: str, pattern: str, *, type: FileType = "all", limit: int = 1000
    ) -> list[FileRecord]:
        def run() -> list[FileRecord]:
            rows = service.find(thread_id, pattern, type=type, limit=limit)
            return [service.record(r) for r in rows]

        return await sync_to_async(run)()

    async def file_thumbnail(self, thread_id: str, path: str) -> bytes | None:
        return await sync_to_async(service.thumbnail)(thread_id, path)


async def _stream(blobs: list[service.Blob]) -> AsyncIterator[FileChunk]:
    total = service.total_chunks(blobs)
    pieces = service.chunks(blobs)
    read = sync_to_async(_next, thread_sensitive=False)
    index = 0
    try:
        # One blocking read per chunk, off the event loop.
        while (data := await read(pieces)) is not None:
            yield FileChunk(data, index, total, index == total - 1)
            index += 1
    finally:
        await sync_to_async(pieces.close, thread_sensitive=False)()


def _next(pieces: Generator[bytes, None, None]) -> bytes | None:
    return next(pieces, None)
