"""What the few reads written as plain SQL share (issue #21): a UUID as the driver's value,
and a JSON column's value as Python.

PostgreSQL takes a ``uuid.UUID``; SQLite stores the 32-digit hex text Django writes. The
field's own conversion gives the right one for whichever database is connected. JSON
columns arrive as text on both (Django registers a text loader for ``jsonb``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection, models
from django.utils.dateparse import parse_datetime

from agents_app.db.composed import Part

_UUID = models.UUIDField()


def db_uuid(value: Any) -> Any:
    """``value`` (a UUID or its text) as the connected database stores it; ``ValueError``
    for text that is not a UUID."""
    parsed = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    return _UUID.get_db_prep_value(parsed, connection, prepared=False)


def db_json(value: Any) -> Any:
    """A JSON column's value as the cursor gave it, decoded."""
    if value is None or not isinstance(value, str | bytes):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:  # integers past 64 bits: the standard library reads them
        return json.loads(value)


def text_uuid(value: Any) -> str | None:
    """A UUID column's value as the cursor gave it, as canonical text."""
    if value is None:
        return None
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


def db_datetime(value: Any) -> datetime | None:
    """A datetime column as the cursor gave it, aware (SQLite gives text, naive UTC)."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value  # type: ignore[no-any-return]


def datetime_param(value: datetime) -> Any:
    """An aware datetime as the connected database takes it (SQLite: naive UTC text)."""
    return connection.ops.adapt_datetimefield_value(value)


def row_by_uuid(sql: str, value: Any) -> tuple[Any, ...] | None:
    """The one row ``sql`` (one ``%s``: a UUID) reads, or None for no row or a malformed id."""
    try:
        pk = db_uuid(value)
    except ValueError:
        return None
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk])
        return cursor.fetchone()  # type: ignore[no-any-return]


def model_columns(model: type[models.Model], table_alias: str) -> list[str]:
    """``alias.column`` for each concrete field of ``model``, in ``_meta`` order (the order
    ``model_from_row`` reads)."""
    return [f"{table_alias}.{f.column}" for f in model._meta.concrete_fields]


def model_part(model: type[models.Model], table_alias: str) -> Part:
    """Every concrete field of ``model`` as a part of a composed SELECT, named by attname
    (``model_from_row`` takes ``Select.values(row, part)``)."""
    return Part(
        tuple((f.attname, f"{table_alias}.{f.column}") for f in model._meta.concrete_fields)
    )


def model_from_row(model: type[models.Model], values: Sequence[Any]) -> Any:
    """An instance of ``model`` from its concrete fields' values as the cursor gave them,
    converted as the ORM converts them (SQLite's booleans and datetimes, for one)."""
    fields = model._meta.concrete_fields
    converted = []
    for field, value in zip(fields, values, strict=True):
        column = field.get_col(model._meta.db_table)
        for convert in (
            *connection.ops.get_db_converters(column),
            *field.get_db_converters(connection),
        ):
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


_INSERTS: dict[tuple[type[models.Model], str], str] = {}


def insert_row(instance: models.Model) -> None:
    """Insert ``instance`` as ``instance.save(force_insert=True)`` would write it: every
    concrete field through its ``pre_save`` (``auto_now_add``) and its preparation for the
    connected database, in a statement built once per model instead of compiled per call
    (issue #21: a post's two inserts were most of what the ORM still compiled for it).
    Sends no ``pre_save``/``post_save`` signals: use it only for models nothing listens to.
    """
    model = type(instance)
    if model._meta.auto_field is not None:
        raise TypeError(f"{model.__name__}: insert_row takes models with a set primary key")
    fields = model._meta.concrete_fields
    key = (model, connection.vendor)
    sql = _INSERTS.get(key)
    if sql is None:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(f.column)) for f in fields)
        values = ", ".join(["%s"] * len(fields))
        sql = _INSERTS[key] = (
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({values})"
        )
    params = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    instance._state.adding, instance._state.db = False, connection.alias
