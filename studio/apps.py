from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class StudioAdminConfig(SimpleAdminConfig):
    """The studio's admin, its ``ModelAdmin`` modules loaded where the studio is served.

    Django's ``AdminConfig`` imports every ``admin.py`` at ``django.setup()``: here 500
    modules and 0.4 s of CPU (a third of a setup on the test machine), paid by every Celery
    worker, beat and ``manage.py`` probe, which never serve a page. ``studio/urls.py`` loads
    them (``admin.autodiscover()``) before it mounts the site, and the admin's system checks
    load them first too, so ``manage.py check`` still checks every ``ModelAdmin``
    (``tests/agents_app/process/test_process_imports.py``)."""

    default_site = "studio.admin_site.StudioAdminSite"

    def ready(self) -> None:
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(_check_the_studio, checks.Tags.admin)


def _check_the_studio(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    admin.autodiscover()  # idempotent: a module imported once is not imported again
    return check_admin_app(app_configs, **kwargs)
