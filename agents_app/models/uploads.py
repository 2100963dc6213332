"""A resumable upload in progress (spec 0.2.0 row I3: ``…/fs/<path>/upload/start``,
``…/upload/chunk/<n>``, ``…/upload/complete``).

One pending upload per thread and path (the reference keys them by path); each received
chunk's bytes are a blob in Django storage (where thread files live), its row a
``ChunkedUploadPart``. Completing it stores the file through the one file write
(``services/threads/files.py``) and removes these rows and blobs; an upload left unfinished
past ``expires_at`` is removed by the ``expire-uploads`` periodic job.
"""

from __future__ import annotations

import uuid

from django.db import models

from agents_app.models.threads import Thread


class ChunkedUpload(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="uploads")
    path = models.CharField(max_length=1024)
    total_size = models.BigIntegerField()
    mime_type = models.CharField(max_length=200)
    metadata = models.JSONField(default=dict, blank=True)
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)
    chunk_size = models.PositiveIntegerField()
    expected_chunks = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    # The expiry job reads ``expires_at < now``.
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "path"], name="uniq_thread_upload_path")
        ]

    def __str__(self) -> str:
        return f"upload {self.path}"


class ChunkedUploadPart(models.Model):
    upload = models.ForeignKey(ChunkedUpload, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    blob = models.CharField(max_length=500)  # its name in Django's default storage
    size = models.PositiveIntegerField()

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["upload", "index"], name="uniq_upload_part")]

    def __str__(self) -> str:
        return f"{self.upload.path} part {self.index}"
