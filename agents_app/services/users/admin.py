"""The users admin API's rules (spec 0.2.0 F7: ``/api/users``): accounts, their role and
their permissions, on Django's own users, groups and permissions.

The reference's three roles map onto what already decides everything here:

- ``admin``: staff, in the group "Studio administrators" (every permission of the studio;
  ``access.identity.admin_group``), or a superuser;
- ``api``: an account with no usable password, so it signs in only with API keys (an admin
  makes its keys in the studio or with ``manage.py create_api_key``);
- ``user``: everyone else.

Permissions are Django's (``app_label.codename``), set on the account itself. Nobody gives
what they do not hold: only a superuser makes an admin or changes a superuser, and a
permission can be given only by someone who holds it. Deleting an account deactivates it:
the account's ``post_save`` runs offboarding (``services.automation.offboarding``: its
schedules pause, its triggers and subscriptions stop, its sockets close), and its threads,
logs and audit trail stay.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from agents_app import wire
from agents_app.base.errors import Conflict, Forbidden, Invalid, NotFound
from agents_app.services.access.identity import ADMIN_GROUP, admin_group

Role = Literal["admin", "user", "api"]
ROLES: tuple[str, ...] = ("admin", "user", "api")
USERNAME_RE = re.compile(r"^[A-Za-z0-9_-]{3,50}$")
_UNSET: Any = object()


def _users() -> Any:
    return get_user_model()._default_manager


def role_of(user: Any) -> Role:
    if user.is_superuser or (
        user.is_staff and any(g.name == ADMIN_GROUP for g in user.groups.all())
    ):
        return "admin"
    if not user.has_usable_password():
        return "api"
    return "user"


def _permissions_of(user: Any) -> list[str]:
    return sorted(
        f"{p.content_type.app_label}.{p.codename}"
        for p in user.user_permissions.select_related("content_type")
    )


def user_json(user: Any) -> dict[str, Any]:
    """The reference's user shape, with ``active`` (a deleted account is inactive)."""
    name = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return {
        "id": user.pk,
        "username": user.get_username(),
        "role": role_of(user),
        "permissions": _permissions_of(user),
        "email": getattr(user, "email", "") or None,
        "display_name": name or None,
        "avatar_url": None,
        "source": "local",
        "active": bool(user.is_active),
        "created_at": wire.seconds(getattr(user, "date_joined", None)),
        # Django keeps no modification time of an account.
        "updated_at": None,
    }


def user_list() -> list[dict[str, Any]]:
    rows = _users().prefetch_related("groups", "user_permissions__content_type").order_by("pk")
    return [user_json(u) for u in rows]


def user_get(user_id: int) -> Any:
    user = _users().filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"User not found: {user_id}")
    return user


def _clean_username(username: str) -> str:
    if not USERNAME_RE.match(username or ""):
        raise Invalid("username: 3 to 50 characters, letters, digits, '_' and '-' only.")
    return username


def _clean_password(password: str, user: Any = None) -> str:
    try:
        password_validation.validate_password(password, user)
    except ValidationError as exc:
        raise Invalid("password: " + " ".join(exc.messages)) from None
    return password


def _clean_permissions(names: list[str], actor: Any) -> list[Permission]:
    found = []
    for dotted in names:
        app_label, _, codename = (dotted or "").partition(".")
        perm = Permission.objects.filter(
            content_type__app_label=app_label, codename=codename
        ).first()
        if perm is None:
            raise Invalid(
                f"permissions: {dotted[:80]!r} is not a permission here; name Django "
                "permissions as app_label.codename (such as agents_app.view_thread)."
            )
        if not actor.has_perm(dotted):
            raise Forbidden(f"Forbidden: you cannot give {dotted}, which you do not hold.")
        found.append(perm)
    return found


def _apply_role(user: Any, role: str, actor: Any) -> None:
    if role not in ROLES:
        raise Invalid(f"role: {role[:40]!r} is not one of admin, user, api.")
    if role == "admin":
        if not actor.is_superuser:
            raise Forbidden("Forbidden: only a superuser may make someone an admin.")
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        user.groups.add(admin_group())
        return
    if role_of(user) == "admin":
        if user.pk == actor.pk:
            raise Invalid("role: you cannot take away your own admin role.")
        user.is_staff = user.is_superuser = False
        user.save(update_fields=["is_staff", "is_superuser"])
        user.groups.remove(*Group.objects.filter(name=ADMIN_GROUP))
    if role == "user" and not user.has_usable_password():
        raise Invalid("role: a user account needs a password; send one with the role.")
    if role == "api":
        user.set_unusable_password()
        user.save(update_fields=["password"])


def _guard(user: Any, actor: Any) -> None:
    if user.is_superuser and not actor.is_superuser:
        raise Forbidden("Forbidden: only a superuser may change a superuser's account.")


def user_create(*, username: str, password: str, role: str, actor: Any) -> Any:
    username = _clean_username(username)
    if role not in ("admin", "user"):
        raise Invalid("role: a new account is admin or user (make it api afterwards).")
    _clean_password(password)
    with transaction.atomic():
        if _users().filter(username__iexact=username).exists():
            raise Invalid("Username already exists")
        try:
            user = _users().create_user(username=username, password=password)
        except IntegrityError:
            raise Invalid("Username already exists") from None
        if role == "admin":
            _apply_role(user, role, actor)
    return user


def user_update(
    user: Any,
    *,
    actor: Any,
    username: str | None = None,
    password: str | None = None,
    role: str | None = None,
    permissions: Any = _UNSET,
) -> Any:
    """Change what is given (``permissions``: a list sets the account's own permissions,
    ``None`` clears them, absent leaves them)."""
    _guard(user, actor)
    if role == "api" and password is not None:
        raise Invalid("password: an api account has no password (it signs in with API keys).")
    with transaction.atomic():
        if username is not None and username != user.get_username():
            username = _clean_username(username)
            if _users().filter(username__iexact=username).exclude(pk=user.pk).exists():
                raise Conflict("Username already taken")
            user.username = username
            user.save(update_fields=["username"])
        if password is not None:
            user.set_password(_clean_password(password, user))
            user.save(update_fields=["password"])
        if role is not None:
            _apply_role(user, role, actor)
        if permissions is not _UNSET:
            user.user_permissions.set(_clean_permissions(permissions or [], actor))
    return user_get(user.pk)


def user_delete(user: Any, *, actor: Any) -> None:
    """Deactivate the account (offboarding runs on its save); nothing is erased."""
    if user.pk == actor.pk:
        raise Invalid("You cannot delete your own account.")
    _guard(user, actor)
    if user.is_active:
        user.is_active = False
        user.save()
