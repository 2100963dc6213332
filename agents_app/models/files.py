from __future__ import annotations

from django.db import models

from agents_app.models.threads import Thread


def _blob_path(instance: ThreadFile | ThreadFileChunk, filename: str) -> str:
    thread_id = instance.thread_id if isinstance(instance, ThreadFile) else instance.file.thread_id
    return f"threads/{thread_id}/{filename}"


class ThreadFile(models.Model):
    """An entry of a thread's file system; bytes live in Django storage (disk or S3).

    ``path`` is normalized: leading '/', no trailing '/', no '.' or '..' segments.
    Files larger than the chunk size are stored as ordered ``ThreadFileChunk``s.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=200, default="application/octet-stream")
    is_directory = models.BooleanField(default=False)
    size = models.BigIntegerField(default=0)
    blob = models.FileField(upload_to=_blob_path, max_length=500, null=True, blank=True)
    thumbnail = models.FileField(upload_to=_blob_path, max_length=500, null=True, blank=True)
    is_chunked = models.BooleanField(default=False)
    chunk_count = models.PositiveIntegerField(default=0)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "path"], name="uniq_thread_file_path")
        ]

    def __str__(self) -> str:
        return self.path


class ThreadFileChunk(models.Model):
    file = models.ForeignKey(ThreadFile, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    blob = models.FileField(upload_to=_blob_path, max_length=500)
    size = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["file", "index"], name="uniq_file_chunk")]

    def __str__(self) -> str:
        return f"{self.file.path} #{self.index}"
