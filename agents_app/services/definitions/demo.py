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

from agents_app.services.definitions.files import definitions_import
from agents_app.services.definitions.saves import SaveReport

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo" / "definitions"
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD_ENV = "STUDIO_ADMIN_PASSWORD"


@dataclass
class DemoAdmin:
    # created: made now; exists: ``admin`` is a superuser already; password_set: it existed
    # and its password was set from STUDIO_ADMIN_PASSWORD now; other_admin: another
    # superuser exists; blocked: an ordinary user took the name ``admin``.
    status: Literal["created", "exists", "password_set", "other_admin", "blocked"]
    username: str
    # Set only when the password was generated here: it is shown once and stored nowhere.
    generated_password: str | None = None
    # STUDIO_ADMIN_PASSWORD (or ``password``) was given: on ``admin`` it is applied.
    password_given: bool = False


def demo_definitions_load(*, reset: bool = False) -> SaveReport:
    """Import the demo definitions; with ``reset``, also restore edited ones to the shipped version."""
    return definitions_import(directory=DEMO_DIR, only_missing=not reset)


def demo_admin_ensure(*, password: str | None = None) -> DemoAdmin:
    """Create the superuser ``admin`` when no superuser exists yet, or give the existing
    ``admin`` the configured password.

    The password is ``password``, else ``$STUDIO_ADMIN_PASSWORD`` (or the file named by
    ``$STUDIO_ADMIN_PASSWORD_FILE``), else generated (never a fixed, committed one). A
    configured password is applied on every run, so a newcomer who lost the printed one
    sets the variable and runs again (issue #40); without one, the account is left alone.
    """
    User = get_user_model()
    by_name = {User.USERNAME_FIELD: ADMIN_USERNAME}
    # settings.STUDIO_ADMIN_PASSWORD also reads STUDIO_ADMIN_PASSWORD_FILE (Docker secrets).
    given = password or settings.STUDIO_ADMIN_PASSWORD or None
    with transaction.atomic():
        admin = User.objects.filter(is_superuser=True, **by_name).first()
        if admin is not None:
            # Setting the same password again would salt it anew and sign everyone out
            # (Django's session hash follows the stored hash): only a different one is set.
            if given and not admin.check_password(given):
                admin.set_password(given)
                admin.save(update_fields=["password"])
                return DemoAdmin(
                    status="password_set", username=ADMIN_USERNAME, password_given=True
                )
            return DemoAdmin(status="exists", username=ADMIN_USERNAME, password_given=bool(given))
        other = User.objects.filter(is_superuser=True).order_by("pk").first()
        if other is not None:
            return DemoAdmin(
                status="other_admin", username=other.get_username(), password_given=bool(given)
            )
        if User.objects.filter(**by_name).exists():
            # Someone made an ordinary "admin" account on purpose: do not promote it.
            return DemoAdmin(status="blocked", username=ADMIN_USERNAME, password_given=bool(given))
        chosen = given or secrets.token_urlsafe(12)
        User.objects.create_superuser(ADMIN_USERNAME, email="", password=chosen)
    return DemoAdmin(
        status="created",
        username=ADMIN_USERNAME,
        generated_password=None if given else chosen,
        password_given=bool(given),
    )


@dataclass
class PasswordSet:
    username: str
    created: bool  # no such user existed: a superuser was made
    staff: bool  # may open the studio


def admin_password_set(*, username: str, password: str) -> PasswordSet:
    """Set ``username``'s password (``manage.py set_admin_password``); a user that does not
    exist yet is created as a superuser, so a locked-out newcomer always gets back in.
    Raises ``django.core.exceptions.ValidationError`` for a password the validators refuse."""
    from django.contrib.auth.password_validation import validate_password

    User = get_user_model()
    with transaction.atomic():
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        validate_password(password, user)
        if user is None:
            user = User.objects.create_superuser(username, email="", password=password)
            return PasswordSet(username=username, created=True, staff=True)
        user.set_password(password)
        user.save(update_fields=["password"])
        return PasswordSet(username=username, created=False, staff=bool(user.is_staff))
