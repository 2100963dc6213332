"""``DjangoStore``'s file system on PostgreSQL and local disk storage (a temp dir): chunk
blobs on disk, bounded memory for a 50 MB file, cleanup of replaced and failed blobs."""

from __future__ import annotations

import hashlib
import os
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.bridge.store import DjangoStore
from agents_app.models import ThreadFile, ThreadFileChunk
from runtime.core.messages import new_id
from runtime.store.files import FileTooLargeError
from runtime.store.protocol import NewThread
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db(transaction=True)

MiB = 1024 * 1024


@pytest.fixture
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@pytest.fixture
async def thread_id(media: Path, close_thread_connections: Any) -> str:
    await sync_to_async(define_agent)("helper")
    new = NewThread(id=new_id(), agent_name="helper")
    await DjangoStore().create_thread(new)
    return new.id


def _blobs_on_disk(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


async def _generate(size: int, piece: int, digest: Any) -> AsyncIterator[bytes]:
    """``size`` bytes in ``piece``-sized pieces, each numbered so order matters."""
    block = bytes(range(256)) * (piece // 256)
    sent = 0
    while sent < size:
        data = (sent // piece).to_bytes(8, "big") + block[8 : min(piece, size - sent)]
        digest.update(data)
        sent += len(data)
        yield data


async def test_a_50_mb_file_is_written_and_streamed_back_with_bounded_memory(
    thread_id: str, media: Path
) -> None:
    store = DjangoStore()
    size = 50 * MiB
    written = hashlib.sha256()
    tracemalloc.start()
    try:
        record = await store.write_file(
            thread_id, "/video.bin", _generate(size, 64 * 1024, written), "video/mp4"
        )
        _, write_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        stream = await store.read_file_stream(thread_id, "/video.bin")
        assert stream is not None
        read = hashlib.sha256()
        indexes, sizes = [], []
        async for chunk in stream:
            read.update(chunk.data)
            indexes.append((chunk.index, chunk.total_chunks, chunk.is_last))
            sizes.append(len(chunk.data))
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    chunks = -(-size // 1_835_008)  # 29
    assert (record.size, record.is_chunked, record.chunk_count) == (size, True, chunks)
    assert read.hexdigest() == written.hexdigest()
    assert sizes == [1_835_008] * (chunks - 1) + [size - 1_835_008 * (chunks - 1)]
    assert indexes[0] == (0, chunks, False) and indexes[-1] == (chunks - 1, chunks, True)
    # Bounded memory: a few chunks' worth, never the file (peaks printed for the report).
    print(
        f"50 MiB file: write peak {write_peak / MiB:.1f} MiB, read peak {read_peak / MiB:.1f} MiB"
    )
    assert write_peak < 8 * MiB, write_peak
    assert read_peak < 8 * MiB, read_peak
    # On disk: one blob per chunk under threads/<id>/, no whole-file blob.
    blobs = _blobs_on_disk(media)
    assert len(blobs) == chunks
    assert all(p.parent == media / "threads" / thread_id for p in blobs)
    assert await ThreadFileChunk.objects.filter(file__path="/video.bin").acount() == chunks


async def test_replaced_and_deleted_files_leave_no_blobs(thread_id: str, media: Path) -> None:
    store = DjangoStore()
    big = os.urandom(4 * MiB)
    await store.write_file(thread_id, "/a.bin", big, "application/octet-stream")
    assert len(_blobs_on_disk(media)) == 3  # 1.75 + 1.75 + 0.5 MiB
    await store.write_file(thread_id, "/a.bin", b"small", "application/octet-stream")
    assert [p.read_bytes() for p in _blobs_on_disk(media)] == [b"small"]
    assert await ThreadFileChunk.objects.acount() == 0
    assert await store.delete_file(thread_id, "/a.bin") is True
    assert _blobs_on_disk(media) == []


async def test_deleting_a_thread_deletes_its_chunk_blobs(thread_id: str, media: Path) -> None:
    from agents_app.models import Thread
    from agents_app.services.threads.changes import thread_delete

    store = DjangoStore()
    await store.write_file(thread_id, "/big.bin", os.urandom(4 * MiB), "application/octet-stream")
    await store.write_file(thread_id, "/small.txt", b"hello", "text/plain")
    assert len(_blobs_on_disk(media)) == 4  # three chunks and one whole file

    def delete() -> None:
        from django.db import transaction

        with transaction.atomic():
            thread_delete(thread=Thread.objects.get(pk=thread_id))

    await sync_to_async(delete)()
    assert _blobs_on_disk(media) == []


async def test_a_failed_streamed_write_leaves_no_blobs(
    thread_id: str, media: Path, settings: Any
) -> None:
    settings.STUDIO_FILE_MAX_SIZE = 5 * MiB
    store = DjangoStore()
    await store.write_file(thread_id, "/keep.txt", b"kept", "text/plain")
    with pytest.raises(FileTooLargeError):
        await store.write_file(
            thread_id, "/keep.txt", _generate(6 * MiB, 64 * 1024, hashlib.sha256()), "text/plain"
        )
    assert [p.read_bytes() for p in _blobs_on_disk(media)] == [b"kept"]
    assert await store.read_file(thread_id, "/keep.txt") == b"kept"
    assert await ThreadFile.objects.filter(is_directory=False).acount() == 1


async def test_writes_to_a_missing_thread_are_a_lookup_error(media: Path) -> None:
    store = DjangoStore()
    missing = new_id()
    with pytest.raises(LookupError):
        await store.write_file(missing, "/x", b"x", "text/plain")
    with pytest.raises(LookupError):
        await store.file_stats(missing)
    assert _blobs_on_disk(media) == []
