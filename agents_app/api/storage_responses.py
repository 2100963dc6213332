"""Response schemas of a thread's key-value store and file system. Built as
``responses.py`` explains: every value passes through unchanged. A route that answers in
several shapes (by its query) declares each, as ``A | B``."""

from __future__ import annotations

from agents_app.api.responses import (
    Bool,
    Int,
    IntOrNull,
    Object,
    Objects,
    Out,
    Str,
    StrOrNull,
    Value,
)


class ValueOut(Out):
    key: Str
    value: Value


class ValueRowOut(Out):
    key: Str
    value: Value
    serialized: Str
    size: Int
    updatedAt: Value


class ValuePageOut(Out):
    values: list[ValueRowOut]
    total: Int
    limit: Int
    offset: Int
    search: Str


class ValueSetOut(Out):
    key: Str
    value: Value
    previousKey: StrOrNull
    deleted: Bool


class FileRecordOut(Out):
    path: Str
    name: Str
    mimeType: Str
    storage: Str
    location: StrOrNull
    size: Int
    metadata: Object
    isDirectory: Bool
    createdAt: Int
    width: IntOrNull
    height: IntOrNull
    isChunked: Bool
    chunkCount: Int


class FsListingOut(Out):
    files: list[FileRecordOut]
    path: Str


class FsStatsOut(Out):
    totalSize: Int
    fileCount: Int
    directoryCount: Int


class FsFoundOut(Out):
    files: list[FileRecordOut]
    pattern: Str


class FsGrepOut(Out):
    results: Objects
    pattern: Str


class FsFileOut(Out):
    file: FileRecordOut


class AttachmentRefOut(Out):
    """The reference's AttachmentRef; ``width`` and ``height`` follow for an image."""

    id: Str
    type: Str
    path: Str
    name: Str
    mimeType: Str
    size: Int


class DirectoryMadeOut(Out):
    directory: FileRecordOut
