"""The Celery app. Tasks live in ``agents_app.tasks.session_tasks`` and stay thin."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from studio.process_tuning import settle

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
# Celery's Django fixup runs every system check when a worker or beat starts and then drops
# the result (nothing is reported, nothing refused): the URL check alone imports the whole API
# and its 1,700 pydantic models, about 1.3 s of a worker's 3.5 s start on the test machine. The
# `migrate` job runs them where they count: before any process starts (docker/compose.yaml).
os.environ.setdefault("CELERY_SKIP_CHECKS", "true")

app = Celery("studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
@worker_process_init.connect
def _settle(**_: object) -> None:
    settle()  # the worker's start-up objects live as long as it does (studio.process_tuning.py)
