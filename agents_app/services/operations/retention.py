"""Retention: delete threads, logs and finished effects past their period; trim old log bodies.

The periods come from settings (``STUDIO_RETENTION_*``), each overridden by the studio's
``RetentionPolicy`` row; 0 keeps forever. One run works in this order, so no row is
trimmed just before it is deleted:

1. threads idle past the thread period, a root thread with all its subagent threads,
   never one whose tree has a queued or running session or a pending effect (checked
   again, under a row lock, in every transaction that deletes any of its rows);
2. logs older than the log period; 3. finished effects older than the effect period;
4. request/response bodies and system prompts of logs older than the body period
   (their tokens, cost and latency stay).

Every statement touches at most ``STUDIO_RETENTION_BATCH`` rows in its own short
transaction (``agents_app.services.threads.batched_delete``), and a run stops after
``STUDIO_RETENTION_MAX_SECONDS``; the next run continues where it stopped.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import IntegrityError, OperationalError, models, transaction
from django.db.models import BooleanField, Case, Exists, OuterRef, Q, Value, When
from django.utils import timezone

from agents_app.broadcast.events import asend_registry
from agents_app.models import (
    Log,
    RetentionPolicy,
    ScheduledEffect,
    Thread,
    ThreadSession,
    UserValue,
)
from agents_app.models.effects import FINISHED
from agents_app.selectors import ACTIVE_SESSION
from agents_app.services.threads.batched_delete import (
    Abandon,
    Batches,
    OutOfTime,
    delete_rows,
    reverse_relations,
)
from runtime.knowledge.memory_names import MEMORY_KEY_PREFIX

logger = logging.getLogger(__name__)

UNFINISHED_EFFECT = (ScheduledEffect.Status.PENDING, ScheduledEffect.Status.PROCESSING)
_HAS_BODY = Q(request_body__isnull=False) | Q(response_body__isnull=False) | ~Q(system_prompt="")


@dataclass(frozen=True)
class Policy:
    """Days to keep each kind of row; 0 keeps forever."""

    thread_days: int
    log_days: int
    log_body_days: int
    effect_days: int
    memory_days: int


def policy_row() -> RetentionPolicy:
    row, _ = RetentionPolicy.objects.get_or_create(pk=RetentionPolicy.SINGLETON_ID)
    return row


def settings_policy() -> Policy:
    return Policy(
        thread_days=settings.STUDIO_RETENTION_THREAD_DAYS,
        log_days=settings.STUDIO_RETENTION_LOG_DAYS,
        log_body_days=settings.STUDIO_RETENTION_LOG_BODY_DAYS,
        effect_days=settings.STUDIO_RETENTION_EFFECT_DAYS,
        memory_days=settings.STUDIO_RETENTION_MEMORY_DAYS,
    )


def effective_policy(row: RetentionPolicy | None = None) -> Policy:
    """The settings, with each period the studio's row sets (not empty) taking precedence."""
    base = settings_policy()
    row = row if row is not None else policy_row()

    def pick(name: str) -> int:
        value = getattr(row, name)
        return int(value) if value is not None else int(getattr(base, name))

    return Policy(*(pick(name) for name in Policy.__dataclass_fields__))


def policy_problems(policy: Policy) -> list[str]:
    """Why this policy cannot be applied as written (empty when it can)."""
    problems = [f"{name} must be 0 or more" for name, v in vars(policy).items() if v < 0]
    if 0 < policy.log_days <= policy.log_body_days:
        problems.append(
            f"log bodies would be trimmed after {policy.log_body_days} days, but their logs "
            f"are deleted after {policy.log_days}: trim sooner than logs are deleted, or use 0"
        )
    return problems


@dataclass
class Report:
    """What a run deleted (or, dry, would delete), per model label."""

    dry_run: bool
    policy: Policy
    now: datetime
    trimmed_before: int = 0  # RetentionPolicy.log_bodies_trimmed_before when the run began
    deleted: dict[str, int] = field(default_factory=dict)
    threads_kept: int = 0
    log_bodies_trimmed: int = 0
    references_cleared: int = 0
    transactions: int = 0
    largest_statement: int = 0
    finished: bool = True
    seconds: float = 0.0
    # Dry runs: rows a later step would count that the thread step already counted.
    overlap: dict[str, int] = field(default_factory=dict, repr=False)

    def lines(self) -> list[str]:
        verb = "would delete" if self.dry_run else "deleted"
        out = [f"{verb} {n} {label}" for label, n in sorted(self.deleted.items()) if n]
        trim = "would trim" if self.dry_run else "trimmed"
        out.append(f"{trim} the bodies of {self.log_bodies_trimmed} logs")
        out.append(f"kept {self.threads_kept} old threads that are in use")
        if not self.dry_run:
            out.append(
                f"{self.transactions} transactions, at most {self.largest_statement} rows "
                f"per statement, {self.seconds:.1f} s"
            )
        if not self.finished:
            out.append("stopped at the time limit; the next run continues")
        return out


def retention_apply(
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    batch: int | None = None,
    max_seconds: float | None = None,
) -> Report:
    """Apply the effective policy once (see the module docstring); returns what it did."""
    row = policy_row()
    policy = effective_policy(row)
    problems = policy_problems(policy)
    if problems:
        raise ValueError("; ".join(problems))
    now = now or timezone.now()
    budget = settings.STUDIO_RETENTION_MAX_SECONDS if max_seconds is None else max_seconds
    started = time.monotonic()
    run = Batches(size=batch or settings.STUDIO_RETENTION_BATCH, deadline=started + budget)
    report = Report(
        dry_run=dry_run, policy=policy, now=now, trimmed_before=row.log_bodies_trimmed_before
    )
    try:
        if policy.thread_days:
            _threads(run, report, now - timedelta(days=policy.thread_days))
        if policy.log_days:
            _old_logs(run, report, _log_cutoff(report))
        if policy.effect_days:
            _old_effects(run, report, _effect_cutoff(report))
        if policy.memory_days:
            _old_memories(run, report, _us(now - timedelta(days=policy.memory_days)) // 1000)
        if policy.log_body_days:
            _trim_bodies(run, report, row, _body_cutoff(report))
    except OutOfTime:
        report.finished = False
    report.seconds = time.monotonic() - started
    if not dry_run:
        for label, n in run.deleted.items():
            report.deleted[label] = report.deleted.get(label, 0) + n
        report.transactions, report.largest_statement = run.transactions, run.largest_statement
        report.references_cleared = run.nulled
        RetentionPolicy.objects.filter(pk=row.pk).update(
            last_run_at=timezone.now(), last_run_summary="\n".join(report.lines())
        )
    return report


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _log_cutoff(report: Report) -> int:
    return _us(report.now - timedelta(days=report.policy.log_days))


def _effect_cutoff(report: Report) -> datetime:
    return report.now - timedelta(days=report.policy.effect_days)


def _body_cutoff(report: Report) -> int:
    return _us(report.now - timedelta(days=report.policy.log_body_days))


def _trim_from(report: Report) -> int:
    """Where trimming starts: past what was trimmed before and what the log step deletes."""
    start = report.trimmed_before
    return max(start, _log_cutoff(report)) if report.policy.log_days else start


# --- threads -----------------------------------------------------------------------------


def _old_roots(cutoff: datetime, size: int) -> Iterator[list[Any]]:
    """Root threads idle since before ``cutoff``, oldest first, ``size`` at a time.

    Keyset pages (not OFFSET), so threads kept because they are in use are passed over.
    """
    after: tuple[datetime, Any] | None = None
    while True:
        query = Thread.objects.filter(parent__isnull=True, last_activity_at__lt=cutoff)
        if after is not None:
            query = query.filter(
                Q(last_activity_at__gt=after[0]) | Q(last_activity_at=after[0], pk__gt=after[1])
            )
        page = list(
            query.order_by("last_activity_at", "pk").values_list("last_activity_at", "pk")[:size]
        )
        if not page:
            return
        yield [pk for _, pk in page]
        if len(page) < size:
            return
        after = page[-1]


def _subtrees(roots: Sequence[Any]) -> dict[Any, list[Any]]:
    """Each root with its subagent threads (all levels), root first."""
    root_of = {pk: pk for pk in roots}
    frontier = list(roots)
    while frontier:
        rows = Thread.objects.filter(parent_id__in=frontier).values_list("pk", "parent_id")
        frontier = []
        for pk, parent in rows:
            if pk not in root_of:
                root_of[pk] = root_of[parent]
                frontier.append(pk)
    trees: dict[Any, list[Any]] = defaultdict(list)
    for pk, root in root_of.items():
        trees[root].append(pk)
    return trees


def _in_use(cutoff: datetime) -> Case:
    """True for a thread that must stay: recent activity, a live session, a pending effect."""
    sessions = ThreadSession.objects.filter(thread_id=OuterRef("pk"), status__in=ACTIVE_SESSION)
    effects = ScheduledEffect.objects.filter(thread_id=OuterRef("pk"), status__in=UNFINISHED_EFFECT)
    busy = Q(last_activity_at__gte=cutoff) | Exists(sessions) | Exists(effects)
    return Case(When(busy, then=Value(True)), default=Value(False), output_field=BooleanField())


def _threads_in_use(ids: Sequence[Any], cutoff: datetime) -> set[Any]:
    rows = Thread.objects.filter(pk__in=ids).annotate(busy=_in_use(cutoff)).filter(busy=True)
    return set(rows.values_list("pk", flat=True))


def _guard(ids: list[Any], cutoff: datetime) -> Any:
    """Lock the threads (never waiting for a lock someone holds) and check they may still go.

    Posting a message locks its thread first (``sessions.lock_thread``), and any write
    into a thread takes a key-share lock on it when it commits (the foreign key check):
    so such a write either committed before this check (and is seen), or waits for this
    short transaction and the next check sees it.
    """
    locked = (
        Thread.objects.select_for_update(nowait=True, of=("self",))
        .filter(pk__in=ids)
        .annotate(busy=_in_use(cutoff))
        .values_list("busy", flat=True)
    )

    def guard() -> None:
        try:
            busy = any(list(locked.all()))  # .all(): a fresh query (and lock) every time
        except OperationalError:
            raise Abandon("a thread is locked by someone else") from None
        if busy:
            raise Abandon("a thread is in use again")

    return guard


def _threads(run: Batches, report: Report, cutoff: datetime) -> None:
    for roots in _old_roots(cutoff, run.size):
        trees = _subtrees(roots)
        in_use = _threads_in_use([pk for tree in trees.values() for pk in tree], cutoff)
        going = [root for root, tree in trees.items() if not in_use.intersection(tree)]
        report.threads_kept += len(trees) - len(going)
        if report.dry_run:
            _count_threads(report, [pk for root in going for pk in trees[root]])
        elif going and not _delete_threads(run, going, trees, cutoff):
            # Something in the group came back to life: one root at a time, so it alone stays.
            for root in going:
                if not _delete_threads(run, [root], trees, cutoff):
                    report.threads_kept += 1


def _delete_threads(
    run: Batches, roots: list[Any], trees: dict[Any, list[Any]], cutoff: datetime
) -> bool:
    ids = [pk for root in roots for pk in trees[root]]
    owners = dict(Thread.objects.filter(pk__in=ids).values_list("pk", "owner_id"))
    run.guard = _guard(ids, cutoff)
    try:
        delete_rows(run, Thread, roots)
        _announce_deleted(owners)
        return True
    except Abandon:
        return False
    except IntegrityError:
        # A row was added to one of these threads between its batches (e.g. a file upload):
        # the last transaction rolled back, nothing half-deleted is left pointing nowhere.
        logger.info("retention: a thread got new rows while being deleted; kept for now")
        return False
    finally:
        run.guard = None


def _announce_deleted(owners: dict[Any, Any]) -> None:
    """Tell live thread lists (the registry), as deleting one thread through the API does."""

    async def send() -> None:
        for pk, owner in owners.items():
            await asend_registry({"type": "thread_deleted", "threadId": str(pk)}, owner)

    async_to_sync(send)()


def _count_threads(report: Report, ids: list[Any]) -> None:
    if not ids:
        return
    _add(report, Thread._meta.label, len(ids))
    for rel in reverse_relations(Thread):
        if rel.on_delete is models.CASCADE:
            model = rel.related_model
            if model is Thread:
                continue  # subagent threads are in ``ids`` already
            n = model._base_manager.filter(**{f"{rel.field.name}__in": ids}).count()
            _add(report, model._meta.label, n)
    # What the later steps would have found in these threads is gone with them.
    policy, logs = report.policy, Log.objects.filter(thread_id__in=ids)
    if policy.log_days:
        _add_overlap(report, "logs", logs.filter(created_at__lt=_log_cutoff(report)).count())
    if policy.effect_days:
        effects = _finished_before(_effect_cutoff(report)).filter(thread_id__in=ids)
        _add_overlap(report, "effects", effects.count())
    if policy.log_body_days:
        bodies = logs.filter(
            _HAS_BODY, created_at__gte=_trim_from(report), created_at__lt=_body_cutoff(report)
        )
        _add_overlap(report, "bodies", bodies.count())


def _add_overlap(report: Report, key: str, n: int) -> None:
    report.overlap[key] = report.overlap.get(key, 0) + n


def _add(report: Report, label: str, n: int) -> None:
    if n:
        report.deleted[label] = report.deleted.get(label, 0) + n


# --- logs and effects --------------------------------------------------------------------


def _finished_before(cutoff: datetime) -> Any:
    return ScheduledEffect.objects.filter(status__in=FINISHED, completed_at__lt=cutoff)


def _drain_oldest(run: Batches, report: Report, query: Any, order: str, step: str) -> None:
    """Delete the rows of ``query`` oldest first, ``run.size`` at a time (or count them)."""
    if report.dry_run:
        _add(report, query.model._meta.label, query.count() - report.overlap.get(step, 0))
        return
    while ids := list(query.order_by(order).values_list("pk", flat=True)[: run.size]):
        delete_rows(run, query.model, ids)
        if len(ids) < run.size:
            return


def _old_logs(run: Batches, report: Report, cutoff_us: int) -> None:
    _drain_oldest(run, report, Log.objects.filter(created_at__lt=cutoff_us), "created_at", "logs")


def _old_effects(run: Batches, report: Report, cutoff: datetime) -> None:
    _drain_oldest(run, report, _finished_before(cutoff), "completed_at", "effects")


def _old_memories(run: Batches, report: Report, cutoff_ms: int) -> None:
    """A person's memories (user values under ``memory/``) not changed since the cutoff; the
    account's other values are theirs to keep and are not touched."""
    old = UserValue.objects.filter(key__startswith=MEMORY_KEY_PREFIX, updated_at__lt=cutoff_ms)
    _drain_oldest(run, report, old, "updated_at", "memories")


def _trim_bodies(run: Batches, report: Report, row: RetentionPolicy, cutoff_us: int) -> None:
    """Drop bodies of logs created in [watermark, cutoff); the watermark then moves up."""
    start = row.log_bodies_trimmed_before
    if cutoff_us <= start:
        return
    pending = Log.objects.filter(_HAS_BODY, created_at__lt=cutoff_us)
    if report.dry_run:
        counted = pending.filter(created_at__gte=_trim_from(report)).count()
        report.log_bodies_trimmed = counted - report.overlap.get("bodies", 0)
        return
    try:
        while True:
            with transaction.atomic():
                run.begin()
                page = list(
                    pending.filter(created_at__gte=start)
                    .order_by("created_at")
                    .values_list("pk", "created_at")[: run.size]
                )
                trimmed = Log.objects.filter(pk__in=[pk for pk, _ in page]).update(
                    request_body=None, response_body=None, system_prompt=""
                )
                report.log_bodies_trimmed += run.wrote(trimmed)
            if len(page) < run.size:
                start = cutoff_us
                return
            # Every log before the last one trimmed is trimmed (pages go in created_at order).
            start = page[-1][1]
    finally:
        RetentionPolicy.objects.filter(pk=row.pk).update(log_bodies_trimmed_before=start)
