"""Accounts and groups from the organisation's identity provider (docs/identity.md).

A sign-in through OpenID Connect (``agents_app.identity.oidc`` checks the protocol) ends
here with the verified claims: ``oidc_sign_in`` finds the account by the ``sub`` claim and
its issuer, never by an e-mail address; creates it on a first sign-in; refuses a username
that a local account already holds (a ``sub`` collision); then sets the account's groups
from the group claim (``groups_sync``) and its staff status from the admin groups.

Groups the provider names are created on first sight and marked as managed
(``ManagedGroup``); only memberships of managed groups follow the provider, so groups made
in the studio keep the members given there. A group removed upstream is removed here at the
person's next sign-in; sessions signed in through the provider last
``STUDIO_OIDC_SESSION_SECONDS``, which bounds how long that takes (with SCIM, at once).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents_app.models import IdentityLink, ManagedGroup

# Members of STUDIO_OIDC_ADMIN_GROUPS are staff and in this group, which holds every
# permission of the studio (made with them the first time it is needed; edit it freely).
ADMIN_GROUP = "Studio administrators"
_USERNAME_CHARS = re.compile(r"[^\w.@+-]")


@dataclass
class SignInRefused(Exception):
    """A sign-in that must not proceed; ``reason`` is shown to the person on the page."""

    title: str
    reason: str

    def __str__(self) -> str:
        return f"{self.title}: {self.reason}"


def oidc_enabled() -> bool:
    return bool(settings.STUDIO_OIDC_ISSUER)


def provider_name() -> str:
    return str(settings.STUDIO_OIDC_PROVIDER_NAME)


def _claimed_username(claims: dict[str, Any]) -> str:
    raw = claims.get(settings.STUDIO_OIDC_USERNAME_CLAIM) or ""
    if not raw and claims.get("email") and claims.get("email_verified"):
        raw = claims["email"]
    if not raw:
        raw = claims["sub"]
    return _USERNAME_CHARS.sub("_", str(raw))[:150]


def claimed_groups(claims: dict[str, Any]) -> list[str]:
    """The group claim as a list of names (a list, or one string)."""
    raw = claims.get(settings.STUDIO_OIDC_GROUPS_CLAIM)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    names = {str(n).strip()[:150] for n in raw if isinstance(n, str | int) and str(n).strip()}
    return sorted(names)


def _profile(user: Any, claims: dict[str, Any]) -> list[str]:
    """Copy the name and a verified e-mail from the claims; the fields that changed."""
    changed = []
    wanted = {
        "first_name": str(claims.get("given_name") or "")[:150],
        "last_name": str(claims.get("family_name") or "")[:150],
    }
    if not wanted["first_name"] and not wanted["last_name"] and claims.get("name"):
        wanted["first_name"] = str(claims["name"])[:150]
    if claims.get("email") and claims.get("email_verified") is not False:
        wanted["email"] = str(claims["email"])[:254]
    for name, value in wanted.items():
        if value and getattr(user, name) != value:
            setattr(user, name, value)
            changed.append(name)
    return changed


def oidc_sign_in(claims: dict[str, Any], issuer: str) -> Any:
    """The account for these verified claims, created or updated, groups and staff set."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise SignInRefused("No subject", "The identity provider sent no sub claim.")
    user_model = get_user_model()
    with transaction.atomic():
        link = (
            IdentityLink.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if link is None:
            link = _first_sign_in(claims, issuer, subject, user_model)
        user = link.user
        if not user.is_active:
            raise SignInRefused(
                "Account deactivated",
                f"Your account here ({user.get_username()}) is deactivated. "
                "Ask an administrator if this is a mistake.",
            )
        changed = _profile(user, claims)
        if changed:
            user.save(update_fields=changed)
        groups_sync(user, claimed_groups(claims), ManagedGroup.Source.OIDC)
        _admin_sync(user, link, claimed_groups(claims))
        link.last_sign_in_at = timezone.now()
        link.save(update_fields=["last_sign_in_at"])
    return user


def _first_sign_in(
    claims: dict[str, Any], issuer: str, subject: str, user_model: Any
) -> IdentityLink:
    username = _claimed_username(claims)
    existing = user_model._default_manager.filter(
        **{f"{user_model.USERNAME_FIELD}__iexact": username}
    ).first()
    if existing is not None:
        link = IdentityLink.objects.select_for_update().filter(user=existing).first()
        # An account a SCIM client made for this person, not signed in yet: this is it (the
        # same provider vouched for both). Anything else is someone else's account.
        if link is not None and link.provisioned_by_scim and not link.subject:
            link.issuer, link.subject = issuer, subject
            link.save(update_fields=["issuer", "subject"])
            link.user = existing
            return link
        raise SignInRefused(
            "Account already exists",
            f"An account named “{username}” already exists here and belongs to another "
            "identity, so this sign-in was refused (accounts are matched by the provider's "
            "subject, never by name or e-mail). Ask an administrator to rename or link it.",
        )
    user = user_model(**{user_model.USERNAME_FIELD: username})
    user.set_unusable_password()
    _profile(user, claims)
    user.save()
    return IdentityLink.objects.create(user=user, issuer=issuer, subject=subject)


def _managed(names: Iterable[str], source: str) -> list[Group]:
    groups = []
    for name in names:
        group, _ = Group.objects.get_or_create(name=name)
        ManagedGroup.objects.get_or_create(group=group, defaults={"source": source})
        groups.append(group)
    return groups


def groups_sync(user: Any, names: list[str], source: str) -> None:
    """Make ``user``'s memberships of the groups ``source`` manages exactly ``names``
    (groups made in the studio, or another source's, are left as they are; the admin group
    is ``_admin_sync``'s)."""
    wanted = {g.pk: g for g in _managed([n for n in names if n != ADMIN_GROUP], source)}
    current = set(
        user.groups.filter(managed_by__source=source)
        .exclude(name=ADMIN_GROUP)
        .values_list("pk", flat=True)
    )
    gone = current - set(wanted)
    new = [g for pk, g in wanted.items() if pk not in current]
    if gone:
        user.groups.remove(*gone)
    if new:
        user.groups.add(*new)


def admin_group() -> Group:
    group, created = Group.objects.get_or_create(name=ADMIN_GROUP)
    if created:
        group.permissions.set(
            Permission.objects.filter(
                Q(content_type__app_label="agents_app")
                | Q(content_type__app_label="auth", content_type__model__in=["user", "group"])
            )
        )
    return group


def _admin_sync(user: Any, link: IdentityLink, groups: list[str]) -> None:
    admins = set(settings.STUDIO_OIDC_ADMIN_GROUPS)
    if admins & set(groups):
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        user.groups.add(admin_group())
        if not link.staff_from_provider:
            link.staff_from_provider = True
            link.save(update_fields=["staff_from_provider"])
    elif link.staff_from_provider:
        # No longer in an admin group upstream: what the provider gave, it takes back.
        user.is_staff = False
        user.save(update_fields=["is_staff"])
        user.groups.remove(*Group.objects.filter(name=ADMIN_GROUP))
        link.staff_from_provider = False
        link.save(update_fields=["staff_from_provider"])
