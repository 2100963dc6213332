"""A thread's file system in the database and Django storage: the one implementation
behind both ``DjangoStore`` (the engine) and the ``/fs`` HTTP routes.

Rows (``ThreadFile``) hold the tree and metadata; bytes live in Django's default
storage (local disk or an S3-compatible bucket, see docs/files.md). A file above
``STUDIO_FILE_CHUNK_SIZE`` is stored as ordered ``ThreadFileChunk`` blobs of exactly
that size (the last one shorter), written and read one chunk at a time.

Two layers:

- the core (``write``, ``stream``, ``remove`` …) takes a thread id and an already
  normalized path, raises the engine's errors (``IsADirectoryError``,
  ``NotADirectoryError``, ``DirectoryNotEmptyError``, ``FileTooLargeError``,
  ``LookupError`` for a missing thread) and announces nothing: the engine's
  ``ThreadState`` emits its own events;
- the HTTP layer (``file_write``, ``dir_make``, ``file_delete`` …) takes a ``Thread``,
  normalizes the raw path, turns those errors into domain errors (400/404/409/413)
  and announces ``file_*`` event frames after the commit.

Blobs are written before the row changes and removed after the commit that stops
referencing them; a failed write removes the blobs it wrote.
"""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
import posixpath
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, TypeVar

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Count, Q, Sum

from agents_app.base.errors import Conflict, DomainError, Invalid, NotFound
from agents_app.broadcast.events import send_thread_frames
from agents_app.models import ChunkedUploadPart, Thread, ThreadFile, ThreadFileChunk
from agents_app.models.timestamps import now_us
from runtime.core.mime_types import MimeTypeError, normalize_mime_type
from runtime.store import file_images
from runtime.store import files as fs
from runtime.store.events import event
from runtime.store.protocol import FileRecord, FileStats, FileType, GrepResult

logger = logging.getLogger(__name__)

DIRECTORY = fs.DIRECTORY_MIME
T = TypeVar("T")

Blob = tuple[str, int]  # (storage name, size)


class TooLarge(DomainError):
    status = 413


def chunk_size() -> int:
    """``STUDIO_FILE_CHUNK_SIZE`` (bytes)."""
    return int(getattr(settings, "STUDIO_FILE_CHUNK_SIZE", fs.CHUNK_SIZE))


def max_size() -> int:
    """``STUDIO_FILE_MAX_SIZE`` (bytes)."""
    return int(getattr(settings, "STUDIO_FILE_MAX_SIZE", fs.MAX_FILE_SIZE))


def record(row: ThreadFile) -> FileRecord:
    """The engine's record of a row."""
    return FileRecord(
        path=row.path,
        name=row.name,
        mime_type=row.mime_type,
        size=row.size,
        is_directory=row.is_directory,
        metadata=row.metadata or {},
        width=row.width,
        height=row.height,
        created_at=int(row.created_at.timestamp() * 1000),
        is_chunked=row.is_chunked,
        chunk_count=row.chunk_count,
        has_thumbnail=bool(row.thumbnail),
    )


def file_wire(row: ThreadFile) -> dict[str, Any]:
    """A row in the reference's ``FileRecord`` wire shape: the same one events carry."""
    return fs.file_wire(record(row))


def root_record() -> FileRecord:
    return FileRecord(path="/", name="", mime_type=DIRECTORY, is_directory=True)


def check_thread(thread_id: str) -> None:
    """``LookupError`` when the thread does not exist (the store protocol's rule)."""
    if not Thread.objects.filter(pk=thread_id).exists():
        raise LookupError(f"Thread not found: {thread_id}")


# --- blobs ---------------------------------------------------------------------------------


def save_blob(thread_id: str, data: bytes) -> Blob:
    """Store one chunk (or a whole small file) and return its storage name and size."""
    name = default_storage.save(f"threads/{thread_id}/{uuid.uuid4().hex}", ContentFile(data))
    return name, len(data)


def discard_blobs(names: Iterable[str]) -> None:
    """Remove blobs now (best effort: a leftover blob is logged, never an error)."""
    for name in names:
        try:
            default_storage.delete(name)
        except OSError:
            logger.warning("could not delete %s", name, exc_info=True)


def _discard_on_commit(names: list[str]) -> None:
    if names:
        transaction.on_commit(lambda: discard_blobs(names))


def _blob_names(row: ThreadFile) -> list[str]:
    names = [str(f.name) for f in (row.blob, row.thumbnail) if f]
    names += [str(n) for n in row.chunks.values_list("blob", flat=True) if n]
    return names


def blob_names_of_threads(thread_ids: Iterable[Any]) -> list[str]:
    """Every blob of these threads' files (for deleting threads)."""
    ids = list(thread_ids)
    rows = ThreadFile.objects.filter(thread_id__in=ids)
    names = [n for pair in rows.values_list("blob", "thumbnail") for n in pair if n]
    chunks = ThreadFileChunk.objects.filter(file__in=rows).values_list("blob", flat=True)
    # Chunks of unfinished resumable uploads (``uploads.py``) are blobs of the thread too.
    parts = ChunkedUploadPart.objects.filter(upload__thread_id__in=ids).values_list(
        "blob", flat=True
    )
    return names + [n for n in chunks if n] + [n for n in parts if n]


def read_blob(name: str, piece: int) -> Iterator[bytes]:
    """A blob in pieces of at most ``piece`` bytes."""
    with default_storage.open(name, "rb") as fh:
        while data := fh.read(piece):
            yield bytes(data)


# --- core: writes ------------------------------------------------------------------------------


def _ensure_dirs(thread_id: str, path: str) -> None:
    """Create ``path`` and its missing parents; ``NotADirectoryError`` if one is a file."""
    chain: list[str] = []
    while path not in ("/", ""):
        chain.append(path)
        path = posixpath.dirname(path)
    if not chain:
        return
    found = dict(
        ThreadFile.objects.filter(thread_id=thread_id, path__in=chain).values_list(
            "path", "is_directory"
        )
    )
    for p in chain:
        if p in found and not found[p]:
            raise NotADirectoryError(f"Not a directory: {p}")
    missing = [
        ThreadFile(
            thread_id=thread_id,
            path=p,
            name=posixpath.basename(p),
            mime_type=DIRECTORY,
            is_directory=True,
        )
        for p in reversed(chain)
        if p not in found
    ]
    ThreadFile.objects.bulk_create(missing, ignore_conflicts=True)


@transaction.atomic
def commit_file(
    thread_id: str,
    path: str,
    blobs: list[Blob],
    mime_type: str,
    *,
    metadata: dict[str, Any] | None = None,
    width: int | None = None,
    height: int | None = None,
    thumbnail: bytes | None = None,
) -> tuple[ThreadFile, bool]:
    """Point the file at already stored ``blobs`` (one: a plain file; more: chunks).

    Returns the row and whether it was created. The previous blobs are removed on commit.
    """
    check_thread(thread_id)
    if path == fs.ROOT:
        raise IsADirectoryError("Is a directory: /")
    _ensure_dirs(thread_id, posixpath.dirname(path))
    row, created = ThreadFile.objects.select_for_update().get_or_create(
        thread_id=thread_id, path=path, defaults={"name": posixpath.basename(path)}
    )
    if row.is_directory:
        raise IsADirectoryError(f"Is a directory: {path}")
    old = [] if created else _blob_names(row)
    row.chunks.all().delete()
    row.mime_type = normalize_mime_type(mime_type)
    row.size = sum(size for _, size in blobs)
    row.metadata, row.width, row.height = dict(metadata or {}), width, height
    row.is_chunked = len(blobs) > 1
    row.chunk_count = len(blobs) if row.is_chunked else 0
    row.blob.name = None if row.is_chunked else blobs[0][0]
    row.thumbnail.name = None
    if thumbnail is not None:
        row.thumbnail.save(uuid.uuid4().hex, ContentFile(thumbnail), save=False)
    row.save()
    if row.is_chunked:
        ThreadFileChunk.objects.bulk_create(
            ThreadFileChunk(file=row, index=i, blob=name, size=size)
            for i, (name, size) in enumerate(blobs)
        )
    _discard_on_commit(old)
    return row, created


def store_pieces(thread_id: str, pieces: Iterable[bytes]) -> list[Blob]:
    """Store a stream of byte pieces as chunk blobs (one chunk in memory at a time)."""
    blobs: list[Blob] = []
    try:
        for chunk in fs.rechunk(pieces, chunk_size(), max_size()):
            blobs.append(save_blob(thread_id, chunk))
    except BaseException:
        discard_blobs(name for name, _ in blobs)
        raise
    return blobs


def commit_or_discard(blobs: list[Blob], commit: Callable[[], T]) -> T:
    """Run ``commit``; when it fails, the blobs it would have referenced are removed."""
    try:
        return commit()
    except BaseException:
        discard_blobs(name for name, _ in blobs)
        raise


def write(
    thread_id: str,
    path: str,
    data: bytes | Iterable[bytes],
    mime_type: str,
    *,
    metadata: dict[str, Any] | None = None,
    width: int | None = None,
    height: int | None = None,
    thumbnail: bytes | None = None,
) -> tuple[ThreadFile, bool]:
    """Store bytes or a stream of pieces at ``path`` (see ``commit_file``)."""
    check_thread(thread_id)
    blobs = store_pieces(thread_id, [data] if isinstance(data, bytes) else data)
    return commit_or_discard(
        blobs,
        lambda: commit_file(
            thread_id,
            path,
            blobs,
            mime_type,
            metadata=metadata,
            width=width,
            height=height,
            thumbnail=thumbnail,
        ),
    )


@transaction.atomic
def make_dir(thread_id: str, path: str) -> tuple[FileRecord, bool]:
    """Create a directory and its parents; its record and whether it is new."""
    check_thread(thread_id)
    if path == fs.ROOT:
        return root_record(), False
    existed = ThreadFile.objects.filter(thread_id=thread_id, path=path).exists()
    _ensure_dirs(thread_id, path)
    return record(ThreadFile.objects.get(thread_id=thread_id, path=path)), not existed


@transaction.atomic
def move(thread_id: str, src: str, dst: str) -> FileRecord:
    """Move a file or a directory with its entries (``Store.move_file``). Only paths change:
    the blobs are named apart from paths, so nothing is copied."""
    check_thread(thread_id)
    fs.check_move(src, dst)
    moving = ThreadFile.objects.select_for_update().filter(thread_id=thread_id)
    rows = list(moving.filter(Q(path=src) | Q(path__startswith=src + "/")))
    if not any(row.path == src for row in rows):
        raise FileNotFoundError(f"No such file or directory: {src}")
    if ThreadFile.objects.filter(thread_id=thread_id, path=dst).exists():
        raise FileExistsError(f"Destination already exists: {dst}")
    # Nothing under ``dst`` can exist either: every entry's parents are rows, so the unique
    # (thread, path) constraint holds for the one UPDATE below.
    _ensure_dirs(thread_id, posixpath.dirname(dst))
    for row in rows:
        row.path = fs.moved_path(row.path, src, dst)
        row.name = posixpath.basename(row.path)
    ThreadFile.objects.bulk_update(rows, ["path", "name"])
    return record(next(row for row in rows if row.path == dst))


@transaction.atomic
def remove(thread_id: str, path: str, *, directory_only: bool = False) -> bool:
    """Delete a file or an empty directory; ``False`` when nothing was there."""
    check_thread(thread_id)
    row = ThreadFile.objects.select_for_update().filter(thread_id=thread_id, path=path).first()
    if row is None:
        return False
    if directory_only and not row.is_directory:
        raise NotADirectoryError(f"Not a directory: {path}")
    if (
        row.is_directory
        and ThreadFile.objects.filter(thread_id=thread_id, path__startswith=path + "/").exists()
    ):
        raise fs.DirectoryNotEmptyError(f"Directory not empty: {path}")
    names = _blob_names(row)
    row.delete()
    _discard_on_commit(names)
    return True


# --- core: reads -------------------------------------------------------------------------------


def row_at(thread_id: str, path: str) -> ThreadFile | None:
    return ThreadFile.objects.filter(thread_id=thread_id, path=path).first()


def stat(thread_id: str, path: str) -> FileRecord | None:
    check_thread(thread_id)
    if path == fs.ROOT:
        return root_record()
    row = row_at(thread_id, path)
    return record(row) if row else None


def listing(thread_id: str, path: str) -> list[ThreadFile]:
    """Direct entries of ``path``, by path."""
    check_thread(thread_id)
    prefix = path.rstrip("/") + "/"
    rows = ThreadFile.objects.filter(thread_id=thread_id, path__startswith=prefix)
    # Direct children only: no further '/' after the prefix.
    rows = rows.exclude(path__regex=r"^" + _regex_literal(prefix) + r".*/")
    return list(rows.order_by("path"))


def _regex_literal(text: str) -> str:
    return "".join("\\" + c if c in r".^$*+?{}[]\|()" else c for c in text)


def blobs_of(row: ThreadFile) -> list[Blob]:
    """A file's blobs in order ((``''``, 0) for a file without bytes)."""
    if row.is_chunked:
        return [
            (str(n), int(s)) for n, s in row.chunks.order_by("index").values_list("blob", "size")
        ]
    return [(str(row.blob.name), row.size)] if row.blob else [("", 0)]


def plan(thread_id: str, path: str) -> list[Blob] | None:
    """What ``stream`` reads for a file, or ``None`` when missing or a directory."""
    check_thread(thread_id)
    row = ThreadFile.objects.filter(thread_id=thread_id, path=path, is_directory=False).first()
    return blobs_of(row) if row else None


def total_chunks(blobs: list[Blob]) -> int:
    """How many chunks ``chunks`` yields for ``blobs``."""
    size = chunk_size()
    return sum(fs.chunk_count(s, size) for _, s in blobs)


def chunks(blobs: list[Blob]) -> Generator[bytes, None, None]:
    """The file's bytes in chunk-size pieces (an empty file: one ``b''``)."""
    size = chunk_size()
    for name, length in blobs:
        if not name or not length:
            yield b""
            continue
        yield from read_blob(name, size)


def file_bytes(row: ThreadFile) -> bytes:
    """A whole file (small files only: prefer ``chunks``)."""
    return b"".join(chunks(blobs_of(row)))


def stats(thread_id: str) -> FileStats:
    check_thread(thread_id)
    agg = ThreadFile.objects.filter(thread_id=thread_id).aggregate(
        files=Count("pk", filter=Q(is_directory=False)),
        dirs=Count("pk", filter=Q(is_directory=True)),
        size=Sum("size", filter=Q(is_directory=False)),
    )
    return FileStats(agg["files"] or 0, agg["dirs"] or 0, agg["size"] or 0)


def grep(
    thread_id: str, pattern: str, *, path: str = "/", ignore_case: bool = False, limit: int = 100
) -> list[GrepResult]:
    """Regex over text files (see ``Store.grep_files``)."""
    regex = fs.compile_grep(pattern, ignore_case=ignore_case)
    check_thread(thread_id)
    rows = ThreadFile.objects.filter(thread_id=thread_id, is_directory=False)
    if path != fs.ROOT:
        rows = rows.filter(Q(path=path) | Q(path__startswith=path + "/"))
    results: list[GrepResult] = []
    left = limit
    for row in rows.order_by("path").iterator():
        if left <= 0:
            break
        if not fs.is_text_mime(row.mime_type):
            continue
        hits = fs.grep_chunks(regex, chunks(blobs_of(row)), left)
        if hits:
            results.append(GrepResult(row.path, hits))
            left -= len(hits)
    return results


def find(
    thread_id: str, pattern: str, *, type: FileType = "all", limit: int = 1000
) -> list[ThreadFile]:
    """Entries whose path matches the glob (see ``Store.find_files``)."""
    check_thread(thread_id)
    rows = ThreadFile.objects.filter(thread_id=thread_id).order_by("path")
    if type != "all":
        rows = rows.filter(is_directory=type == "directory")
    found: list[ThreadFile] = []
    for row in rows.iterator():
        if fs.glob_match(pattern, row.path):
            found.append(row)
            if len(found) >= limit:
                break
    return found


def thumbnail(thread_id: str, path: str) -> bytes | None:
    check_thread(thread_id)
    row = row_at(thread_id, path)
    if row is None or not row.thumbnail:
        return None
    with row.thumbnail.open("rb") as fh:
        return bytes(fh.read())


# --- HTTP layer --------------------------------------------------------------------------------


def normalize_path(raw: str) -> str:
    """``a//b/./c/`` → ``/a/b/c``; ``Invalid`` (400) for traversal, NUL, drives, long paths."""
    try:
        return fs.normalize_path(raw)
    except fs.FilePathError as exc:
        raise Invalid(f"Invalid path: {exc}") from None


def clean_mime_type(raw: str | None) -> str:
    """The normal form of a client's MIME type; ``Invalid`` (400) when it is malformed."""
    try:
        return normalize_mime_type(raw)
    except MimeTypeError as exc:
        raise Invalid(str(exc)) from None


def domain_errors(exc: Exception) -> DomainError:
    """The HTTP face of a core error."""
    if isinstance(exc, fs.DirectoryNotEmptyError):
        return Conflict("Directory not empty")
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        return Conflict(str(exc))
    if isinstance(exc, fs.FileTooLargeError):
        return TooLarge(str(exc))
    if isinstance(exc, fs.FilePathError):
        return Invalid(f"Invalid path: {exc}")
    if isinstance(exc, ValueError):
        return Invalid(str(exc))
    raise exc


def _announce(thread: Thread, frame: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))


def _changed(thread: Thread, row: ThreadFile, created: bool) -> None:
    kind = "file_created" if created else "file_updated"
    _announce(thread, event(kind, {"path": row.path, "file": file_wire(row)}))


def client_thumbnail(encoded: str, field: str) -> bytes:
    """A thumbnail a client sent (the reference client's ``thumbnail``: base64, or a
    ``data:`` URL), as the JPEG we store: decoded with Pillow and encoded again by us, so
    what we serve as ``image/jpeg`` is always an image we made; ``Invalid`` naming
    ``field`` when it is no image."""
    text = encoded.split(",", 1)[1] if encoded.startswith("data:") else encoded
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Invalid(f"Invalid request: {field}: not valid base64") from None
    made = file_images.make_thumbnail(raw)
    if made is None:
        raise Invalid(f"Invalid request: {field}: not an image we can read (JPEG, PNG, GIF, WebP)")
    return made.data


def file_write(
    thread: Thread,
    path: str,
    data: bytes | Iterable[bytes],
    mime_type: str,
    *,
    metadata: dict[str, Any] | None = None,
    width: int | None = None,
    height: int | None = None,
    thumbnail: bytes | None = None,
) -> ThreadFile:
    """Create or replace a file from bytes or a stream of pieces; images (given as bytes)
    get a thumbnail and their dimensions. A ``thumbnail`` the client sent
    (``client_thumbnail``) is the file's thumbnail instead of ours.
    Announces ``file_created``/``file_updated``."""
    path = normalize_path(path)
    if path == fs.ROOT:
        raise Invalid("Cannot write to '/'")
    mime_type = clean_mime_type(mime_type)
    thumb = thumbnail
    if isinstance(data, bytes) and file_images.is_raster_image(mime_type):
        made = file_images.make_thumbnail(data)
        if made is not None:
            thumb = thumb or made.data
            if width is None and height is None:
                width, height = made.width, made.height
    try:
        with transaction.atomic():
            row, created = write(
                str(thread.pk),
                path,
                data,
                mime_type,
                metadata=metadata,
                width=width,
                height=height,
                thumbnail=thumb,
            )
            _changed(thread, row, created)
    except (OSError, ValueError) as exc:
        raise domain_errors(exc) from None
    return row


def attachment_write(
    thread: Thread,
    name: str,
    data: bytes,
    mime_type: str,
    *,
    width: int | None = None,
    height: int | None = None,
    thumbnail: bytes | None = None,
) -> ThreadFile:
    """Store a user's message attachment at ``/attachments/<ms>-<8 hex>.<ext>``.

    Images are downsampled as the reference does (``file_images.downsample_attachment``:
    over 2 MiB or not JPEG/PNG → JPEG of at most 1.5 MiB and 4096 px); a converted
    image gets the ``.jpg`` extension and its new dimensions.
    """
    mime = clean_mime_type(mime_type)
    result = file_images.downsample_attachment(data, mime)
    if result.converted:
        ext, width, height = ".jpg", None, None
    else:
        ext = posixpath.splitext(name)[1].lower() or mimetypes.guess_extension(mime) or ".bin"
    path = f"/attachments/{now_us() // 1000}-{uuid.uuid4().hex[:8]}{ext[:10]}"
    metadata: dict[str, Any] = {"name": name}
    if result.converted:
        metadata.update(originalMimeType=mime, originalSize=len(data))
    return file_write(
        thread,
        path,
        result.data,
        result.mime_type,
        metadata=metadata,
        width=width,
        height=height,
        thumbnail=thumbnail,
    )


def dir_make(thread: Thread, path: str) -> ThreadFile:
    """Create a directory (and parents); announces ``file_created`` when it is new."""
    path = normalize_path(path)
    if path == fs.ROOT:
        raise Invalid("'/' always exists")
    try:
        with transaction.atomic():
            _, created = make_dir(str(thread.pk), path)
            row = ThreadFile.objects.get(thread=thread, path=path)
            if created:
                _changed(thread, row, True)
    except (OSError, ValueError) as exc:
        raise domain_errors(exc) from None
    return row


def file_delete(thread: Thread, path: str) -> None:
    """Delete a file or an empty directory; announces ``file_deleted``."""
    path = normalize_path(path)
    if path == fs.ROOT:
        raise Invalid("'/' cannot be deleted")
    try:
        with transaction.atomic():
            if not remove(str(thread.pk), path):
                raise NotFound("Not found")
            _announce(thread, event("file_deleted", {"path": path}))
    except (OSError, ValueError) as exc:
        raise domain_errors(exc) from None
