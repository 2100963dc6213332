"""``/api/users/me/kv``: the signed-in user's account-wide values (spec 0.2.0 user KV), the
same store a thread's code reaches through ``state.get_user_value``/``set_user_value`` on
the threads that user owns. Always the caller's own: no route reads another user's. A write
or a delete fires the user hook ``user_value_changed`` (``services/users/hooks.py``)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Query, Router, Schema

from agents_app.api.authed import AuthedRequest
from agents_app.api.responses import Int, Objects, Out, Str, Value
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid
from agents_app.base.storable_text import text_problem
from agents_app.services.threads import user_values
from agents_app.services.threads.user_values import KEY_MAX, LIST_MAX
from agents_app.services.users import hooks

router = Router(tags=["users"])


def _key(key: str) -> str:
    """A key the database can hold (a query string is not read by the strict body parser)."""
    if problem := text_problem(key):
        raise Invalid(f"Invalid request: key: {problem}")
    return key


class UserValueOut(Out):
    key: Str
    value: Value


class UserValuePageOut(Out):
    entries: Objects
    total: Int
    limit: Int
    offset: Int


class UserValueDoneOut(Out):
    status: Str
    key: Str


class UserValueQuery(Schema):
    key: str | None = Field(None, min_length=1, max_length=KEY_MAX)
    prefix: str = Field("", max_length=KEY_MAX)
    limit: int = Field(100, ge=1, le=LIST_MAX)
    offset: int = Field(0, ge=0, le=10_000_000)


class UserValueIn(Schema):
    key: str = Field(..., min_length=1, max_length=KEY_MAX)
    value: Any = Field(..., description="Any JSON value; null deletes the key.")


@router.get(
    "/kv", response={200: UserValueOut | UserValuePageOut, **ERRORS}, summary="Read your values"
)
def user_value_read(request: AuthedRequest, params: Query[UserValueQuery]) -> dict[str, Any]:
    user_id = request.auth.pk
    if params.key is not None:
        key = _key(params.key)
        value = user_values.user_value_get(user_id=user_id, key=key, exact=False)
        return {"key": key, "value": value}
    page = user_values.user_value_page(
        user_id=user_id, prefix=_key(params.prefix), limit=params.limit, offset=params.offset
    )
    return {
        "entries": page.entries,
        "total": page.total,
        "limit": params.limit,
        "offset": params.offset,
    }


@router.post("/kv", response={200: UserValueDoneOut, **ERRORS}, summary="Write a value")
def user_value_write(request: AuthedRequest, payload: UserValueIn) -> dict[str, Any]:
    hooks.value_write_sync(request.auth.pk, _key(payload.key), payload.value)
    return {"status": "ok", "key": payload.key}


@router.delete("/kv", response={200: UserValueDoneOut, **ERRORS}, summary="Delete a value")
def user_value_delete(
    request: AuthedRequest,
    key: str = Query(..., min_length=1, max_length=KEY_MAX),  # type: ignore[arg-type]
) -> dict[str, Any]:
    hooks.value_write_sync(request.auth.pk, _key(key), None)
    return {"status": "ok", "key": key}
