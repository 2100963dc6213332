"""Demo data: agents on the ``test`` provider that a newcomer can chat with at once.

The definitions are the JSON files in ``agents_app/demo/definitions/`` and go in through
the same import as ``import_definitions``. Loading is idempotent and leaves demo
definitions that already exist alone, so edits made in the studio survive the
``load_demo`` that ``scripts/run.sh`` runs on every start.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from agents_app.services.definition_files import definitions_import
from agents_app.services.definitions import SaveReport

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo" / "definitions"
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD_ENV = "STUDIO_ADMIN_PASSWORD"


@dataclass
class DemoAdmin:
    # created: made now; exists: ``admin`` is a superuser already; other_admin: another
    # superuser exists; blocked: an ordinary user took the name ``admin``.
    status: Literal["created", "exists", "other_admin", "blocked"]
    username: str
    # Set only when the password was generated here: it is shown once and stored nowhere.
    generated_password: str | None = None


def demo_definitions_load(*, reset: bool = False) -> SaveReport:
    """Import the demo definitions; with ``reset``, also restore edited ones to the shipped version."""
    return definitions_import(directory=DEMO_DIR, only_missing=not reset)


def demo_admin_ensure(*, password: str | None = None) -> DemoAdmin:
    """Create the superuser ``admin`` when no superuser exists yet.

    The password is ``password``, else ``$STUDIO_ADMIN_PASSWORD`` (or the file named by
    ``$STUDIO_ADMIN_PASSWORD_FILE``), else generated
    (never a fixed, committed one). An existing account is never changed.
    """
    User = get_user_model()
    by_name = {User.USERNAME_FIELD: ADMIN_USERNAME}
    with transaction.atomic():
        if User.objects.filter(is_superuser=True, **by_name).exists():
            return DemoAdmin(status="exists", username=ADMIN_USERNAME)
        other = User.objects.filter(is_superuser=True).order_by("pk").first()
        if other is not None:
            return DemoAdmin(status="other_admin", username=other.get_username())
        if User.objects.filter(**by_name).exists():
            # Someone made an ordinary "admin" account on purpose: do not promote it.
            return DemoAdmin(status="blocked", username=ADMIN_USERNAME)
        # settings.STUDIO_ADMIN_PASSWORD also reads STUDIO_ADMIN_PASSWORD_FILE (Docker secrets).
        given = password or settings.STUDIO_ADMIN_PASSWORD or None
        chosen = given or secrets.token_urlsafe(12)
        User.objects.create_superuser(ADMIN_USERNAME, email="", password=chosen)
    return DemoAdmin(
        status="created", username=ADMIN_USERNAME, generated_password=None if given else chosen
    )
