"""Django accounts as the engine's ``ThreadUser`` (spec 0.2.0): the owner ``state.user()``
returns, the caller a thread endpoint receives, the ``identity()`` of a person's scope."""

from __future__ import annotations

from typing import Any

from runtime.store.protocol import ThreadUser, UserRole


def thread_user(user: Any, *, via_api_key: bool = False) -> ThreadUser:
    """``user`` (a Django account) as agent code sees it. Staff accounts are ``admin``, as
    ``is_admin`` always said; a caller that came with an API key is ``api`` whoever holds it
    (what the key may do is narrower than what its holder may do in person)."""
    staff = bool(getattr(user, "is_staff", False))
    role: UserRole = "api" if via_api_key else "admin" if staff else "user"
    username = user.get_username()
    full_name = (user.get_full_name() or "").strip() if hasattr(user, "get_full_name") else ""
    return ThreadUser(
        id=str(user.pk),
        username=username,
        email=getattr(user, "email", "") or "",
        role=role,
        permissions=sorted(user.get_all_permissions()) if getattr(user, "is_active", True) else [],
        display_name=full_name or username,
        avatar_url=None,
    )
