"""Running evals: an agent, pinned at definition versions, over a dataset's cases.

The database drives a run, as it drives sessions and effects: ``advance`` (called by the
beat's ``evals_tick`` on any worker, by the in-process sweeper in embedded mode, and by
``manage.py run_eval``) scores the cases whose thread has finished, starts pending cases
up to the run's concurrency, and closes the run when nothing is left. Each case's thread
is an ordinary thread whose session is pinned to the run's versions; a worker that dies
mid-case leaves a session the session sweep resumes, so the run goes on by itself.

Exactly once: a case is started by the advancer that moved it from pending to running
(a conditional UPDATE), and scored by the one that moved it from running to its result.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from agents_app.base.errors import Invalid, NotFound
from agents_app.models import (
    Agent,
    EvalDataset,
    EvalResult,
    EvalRun,
    Message,
    Thread,
    ThreadSession,
)
from agents_app.models.timestamps import now_us
from agents_app.orchestration.thread_creation import thread_create
from agents_app.selectors import is_offered
from agents_app.services.automation import owner_rights
from agents_app.services.definitions import versions as definition_versions
from agents_app.services.env.redaction import redact_for_thread
from agents_app.services.evals import checks as evals
from agents_app.services.evals import pins as eval_pins
from agents_app.services.sessions.lifecycle import thread_stop
from agents_app.services.threads.messages import message_post

logger = logging.getLogger("agents_app.evals")

ACTIVE = (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING, ThreadSession.Status.PARKED)
# A case claimed but not started (its advancer died before the thread existed) is retried.
START_GRACE = timedelta(seconds=60)
MAX_CONCURRENCY = 50


def run_start(
    *,
    dataset: str,
    agent: str,
    user: Any,
    versions: dict[str, int] | None = None,
    concurrency: int = 4,
    label: str = "",
) -> EvalRun:
    """Create a run of ``agent`` (at ``versions``, the rest newest) over ``dataset``."""
    found = EvalDataset.objects.filter(name=dataset).first()
    if found is None:
        raise NotFound(f"Dataset not found: {dataset}")
    row = Agent.objects.filter(name=agent).first()
    # A run acts as its creator: as POST /api/threads, a draft's or another group's agent is
    # not confirmed to exist. ``user`` None is manage.py run_eval: the machine's operator.
    if row is None or (user is not None and not is_offered(user, row.pk)):
        raise NotFound(f"Agent not found: {agent}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise Invalid(f"concurrency must be from 1 to {MAX_CONCURRENCY}")
    cases = list(found.cases.all())
    if not cases:
        raise Invalid(f"Dataset {dataset} has no cases")
    for case in cases:  # a case saved by hand in the database must still be sound
        evals.parse_messages(case.messages)
        evals.parse_checks(case.checks)
    # Pins may be written without their kind ("support-prompt": 4): the agent's own names.
    asked = eval_pins.resolve(agent, {str(k): int(v) for k, v in (versions or {}).items()})
    pins = definition_versions.pins_at(agent, asked)
    with transaction.atomic():
        run = EvalRun.objects.create(
            dataset=found,
            agent=agent,
            versions=asked,
            pins=pins.as_json(),
            label=label,
            concurrency=concurrency,
            created_by=user,
        )
        EvalResult.objects.bulk_create(EvalResult(run=run, case=c) for c in cases)
    return run


def run_cancel(run: EvalRun) -> EvalRun:
    """Stop a run: pending cases are cancelled, running cases' threads stopped."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().get(pk=run.pk)
        if locked.status != EvalRun.Status.RUNNING:
            return locked
        locked.status = EvalRun.Status.CANCELLED
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "finished_at"])
        locked.results.filter(status=EvalResult.Status.PENDING).update(
            status=EvalResult.Status.CANCELLED
        )
    for result in run.results.filter(
        status__in=(EvalResult.Status.RUNNING, EvalResult.Status.JUDGING)
    ).select_related("thread", "judge_thread"):
        for thread in (result.thread, result.judge_thread):
            if thread is not None:
                thread_stop(thread=thread)
        EvalResult.objects.filter(pk=result.pk).update(status=EvalResult.Status.CANCELLED)
    return locked


def advance_all() -> int:
    """Advance every running run; the number of cases that changed."""
    changed = 0
    for run_id in EvalRun.objects.filter(status=EvalRun.Status.RUNNING).values_list(
        "pk", flat=True
    ):
        try:
            changed += advance(str(run_id))
        except Exception:
            logger.exception("eval run %s: advancing failed; the next tick tries again", run_id)
    return changed


def advance(run_id: str) -> int:
    run = EvalRun.objects.filter(pk=run_id, status=EvalRun.Status.RUNNING).first()
    if run is None:
        return 0
    changed = _finish_idle(run)
    for result_id in _claim_pending(run):
        changed += 1
        try:
            _start(run, result_id)
        except Exception as exc:  # a case that cannot start is an error, not a stuck run
            logger.warning("eval run %s: case %s failed to start: %s", run.pk, result_id, exc)
            EvalResult.objects.filter(pk=result_id, status=EvalResult.Status.RUNNING).update(
                status=EvalResult.Status.ERROR,
                checks=[{"check": "start", "passed": False, "detail": str(exc)[:500]}],
                finished_at=timezone.now(),
            )
    _close_if_done(run)
    return changed


def _claim_pending(run: EvalRun) -> list[int]:
    """Move up to (concurrency − active) pending cases to running, under the run's row lock
    so two advancers never exceed the concurrency together."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update(skip_locked=True).filter(pk=run.pk).first()
        if locked is None:
            return []  # another advancer holds it right now
        stale = timezone.now() - START_GRACE
        locked.results.filter(
            status=EvalResult.Status.RUNNING, thread__isnull=True, started_at__lt=stale
        ).update(status=EvalResult.Status.PENDING)
        active = locked.results.filter(
            status__in=(EvalResult.Status.RUNNING, EvalResult.Status.JUDGING)
        ).count()
        room = max(0, locked.concurrency - active)
        ids = list(
            locked.results.filter(status=EvalResult.Status.PENDING)
            .order_by("case_id")
            .values_list("pk", flat=True)[:room]
        )
        EvalResult.objects.filter(pk__in=ids).update(
            status=EvalResult.Status.RUNNING, started_at=timezone.now()
        )
    return ids


def _start(run: EvalRun, result_id: int) -> None:
    result = EvalResult.objects.select_related("case").get(pk=result_id)
    messages = evals.parse_messages(result.case.messages)
    if run.created_by_id is not None:
        # Each case acts as the run's creator is now (active, offered the agent); the run's
        # concurrency paces it and the eval budget bounds it, not the per-minute limits.
        agent = Agent.objects.get(name=run.agent)
        owner_rights.act_as_owner("The eval run", run.created_by, agent)
    thread = thread_create(
        user=run.created_by,
        agent_name=run.agent,
        tags=[f"eval:{run.pk}"],
        env=dict(result.case.env or {}) or None,
    )
    with transaction.atomic():
        base = now_us()
        for offset, earlier in enumerate(messages[:-1]):
            Message.objects.create(
                thread=thread, role=earlier.role, content=earlier.content, created_at=base + offset
            )
        message_post(thread=thread, role="user", content=messages[-1].content)
        # Pinned before the commit that dispatches it: the session runs on the run's versions.
        ThreadSession.objects.filter(thread=thread, status=ThreadSession.Status.QUEUED).update(
            definition_versions=run.pins
        )
        EvalResult.objects.filter(pk=result_id).update(thread=thread)


def _idle(field: str) -> Exists:
    return Exists(ThreadSession.objects.filter(thread_id=OuterRef(field), status__in=ACTIVE))


def _finish_idle(run: EvalRun) -> int:
    """Score (or send to the judge) the cases whose thread has finished."""
    changed = 0
    running = (
        run.results.filter(status=EvalResult.Status.RUNNING, thread__isnull=False)
        .annotate(busy=_idle("thread_id"))
        .filter(busy=False)
        .select_related("case", "thread")
    )
    for result in running:
        changed += _score_or_judge(run, result)
    judging = (
        run.results.filter(status=EvalResult.Status.JUDGING, judge_thread__isnull=False)
        .annotate(busy=_idle("judge_thread_id"))
        .filter(busy=False)
        .select_related("case", "thread", "judge_thread")
    )
    for result in judging:
        reply = evals.outcome_of(result.judge_thread).answer  # type: ignore[arg-type]
        changed += _record(result, evals.judge_score(reply), EvalResult.Status.JUDGING)
    return changed


def _score_or_judge(run: EvalRun, result: EvalResult) -> int:
    checks = evals.parse_checks(result.case.checks)
    judge = next((c for c in checks if isinstance(c, evals.Judge)), None)
    if judge is None:
        return _record(result, None, EvalResult.Status.RUNNING)
    outcome = evals.outcome_of(result.thread)  # type: ignore[arg-type]
    question = evals.parse_messages(result.case.messages)[-1].content
    # Claim the judging step first, so two advancers never start two judges.
    if not EvalResult.objects.filter(pk=result.pk, status=EvalResult.Status.RUNNING).update(
        status=EvalResult.Status.JUDGING
    ):
        return 0
    thread = thread_create(
        user=run.created_by, agent_name=judge.agent, tags=[f"eval-judge:{run.pk}"]
    )
    message_post(
        thread=thread, role="user", content=evals.judge_prompt(judge, question, outcome.answer)
    )
    EvalResult.objects.filter(pk=result.pk).update(judge_thread=thread)
    return 1


def _record(result: EvalResult, judged: float | None, expected: str) -> int:
    outcome = evals.outcome_of(result.thread)  # type: ignore[arg-type]
    checks = evals.parse_checks(result.case.checks)
    passed, value, details = evals.score(checks, outcome, judged)
    cost = outcome.cost
    if result.judge_thread_id:
        cost += evals.outcome_of(Thread.objects.get(pk=result.judge_thread_id)).cost
    status = EvalResult.Status.PASSED if passed else EvalResult.Status.FAILED
    # A check's own text may hold a value that is a secret of the thread (an operator's
    # "contains" of a token): the stored details say it redacted, as everything else does.
    details = redact_for_thread(str(result.thread_id), details)
    # The conditional update is what makes a case scored once, whoever advances.
    return EvalResult.objects.filter(pk=result.pk, status=expected).update(
        status=status,
        score=value,
        checks=details,
        answer=outcome.answer,
        cost=cost,
        latency_ms=outcome.latency_ms,
        finished_at=timezone.now(),
    )


def _close_if_done(run: EvalRun) -> None:
    open_states = (EvalResult.Status.PENDING, EvalResult.Status.RUNNING, EvalResult.Status.JUDGING)
    if run.results.filter(status__in=open_states).exists():
        return
    EvalRun.objects.filter(pk=run.pk, status=EvalRun.Status.RUNNING).update(
        status=EvalRun.Status.COMPLETED, finished_at=timezone.now()
    )
