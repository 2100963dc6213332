"""SCIM 2.0 provisioning (RFC 7643 resources, RFC 7644 protocol): the decisions behind
``/scim/v2/`` (``agents_app.identity.scim`` parses the HTTP and shapes the answers).

Users are Django users; groups are Django groups, which decide permissions and which agents
each person sees. What a SCIM client does here:

- creates an account (``IdentityLink.provisioned_by_scim``; no password: the person signs in
  through the identity provider, and their first sign-in links the account to its ``sub``),
- updates it (``PUT`` replaces, ``PATCH`` in Okta's and Entra ID's shapes),
- deactivates it (``active: false``): the account can no longer sign in; its cookie
  sessions and login tokens end (a new unusable password changes the session hash every
  one is checked against), its API keys stop (keys of inactive accounts are refused), and
  ``services.automation.offboarding`` pauses what runs as it and closes its sockets,
- deletes it: deactivated as above, renamed so the name is free again, and no longer seen
  over SCIM; its threads and automation stay for an administrator to hand over,
- creates, renames, fills and deletes groups; memberships change at once, and with them
  the agents each member is offered.

Every change is recorded in the audit log as the SCIM token's (``services.access.audit``).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents_app.models import IdentityLink, ManagedGroup, ScimToken

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
TOKEN_PREFIX = "scim_"
_TOKEN_LENGTH = len(TOKEN_PREFIX) + 64
LAST_USED_RESOLUTION = timedelta(minutes=1)
MAX_PAGE = 200


@dataclass
class ScimError(Exception):
    status: int
    detail: str
    scim_type: str = ""

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schemas": [ERROR_SCHEMA],
            "status": str(self.status),
            "detail": self.detail,
        }
        if self.scim_type:
            out["scimType"] = self.scim_type
        return out


# --- tokens ------------------------------------------------------------------------------------


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, name: str, by: Any) -> tuple[ScimToken, str]:
    """A new token; returns the row and the raw token, shown once and never stored."""
    raw = TOKEN_PREFIX + secrets.token_hex(32)
    row = ScimToken.objects.create(
        name=name.strip()[:100] or "SCIM client",
        token_hash=_hash(raw),
        last_four=raw[-4:],
        created_by=by,
    )
    return row, raw


def token_authenticate(header: str) -> ScimToken | None:
    scheme, _, raw = (header or "").partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or len(raw) != _TOKEN_LENGTH or not raw.startswith(TOKEN_PREFIX):
        return None
    row = ScimToken.objects.filter(token_hash=_hash(raw), revoked_at__isnull=True).first()
    if row is not None:
        now = timezone.now()
        if row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION:
            ScimToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


# --- reading -----------------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def _users() -> QuerySet[Any]:
    return (
        get_user_model()
        ._default_manager.exclude(identity_link__scim_deleted_at__isnull=False)
        .select_related("identity_link")
        .order_by("pk")
    )


def _link(user: Any) -> IdentityLink | None:
    try:
        return user.identity_link  # type: ignore[no-any-return]
    except IdentityLink.DoesNotExist:
        return None


def user_resource(user: Any, base: str) -> dict[str, Any]:
    link = _link(user)
    name = {"givenName": user.first_name, "familyName": user.last_name}
    formatted = " ".join(p for p in (user.first_name, user.last_name) if p)
    out: dict[str, Any] = {
        "schemas": [USER_SCHEMA],
        "id": str(user.pk),
        "userName": user.get_username(),
        "name": {**name, "formatted": formatted},
        "displayName": formatted or user.get_username(),
        "active": bool(user.is_active),
        "emails": [{"value": user.email, "type": "work", "primary": True}] if user.email else [],
        "groups": [
            {"value": str(g.pk), "display": g.name, "$ref": f"{base}/Groups/{g.pk}"}
            for g in user.groups.order_by("name")
        ],
        "meta": {
            "resourceType": "User",
            "created": _iso(user.date_joined),
            "lastModified": _iso(user.date_joined),
            "location": f"{base}/Users/{user.pk}",
        },
    }
    if link is not None and link.scim_external_id:
        out["externalId"] = link.scim_external_id
    return out


def group_resource(group: Group, base: str, *, members: bool = True) -> dict[str, Any]:
    managed = ManagedGroup.objects.filter(group=group).first()
    out: dict[str, Any] = {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.pk),
        "displayName": group.name,
        "meta": {"resourceType": "Group", "location": f"{base}/Groups/{group.pk}"},
    }
    if members:
        out["members"] = [
            {"value": str(u.pk), "display": u.get_username(), "$ref": f"{base}/Users/{u.pk}"}
            for u in group.user_set.exclude(identity_link__scim_deleted_at__isnull=False).order_by(
                "pk"
            )
        ]
    if managed is not None and managed.scim_external_id:
        out["externalId"] = managed.scim_external_id
    return out


_FILTER = re.compile(r'^\s*([A-Za-z.]+)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


def _parse_filter(text: str) -> tuple[str, str]:
    match = _FILTER.match(text or "")
    if match is None:
        raise ScimError(
            400, f"Unsupported filter {text!r}: only 'attribute eq \"value\"'.", "invalidFilter"
        )
    return match.group(1).lower(), match.group(2).replace('\\"', '"').replace("\\\\", "\\")


def user_list(filter_text: str, start: int, count: int, base: str) -> dict[str, Any]:
    rows = _users()
    if filter_text:
        attr, value = _parse_filter(filter_text)
        field = get_user_model().USERNAME_FIELD
        lookups: dict[str, dict[str, Any] | None] = {
            "username": {f"{field}__iexact": value},
            "externalid": {"identity_link__scim_external_id": value},
            "id": {"pk": int(value)} if value.isdigit() else None,
            "emails.value": {"email__iexact": value},
        }
        if attr not in lookups:
            raise ScimError(400, f"Cannot filter users by {attr}.", "invalidFilter")
        lookup = lookups[attr]
        rows = rows.filter(**lookup) if lookup is not None else rows.none()
    return _page(rows, start, count, lambda u: user_resource(u, base))


def group_list(
    filter_text: str, start: int, count: int, base: str, *, members: bool
) -> dict[str, Any]:
    rows: QuerySet[Group] = Group.objects.order_by("pk")
    if filter_text:
        attr, value = _parse_filter(filter_text)
        lookups: dict[str, dict[str, Any] | None] = {
            "displayname": {"name": value},
            "externalid": {"managed_by__scim_external_id": value},
            "id": {"pk": int(value)} if value.isdigit() else None,
        }
        if attr not in lookups:
            raise ScimError(400, f"Cannot filter groups by {attr}.", "invalidFilter")
        lookup = lookups[attr]
        rows = rows.filter(**lookup) if lookup is not None else rows.none()
    return _page(rows, start, count, lambda g: group_resource(g, base, members=members))


def _page(rows: QuerySet[Any], start: int, count: int, shape: Any) -> dict[str, Any]:
    start = max(1, start)
    count = max(0, min(count, MAX_PAGE))
    total = rows.count()
    page = list(rows[start - 1 : start - 1 + count])
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(page),
        "Resources": [shape(r) for r in page],
    }


def user_get(user_id: str) -> Any:
    user = _users().filter(pk=int(user_id)).first() if user_id.isdigit() else None
    if user is None:
        raise ScimError(404, f"User {user_id} not found")
    return user


def group_get(group_id: str) -> Group:
    group = Group.objects.filter(pk=int(group_id)).first() if group_id.isdigit() else None
    if group is None:
        raise ScimError(404, f"Group {group_id} not found")
    return group


# --- users: writing ----------------------------------------------------------------------------


def _bool(value: Any) -> bool:
    """SCIM booleans, also as Entra ID sends them in PATCH ("True"/"False")."""
    if isinstance(value, str):
        if value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ScimError(400, f"Not a boolean: {value!r}", "invalidValue")
    return bool(value)


def _primary_email(emails: Any) -> str | None:
    if not isinstance(emails, list):
        return None
    chosen = next((e for e in emails if isinstance(e, dict) and e.get("primary")), None)
    chosen = chosen or next((e for e in emails if isinstance(e, dict)), None)
    return str(chosen.get("value") or "") if chosen else None


def _apply_user_attributes(
    user: Any, link: IdentityLink, data: dict[str, Any], *, replace: bool
) -> bool | None:
    """Set what ``data`` (a User resource, or a PATCH's attributes) says; returns the new
    ``active`` when it says one."""
    field = get_user_model().USERNAME_FIELD
    if "userName" in data or replace:
        username = str(data.get("userName") or "").strip()
        if not username:
            raise ScimError(400, "userName is required", "invalidValue")
        setattr(user, field, username[:150])
    name = data.get("name") if isinstance(data.get("name"), dict) else None
    if name is not None or replace:
        name = name or {}
        user.first_name = str(name.get("givenName") or "")[:150]
        user.last_name = str(name.get("familyName") or "")[:150]
    if not (name or {}).get("givenName") and data.get("displayName") and not user.first_name:
        user.first_name = str(data["displayName"])[:150]
    if "emails" in data or replace:
        user.email = (_primary_email(data.get("emails")) or "")[:254]
    if "externalId" in data or replace:
        link.scim_external_id = str(data.get("externalId") or "")[:255]
    return _bool(data["active"]) if "active" in data else None


def _save_user(user: Any, link: IdentityLink, active: bool | None) -> None:
    if active is not None and active != user.is_active:
        user.is_active = active
        if not active:
            # Every cookie session and login token is checked against the password's hash:
            # a new unusable password ends them all, now and after a reactivation.
            user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()  # post_save: an account left inactive is offboarded (services.automation.offboarding)
    except IntegrityError:
        raise ScimError(409, f"userName {user.get_username()!r} is taken", "uniqueness") from None
    link.user = user
    link.save()


def user_create(data: dict[str, Any]) -> Any:
    user_model = get_user_model()
    username = str(data.get("userName") or "").strip()
    if not username:
        raise ScimError(400, "userName is required", "invalidValue")
    if user_model._default_manager.filter(
        **{f"{user_model.USERNAME_FIELD}__iexact": username}
    ).exists():
        raise ScimError(409, f"userName {username!r} is taken", "uniqueness")
    with transaction.atomic():
        user = user_model()
        user.set_unusable_password()
        link = IdentityLink(provisioned_by_scim=True)
        active = _apply_user_attributes(user, link, data, replace=True)
        user.is_active = True if active is None else active
        try:
            with transaction.atomic():
                user.save()
        except IntegrityError:
            raise ScimError(409, f"userName {username!r} is taken", "uniqueness") from None
        link.user = user
        link.save()
    return user


def user_replace(user: Any, data: dict[str, Any]) -> Any:
    with transaction.atomic():
        link = _link(user) or IdentityLink(user=user)
        active = _apply_user_attributes(user, link, data, replace=True)
        _save_user(user, link, True if active is None else active)
    return user


_USER_PATHS: dict[str, str | tuple[str, str]] = {
    "username": "userName",
    "externalid": "externalId",
    "active": "active",
    "displayname": "displayName",
    "name.givenname": ("name", "givenName"),
    "name.familyname": ("name", "familyName"),
    "emails": "emails",
}
_EMAIL_PATH = re.compile(r'^emails(\[type eq "[^"]*"\])?(\.value)?$', re.IGNORECASE)


def user_patch(user: Any, body: dict[str, Any]) -> Any:
    operations = _operations(body)
    with transaction.atomic():
        link = _link(user) or IdentityLink(user=user)
        active: bool | None = None
        for op in operations:
            kind, path, value = op
            if kind == "remove":
                data = _user_removal(path)
            elif path:
                data = _user_path_value(path, value)
            elif isinstance(value, dict):
                data = value
            else:
                raise ScimError(
                    400, "A PATCH without a path needs an object value", "invalidSyntax"
                )
            # Entra ID sends an enterprise extension's attributes too: not kept here.
            data = {k: v for k, v in data.items() if not k.startswith("urn:")}
            changed = _apply_user_attributes(user, link, data, replace=False)
            active = changed if changed is not None else active
        _save_user(user, link, active)
    return user


def _user_path_value(path: str, value: Any) -> dict[str, Any]:
    key = path.lower()
    if _EMAIL_PATH.match(path):
        if isinstance(value, list):
            return {"emails": value}
        return {"emails": [{"value": value, "primary": True}]}
    target = _USER_PATHS.get(key)
    if target is None:
        if key.startswith("urn:"):
            return {}
        raise ScimError(400, f"Unsupported path {path!r}", "invalidPath")
    if isinstance(target, tuple):
        return {target[0]: {target[1]: value}}
    return {target: value}


def _user_removal(path: str) -> dict[str, Any]:
    if _EMAIL_PATH.match(path or ""):
        return {"emails": []}
    key = (path or "").lower()
    if key in ("name.givenname", "name.familyname"):
        return _user_path_value(path, "")
    if key == "externalid":
        return {"externalId": ""}
    raise ScimError(400, f"Cannot remove {path!r}", "noTarget" if not path else "mutability")


def user_delete(user: Any) -> None:
    """Deactivate (offboarding runs), free the name, hide from SCIM; keep the data."""
    with transaction.atomic():
        link = _link(user) or IdentityLink(user=user)
        now = timezone.now()
        field = get_user_model().USERNAME_FIELD
        setattr(user, field, f"{user.get_username()[:100]}.deleted-{user.pk}")
        link.scim_deleted_at = now
        _save_user(user, link, False)


# --- groups ------------------------------------------------------------------------------------


def _member_ids(value: Any) -> list[int]:
    items = value if isinstance(value, list) else [value]
    ids = []
    for item in items:
        raw = item.get("value") if isinstance(item, dict) else item
        if raw is None or not str(raw).isdigit():
            raise ScimError(400, f"Not a member reference: {item!r}", "invalidValue")
        ids.append(int(raw))
    return ids


def _members(ids: list[int]) -> list[Any]:
    found = list(_users().filter(pk__in=ids))
    missing = set(ids) - {u.pk for u in found}
    if missing:
        raise ScimError(400, f"Unknown members: {sorted(missing)}", "invalidValue")
    return found


def group_create(data: dict[str, Any]) -> Group:
    name = str(data.get("displayName") or "").strip()[:150]
    if not name:
        raise ScimError(400, "displayName is required", "invalidValue")
    if Group.objects.filter(name=name).exists():
        raise ScimError(409, f"A group named {name!r} exists", "uniqueness")
    with transaction.atomic():
        group = Group.objects.create(name=name)
        ManagedGroup.objects.create(
            group=group,
            source=ManagedGroup.Source.SCIM,
            scim_external_id=str(data.get("externalId") or "")[:255],
        )
        if data.get("members"):
            group.user_set.add(*_members(_member_ids(data["members"])))
    return group


def _rename(group: Group, name: Any) -> None:
    name = str(name or "").strip()[:150]
    if not name:
        raise ScimError(400, "displayName is required", "invalidValue")
    if name != group.name:
        if Group.objects.filter(name=name).exclude(pk=group.pk).exists():
            raise ScimError(409, f"A group named {name!r} exists", "uniqueness")
        group.name = name
        group.save()


def _manage(group: Group, external_id: Any = None) -> None:
    managed, _ = ManagedGroup.objects.get_or_create(
        group=group, defaults={"source": ManagedGroup.Source.SCIM}
    )
    if external_id is not None and managed.scim_external_id != str(external_id):
        managed.scim_external_id = str(external_id)[:255]
        managed.save(update_fields=["scim_external_id"])


def group_replace(group: Group, data: dict[str, Any]) -> Group:
    with transaction.atomic():
        _rename(group, data.get("displayName"))
        _manage(group, data.get("externalId", ""))
        _set_members(group, _members(_member_ids(data.get("members") or [])))
    return group


def _set_members(group: Group, users: list[Any]) -> None:
    wanted = {u.pk for u in users}
    current = set(group.user_set.values_list("pk", flat=True))
    if current - wanted:
        group.user_set.remove(*(current - wanted))
    if wanted - current:
        group.user_set.add(*[u for u in users if u.pk not in current])


_MEMBER_FILTER = re.compile(r'^members\[value eq "([^"]+)"\]$', re.IGNORECASE)


def group_patch(group: Group, body: dict[str, Any]) -> Group:
    with transaction.atomic():
        _manage(group)
        for kind, path, value in _operations(body):
            key = (path or "").lower()
            member = _MEMBER_FILTER.match(path or "")
            if kind == "remove" and member:
                group.user_set.remove(*_member_ids(member.group(1)))
            elif key == "members":
                if kind == "add":
                    group.user_set.add(*_members(_member_ids(value or [])))
                elif kind == "remove":
                    if value:
                        group.user_set.remove(*_member_ids(value))
                    else:
                        group.user_set.clear()
                else:
                    _set_members(group, _members(_member_ids(value or [])))
            elif key == "displayname":
                _rename(group, value)
            elif key == "externalid":
                _manage(group, value or "")
            elif not path and isinstance(value, dict):
                if "displayName" in value:
                    _rename(group, value["displayName"])
                if "externalId" in value:
                    _manage(group, value["externalId"])
                if "members" in value:
                    members = _members(_member_ids(value["members"]))
                    if kind == "add":
                        group.user_set.add(*members)
                    else:
                        _set_members(group, members)
            else:
                raise ScimError(400, f"Unsupported group operation {kind} {path!r}", "invalidPath")
    return group


def group_delete(group: Group) -> None:
    with transaction.atomic():
        group.delete()


def _operations(body: dict[str, Any]) -> list[tuple[str, str, Any]]:
    if PATCH_SCHEMA not in (body.get("schemas") or []):
        raise ScimError(400, f"A PATCH body names the schema {PATCH_SCHEMA}", "invalidSyntax")
    operations = body.get("Operations") or body.get("operations")
    if not isinstance(operations, list) or not operations:
        raise ScimError(400, "Operations is required", "invalidSyntax")
    out = []
    for op in operations:
        if not isinstance(op, dict):
            raise ScimError(400, "Each operation is an object", "invalidSyntax")
        kind = str(op.get("op") or "").lower()
        if kind not in ("add", "remove", "replace"):
            raise ScimError(400, f"Unsupported op {op.get('op')!r}", "invalidSyntax")
        out.append((kind, str(op.get("path") or ""), op.get("value")))
    return out
