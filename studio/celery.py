"""The Celery app. Tasks live in ``agents_app.tasks.session_tasks`` and stay thin."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from studio.process_tuning import settle

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

app = Celery("studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
@worker_process_init.connect
def _settle(**_: object) -> None:
    settle()  # the worker's start-up objects live as long as it does (studio.process_tuning.py)
