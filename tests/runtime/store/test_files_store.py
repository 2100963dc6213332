"""The thread file system through ``ThreadState`` and the store protocol.

Runs over the memory store here and over ``DjangoStore`` (PostgreSQL, local disk in a
temp dir) in tests/agents_app/bridge/engine_on_django, so both implementations behave alike.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from PIL import Image

from runtime.store.files import DirectoryNotEmptyError, FilePathError, FileTooLargeError
from runtime.store.memory import MemoryStore
from runtime.store.protocol import FileChunk, Store
from tests.runtime.conftest import World, agent, prompt

Limits = Callable[..., None]


@pytest.fixture
def limits(store: Store, request: pytest.FixtureRequest, tmp_path: Any) -> Limits:
    """Set the store's chunk size / maximum file size (a setting for DjangoStore, whose
    blobs also go to a temp dir instead of the media root)."""
    django_settings = None
    if not isinstance(store, MemoryStore):
        django_settings = request.getfixturevalue("settings")
        django_settings.MEDIA_ROOT = str(tmp_path)

    def apply(chunk_size: int | None = None, max_size: int | None = None) -> None:
        if isinstance(store, MemoryStore):
            if chunk_size is not None:
                store.chunk_size = chunk_size
            if max_size is not None:
                store.max_file_size = max_size
        else:
            if chunk_size is not None:
                django_settings.STUDIO_FILE_CHUNK_SIZE = chunk_size
            if max_size is not None:
                django_settings.STUDIO_FILE_MAX_SIZE = max_size

    return apply


@pytest.fixture
async def state(world: World, limits: Limits) -> Any:
    world.define(prompt(), agent())
    thread = await world.thread()
    return await world.engine.thread_state(thread.id)


def _events(world: World, state: Any) -> list[tuple[str, Any]]:
    frames = world.sink.of_type(state.thread_id, "event")
    return [(f["eventType"], f["data"]) for f in frames if f["eventType"].startswith("file_")]


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        await asyncio.sleep(0)
        yield data[i : i + size]


async def _collect(stream: AsyncIterator[FileChunk] | None) -> list[FileChunk]:
    assert stream is not None
    return [chunk async for chunk in stream]


def _png(width: int = 640, height: int = 480) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


# --- write, read, stat, readdir, unlink ------------------------------------------------------


async def test_write_read_stat_readdir_unlink(state: Any) -> None:
    record = await state.write_file("docs//a.txt", "alpha", "text/plain", metadata={"k": 1})
    assert (record.path, record.name, record.size, record.mime_type) == (
        "/docs/a.txt",
        "a.txt",
        5,
        "text/plain",
    )
    assert record.metadata == {"k": 1} and not record.is_chunked and record.chunk_count == 0
    assert await state.read_file("/docs/a.txt") == b"alpha"
    assert (await state.stat("/docs")).is_directory
    assert (await state.stat("/")).is_directory
    assert await state.stat("/missing") is None
    assert await state.read_file("/missing") is None
    assert await state.read_file("/docs") is None  # a directory has no bytes
    assert [e.path for e in (await state.readdir_file("/")).entries] == ["/docs"]
    assert [e.path for e in await state.readdir("/docs")] == ["/docs/a.txt"]
    assert await state.unlink_file("/docs/a.txt") is True
    assert await state.unlink("/docs/a.txt") is False
    assert await state.stat("/docs/a.txt") is None


async def test_overwrite_replaces_content_and_emits_updated(state: Any, world: World) -> None:
    await state.write_file("/n.txt", b"one", "text/plain")
    await state.write_file("/n.txt", b"second", "text/markdown")
    assert await state.read_file("/n.txt") == b"second"
    record = await state.stat("/n.txt")
    assert (record.size, record.mime_type) == (6, "text/markdown")
    await state.mkdir("/d")
    await state.mkdir("/d")  # idempotent: no second event
    await state.unlink("/n.txt")
    kinds = [(kind, data["path"]) for kind, data in _events(world, state)]
    assert kinds == [
        ("file_created", "/n.txt"),
        ("file_updated", "/n.txt"),
        ("file_created", "/d"),
        ("file_deleted", "/n.txt"),
    ]


async def test_file_events_carry_the_reference_file_record(state: Any, world: World) -> None:
    await state.write_file("/a/b.json", "{}", "application/json")
    kind, data = _events(world, state)[0]
    assert kind == "file_created"
    assert set(data["file"]) == {
        "path",
        "name",
        "mimeType",
        "storage",
        "location",
        "size",
        "metadata",
        "isDirectory",
        "createdAt",
        "width",
        "height",
        "isChunked",
        "chunkCount",
    }
    assert (data["path"], data["file"]["size"], data["file"]["isDirectory"]) == (
        "/a/b.json",
        2,
        False,
    )


# --- chunking and streaming ----------------------------------------------------------------------


async def test_spec_large_files_are_chunked_above_1_75_mib(state: Any) -> None:
    data = bytes(range(256)) * 8192  # 2 MiB
    record = await state.write_file("/big.bin", data)
    assert (record.is_chunked, record.chunk_count, record.size) == (True, 2, len(data))
    chunks = await _collect(await state.read_file_stream("/big.bin"))
    assert [len(c.data) for c in chunks] == [1_835_008, len(data) - 1_835_008]
    assert b"".join(c.data for c in chunks) == data


async def test_spec_small_files_stream_as_one_chunk(state: Any) -> None:
    await state.write_file("/s.txt", "small", "text/plain")
    chunks = await _collect(await state.read_file_stream("/s.txt"))
    assert [(c.data, c.index, c.total_chunks, c.is_last) for c in chunks] == [
        (b"small", 0, 1, True)
    ]


async def test_spec_read_file_stream_is_none_for_missing_files(state: Any) -> None:
    await state.mkdir("/dir")
    assert await state.read_file_stream("/nope") is None
    assert await state.read_file_stream("/dir") is None


async def test_streamed_write_is_stored_in_chunks_and_streamed_back(
    state: Any, limits: Limits
) -> None:
    limits(chunk_size=1000)
    data = bytes(i % 251 for i in range(4500))
    record = await state.write_file("/s/data.bin", _pieces(data, 333))
    assert (record.size, record.is_chunked, record.chunk_count) == (4500, True, 5)
    chunks = await _collect(await state.read_file_stream("/s/data.bin"))
    assert [(len(c.data), c.index, c.total_chunks, c.is_last) for c in chunks] == [
        (1000, 0, 5, False),
        (1000, 1, 5, False),
        (1000, 2, 5, False),
        (1000, 3, 5, False),
        (500, 4, 5, True),
    ]
    assert b"".join(c.data for c in chunks) == data
    assert await state.read_file("/s/data.bin") == data
    # Rewritten smaller: one plain blob again.
    small = await state.write_file("/s/data.bin", b"tiny")
    assert (small.is_chunked, small.chunk_count) == (False, 0)
    assert await state.read_file("/s/data.bin") == b"tiny"


async def test_write_from_a_file_object(state: Any, limits: Limits) -> None:
    limits(chunk_size=64)
    data = b"line\n" * 100
    record = await state.write_file("/f.txt", io.BytesIO(data), "text/plain")
    assert (record.size, record.chunk_count) == (500, 8)
    assert await state.read_file("/f.txt") == data


async def test_empty_file_streams_as_one_empty_chunk(state: Any) -> None:
    await state.write_file("/empty", _pieces(b"", 10))
    chunks = await _collect(await state.read_file_stream("/empty"))
    assert [(c.data, c.index, c.total_chunks, c.is_last) for c in chunks] == [(b"", 0, 1, True)]
    assert (await state.stat("/empty")).size == 0


async def test_abort_signal_stops_the_stream(state: Any, limits: Limits) -> None:
    limits(chunk_size=10)
    await state.write_file("/x", b"0123456789" * 5)
    signal = asyncio.Event()
    seen = []
    stream = await state.read_file_stream("/x", signal=signal)
    async for chunk in stream:
        seen.append(chunk.index)
        if chunk.index == 1:
            signal.set()
    assert seen == [0, 1]


async def test_too_large_writes_are_refused_and_keep_the_old_content(
    state: Any, limits: Limits
) -> None:
    limits(chunk_size=100, max_size=1000)
    await state.write_file("/keep.bin", b"old")
    with pytest.raises(FileTooLargeError, match="larger than the limit of 1000 bytes"):
        await state.write_file("/keep.bin", _pieces(b"x" * 1500, 300))
    with pytest.raises(FileTooLargeError):
        await state.write_file("/new.bin", b"y" * 1001)
    assert await state.read_file("/keep.bin") == b"old"
    assert await state.stat("/new.bin") is None


# --- directories ----------------------------------------------------------------------------------


async def test_spec_rmdir_removes_only_empty_directories(state: Any, world: World) -> None:
    await state.write_file("/full/a.txt", "a", "text/plain")
    await state.mkdir_file("/empty/inner")
    with pytest.raises(DirectoryNotEmptyError, match="Directory not empty: /full"):
        await state.rmdir("/full")
    with pytest.raises(NotADirectoryError):
        await state.rmdir("/full/a.txt")
    with pytest.raises(DirectoryNotEmptyError):
        await state.unlink("/empty")
    assert await state.rmdir_file("/empty/inner") is True
    assert await state.rmdir("/empty") is True
    assert await state.rmdir("/empty") is False
    with pytest.raises(FilePathError):
        await state.rmdir("/")
    assert await state.stat("/full/a.txt") is not None
    deleted = [data["path"] for kind, data in _events(world, state) if kind == "file_deleted"]
    assert deleted == ["/empty/inner", "/empty"]


async def test_files_and_directories_do_not_overlap(state: Any) -> None:
    await state.write_file("/f", "x", "text/plain")
    with pytest.raises(NotADirectoryError):
        await state.write_file("/f/child.txt", "y", "text/plain")
    with pytest.raises(NotADirectoryError):
        await state.mkdir("/f/sub")
    await state.mkdir("/dir")
    with pytest.raises(IsADirectoryError):
        await state.write_file("/dir", "z", "text/plain")
    assert await state.read_file("/f") == b"x"


async def test_file_stats(state: Any) -> None:
    stats = await state.get_file_stats()
    assert (stats.file_count, stats.directory_count, stats.total_size) == (0, 0, 0)
    await state.write_file("/a/b/c.txt", "12345", "text/plain")
    await state.write_file("/a/d.bin", b"\x00" * 10)
    await state.mkdir("/e")
    stats = await state.get_file_stats()
    assert (stats.file_count, stats.directory_count, stats.total_size) == (2, 3, 15)


# --- grep and find --------------------------------------------------------------------------------


async def test_grep_files_is_a_regex_over_text_files(state: Any) -> None:
    await state.write_file(
        "/notes/a.md", "first line\nTODO: tea\nnothing\ntodo: milk\n", "text/markdown"
    )
    await state.write_file("/notes/b.json", '{"todo": "TODO: bread"}', "application/json")
    await state.write_file("/bin/c.bin", b"TODO: binary", "application/octet-stream")
    results = await state.grep_files(r"TODO: \w+")
    assert [(r.path, r.matches) for r in results] == [
        ("/notes/a.md", [(2, "TODO: tea")]),
        ("/notes/b.json", [(1, '{"todo": "TODO: bread"}')]),
    ]
    folded = await state.grep_files("todo:", ignore_case=True, path="/notes/a.md")
    assert [(r.path, [n for n, _ in r.matches]) for r in folded] == [("/notes/a.md", [2, 4])]
    assert await state.grep_files("todo", path="/bin") == []
    limited = await state.grep_files("(?i)todo", limit=2)
    assert sum(len(r.matches) for r in limited) == 2


async def test_grep_finds_lines_across_chunk_boundaries(state: Any, limits: Limits) -> None:
    limits(chunk_size=7)
    text = "abc\nneedle in a haystack\nxyz\nsecond needle here\n"
    await state.write_file("/h.txt", _pieces(text.encode(), 5), "text/plain")
    (result,) = await state.grep_files("needle")
    assert result.matches == [(2, "needle in a haystack"), (4, "second needle here")]


async def test_grep_rejects_an_invalid_regex(state: Any) -> None:
    with pytest.raises(ValueError, match="Invalid regular expression"):
        await state.grep_files("(unclosed")


async def test_find_files_with_globs(state: Any) -> None:
    for path in ("/a.txt", "/docs/b.txt", "/docs/deep/c.txt", "/docs/d.md"):
        await state.write_file(path, "x", "text/plain")
    assert (await state.find_files("*.txt")).paths == ["/a.txt", "/docs/b.txt", "/docs/deep/c.txt"]
    assert (await state.find_files("/*.txt")).paths == ["/a.txt"]
    assert (await state.find_files("/docs/**/*.txt")).paths == ["/docs/b.txt", "/docs/deep/c.txt"]
    assert (await state.find_files("/docs/?.md")).paths == ["/docs/d.md"]
    assert (await state.find_files("**", type="directory")).paths == ["/docs", "/docs/deep"]
    assert (await state.find_files("**", type="file", limit=2)).paths == ["/a.txt", "/docs/b.txt"]


# --- thumbnails -------------------------------------------------------------------------------------


async def test_images_get_a_thumbnail_and_their_dimensions(state: Any) -> None:
    record = await state.write_file("/pics/p.png", _png(640, 480), "image/png")
    assert (record.width, record.height) == (640, 480)
    thumbnail = await state.get_file_thumbnail("/pics/p.png")
    assert thumbnail is not None
    image = Image.open(io.BytesIO(thumbnail))
    assert (image.format, image.size) == ("JPEG", (256, 192))
    await state.write_file("/t.txt", "text", "text/plain")
    assert await state.get_file_thumbnail("/t.txt") is None
    assert await state.get_file_thumbnail("/missing.png") is None
    # Not really an image: stored, no thumbnail.
    await state.write_file("/fake.png", b"not a png", "image/png")
    assert await state.get_file_thumbnail("/fake.png") is None


# --- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["../x", "a/../../b", "/a/b/../../../etc/passwd", "C:\\Windows\\x", "c:/x", "a\x00b"]
)
async def test_traversal_and_bad_paths_are_refused(state: Any, path: str) -> None:
    with pytest.raises(FilePathError):
        await state.write_file(path, "x", "text/plain")
    with pytest.raises(FilePathError):
        await state.read_file(path)
    with pytest.raises(FilePathError):
        await state.read_file_stream(path)
    assert (await state.get_file_stats()).file_count == 0
