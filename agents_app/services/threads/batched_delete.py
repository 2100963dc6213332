"""Delete rows with everything that depends on them, in bounded statements and short transactions.

Django's ``QuerySet.delete()`` loads every dependent row into memory and deletes them in
one transaction; for a thread with 100,000 messages that is one long transaction holding
100,000 row locks. Here each statement touches at most ``batch`` rows and each
transaction is one such batch: dependents first (following the models' ``on_delete``,
so relations added later are handled too), then the rows themselves.

``guard`` runs first in every transaction; it locks what must not change underneath
(the threads being deleted) and raises ``Abandon`` when the rows are no longer to go.
Storage files named by ``FileField`` columns are removed after their rows' commit.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import models, transaction

from agents_app.services.threads.files import discard_blobs


class Abandon(Exception):
    """The rows being deleted are in use again (or gone): stop deleting them."""


class OutOfTime(Exception):
    """The run's time budget is spent; the next run continues."""


@dataclass
class Batches:
    """One run's batch size, deadline and tallies (rows per model, statements, transactions)."""

    size: int
    deadline: float = float("inf")
    guard: Callable[[], None] | None = None
    deleted: dict[str, int] = field(default_factory=dict)
    nulled: int = 0
    transactions: int = 0
    largest_statement: int = 0

    def begin(self) -> None:
        """Start of a transaction: enforce the budget and the guard."""
        if time.monotonic() > self.deadline:
            raise OutOfTime
        self.transactions += 1
        if self.guard is not None:
            self.guard()

    def wrote(self, rows: int) -> int:
        self.largest_statement = max(self.largest_statement, rows)
        return rows

    def count(self, model: type[models.Model], rows: int) -> None:
        if rows:
            label = model._meta.label
            self.deleted[label] = self.deleted.get(label, 0) + rows


@functools.cache
def reverse_relations(model: type[models.Model]) -> list[Any]:
    """Every foreign key pointing at ``model``, hidden ones (``related_name="+"``) too.

    Ordered so that a model other dependents point at goes after them (messages before
    the logs they name): fewer references to clear on rows about to be deleted anyway.
    """
    rels = reverse_relations_unordered(model)
    models_here = {rel.related_model for rel in rels}

    def pointed_at_by_siblings(rel: Any) -> int:
        target = rel.related_model
        return sum(
            1
            for back in reverse_relations_unordered(target)
            if back.related_model in models_here and back.related_model is not target
        )

    return sorted(rels, key=pointed_at_by_siblings)


def reverse_relations_unordered(model: type[models.Model]) -> list[Any]:
    return [
        rel
        for rel in model._meta.get_fields(include_hidden=True)
        if rel.auto_created and not rel.concrete and (rel.one_to_many or rel.one_to_one)
    ]


def _file_names(model: type[models.Model], ids: Sequence[Any]) -> list[str]:
    columns = [f.name for f in model._meta.fields if isinstance(f, models.FileField)]
    if not columns:
        return []
    rows = model._base_manager.filter(pk__in=ids).values_list(*columns)
    return [str(name) for row in rows for name in row if name]


def _dependents(
    rel: Any, parent_ids: Sequence[Any], size: int, skip: frozenset[Any] = frozenset()
) -> list[Any]:
    # No ORDER BY: any ``size`` of them will do, and sorting would read every dependent
    # of the batch (all of a big thread's messages) once per batch instead of ``size``.
    manager = rel.related_model._base_manager
    query = manager.filter(**{f"{rel.field.name}__in": parent_ids}).order_by()
    if skip:
        query = query.exclude(pk__in=skip)
    return list(query.values_list("pk", flat=True)[:size])


def _clear_references(run: Batches, rel: Any, parent_ids: Sequence[Any]) -> None:
    """SET_NULL dependents: point them at nothing, ``run.size`` rows per statement."""
    while ids := _dependents(rel, parent_ids, run.size):
        with transaction.atomic():
            run.begin()
            rows = rel.related_model._base_manager.filter(pk__in=ids).update(
                **{rel.field.name: None}
            )
            run.nulled += run.wrote(rows)
        if len(ids) < run.size:
            return


def _drain(run: Batches, rel: Any, parent_ids: Sequence[Any], above: frozenset[Any]) -> None:
    on_delete = rel.on_delete
    if on_delete is models.CASCADE:
        # A row pointing at itself, or a loop of parents, is deleted once, by the row above.
        skip = above if rel.related_model is rel.model else frozenset()
        while ids := _dependents(rel, parent_ids, run.size, skip):
            delete_rows(run, rel.related_model, ids, _above=skip | frozenset(ids))
    elif on_delete is models.SET_NULL:
        _clear_references(run, rel, parent_ids)
    elif on_delete is not models.DO_NOTHING:
        # PROTECT, RESTRICT, SET_DEFAULT, SET(): a deliberate decision the caller must make.
        raise Abandon(f"{rel.related_model._meta.label}.{rel.field.name} is {on_delete.__name__}")


def delete_rows(
    run: Batches,
    model: type[models.Model],
    ids: Sequence[Any],
    *,
    _above: frozenset[Any] = frozenset(),
) -> int:
    """Delete these rows (at most ``run.size``) after everything that depends on them.

    Dependents go in their own transactions first; the rows themselves in one last
    short transaction. A dependent written meanwhile without tripping the guard makes
    that transaction fail on its foreign key (nothing is lost; the next run retries).
    """
    above = _above | frozenset(ids)
    for rel in reverse_relations(model):
        _drain(run, rel, ids, above)
    with transaction.atomic():
        run.begin()
        names = _file_names(model, ids)
        rows = model._base_manager.filter(pk__in=ids)
        deleted = run.wrote(rows._raw_delete(rows.db))
        if names:
            transaction.on_commit(lambda: discard_blobs(names))
    run.count(model, deleted)
    return deleted
