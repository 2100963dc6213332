"""What the few reads written as plain SQL share (issue #21): a UUID as the driver's value,
and a JSON column's value as Python.

PostgreSQL takes a ``uuid.UUID``; SQLite stores the 32-digit hex text Django writes. The
field's own conversion gives the right one for whichever database is connected. JSON
columns arrive as text on both (Django registers a text loader for ``jsonb``).
"""

from __future__ import annotations

import functools
import json
import uuid
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
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


def prepared_cursor(wrapper: BaseDatabaseWrapper | None = None) -> CursorWrapper:
    """A cursor for the statements every conversation start runs (issue #58).

    On PostgreSQL it binds parameters on the server, so psycopg prepares a statement once
    the connection has run it ``DB_PREPARE_THRESHOLD`` times and PostgreSQL keeps its plan:
    planning was most of the database's CPU per start. Django's own cursors bind on the
    client, where nothing is ever prepared (``studio/db_options.py``). It is Django's
    cursor in all else (its wrapper: ``execute_wrappers``, the query log, error
    translation). On other databases, the connection's own cursor.
    """
    wrapper = wrapper if wrapper is not None else connections[DEFAULT_DB_ALIAS]
    if wrapper.vendor != "postgresql":
        return wrapper.cursor()
    # What ``BaseDatabaseWrapper.cursor()`` does, with the server-binding cursor class
    # Django itself uses under OPTIONS["server_side_binding"].
    from django.db.backends.postgresql.base import ServerBindingCursor

    wrapper.close_if_health_check_failed()
    wrapper.ensure_connection()
    with wrapper.wrap_database_errors:
        cursor = ServerBindingCursor(wrapper.connection)  # type: ignore[call-arg]
    wrapper.validate_thread_sharing()
    if wrapper.queries_logged:
        return _ComposedDebugCursor(cursor, wrapper)
    return wrapper.make_cursor(cursor)  # type: ignore[arg-type]  # (the stubs say CursorWrapper)


class _ComposedDebugCursor(CursorDebugWrapper):
    """The query log's entry for a server-bound statement is the statement with its values
    composed in, as for Django's own cursors (``last_executed_query`` reads a client-bound
    cursor's sent text; this one sends ``$1``). Only when queries are logged: DEBUG, tests."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        shown = self.db.ops.compose_sql(sql, params) if params is not None else sql
        with self.debug_sql(shown):
            return CursorWrapper.execute(self, sql, params)


def row_by_uuid(sql: str, value: Any) -> tuple[Any, ...] | None:
    """The one row ``sql`` (one ``%s``: a UUID) reads, or None for no row or a malformed id."""
    try:
        pk = db_uuid(value)
    except ValueError:
        return None
    with prepared_cursor() as cursor:
        cursor.execute(sql, [pk])
        return cursor.fetchone()  # type: ignore[no-any-return]


def model_columns(model: type[models.Model], table_alias: str) -> list[str]:
    """``alias."column"`` for each concrete field of ``model``, in ``_meta`` order (the order
    ``model_from_row`` reads). Quoted as both PostgreSQL and SQLite quote: a column may be
    named for a keyword (the agent's ``primary``), which SQLite refuses bare."""
    return [f'{table_alias}."{f.column}"' for f in model._meta.concrete_fields]


def model_select(model: type[models.Model], table_alias: str) -> str:
    """``SELECT`` every concrete field of ``model`` (``model_columns``) ``FROM`` its table as
    ``table_alias``: the start of a fixed statement ``model_from_row`` reads."""
    columns = ", ".join(model_columns(model, table_alias))
    return f"SELECT {columns} FROM {model._meta.db_table} {table_alias}"


def model_part(model: type[models.Model], table_alias: str) -> Part:
    """Every concrete field of ``model`` as a part of a composed SELECT, named by attname
    (``model_from_row`` takes ``Select.values(row, part)``)."""
    columns = model_columns(model, table_alias)
    return Part(
        tuple((f.attname, c) for f, c in zip(model._meta.concrete_fields, columns, strict=True))
    )


def model_from_row(model: type[models.Model], values: Sequence[Any]) -> Any:
    """An instance of ``model`` from its concrete fields' values as the cursor gave them,
    converted as the ORM converts them (SQLite's booleans and datetimes, for one)."""
    if len(values) != len(model._meta.concrete_fields):
        raise ValueError(f"{model.__name__}: {len(values)} values for its concrete fields")
    wrapper = connections[DEFAULT_DB_ALIAS]
    converting = _converters(wrapper, model)
    if converting:
        values = list(values)
        for index, column, converters in converting:
            value = values[index]
            for convert in converters:
                value = convert(value, column, wrapper)
            values[index] = value
    return model.from_db(wrapper.alias, _attnames(model), values)


@functools.cache
def _attnames(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(f.attname for f in model._meta.concrete_fields)


# Which fields of a model need converting, and by what, for each connection (its ``ops``
# are its own): worked out once per connection and model, as Django's compiler works them
# out once per query, not for every field of every row (issue #58: 114 Python calls an
# instance, most of them asking PostgreSQL's operations for converters it does not have).
_Converting = tuple[tuple[int, Any, tuple[Any, ...]], ...]
_CONVERTERS: weakref.WeakKeyDictionary[Any, dict[type[models.Model], _Converting]] = (
    weakref.WeakKeyDictionary()
)


def _converters(wrapper: Any, model: type[models.Model]) -> _Converting:
    known = _CONVERTERS.setdefault(wrapper, {})
    found = known.get(model)
    if found is None:
        found = known[model] = _converters_of(wrapper, model)
    return found


def _converters_of(wrapper: Any, model: type[models.Model]) -> _Converting:
    converting = []
    for index, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        converters = (*wrapper.ops.get_db_converters(column), *field.get_db_converters(wrapper))
        if converters:
            converting.append((index, column, converters))
    return tuple(converting)


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
    # The connection itself, not the ``connection`` proxy: each field's preparation reads
    # its features and operations, each read through the proxy four calls (issue #58).
    wrapper = connections[DEFAULT_DB_ALIAS]
    key = (model, wrapper.vendor)
    sql = _INSERTS.get(key)
    if sql is None:
        quote = wrapper.ops.quote_name
        columns = ", ".join(quote(str(f.column)) for f in fields)
        values = ", ".join(["%s"] * len(fields))
        sql = _INSERTS[key] = (
            f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({values})"
        )
    params = [f.get_db_prep_save(f.pre_save(instance, True), wrapper) for f in fields]
    with prepared_cursor(wrapper) as cursor:
        cursor.execute(sql, params)
    instance._state.adding, instance._state.db = False, wrapper.alias
