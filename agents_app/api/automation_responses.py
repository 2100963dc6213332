"""Response schemas of the automation routes (schedules, webhooks, triggers, evals): what
OpenAPI shows for each answer. Built like agents_app.api.responses: keys passed through
unchanged, keys not declared kept, so the JSON stays as the services write it."""

from __future__ import annotations

from agents_app.api.responses import (
    Bool,
    Int,
    IntOrNull,
    Object,
    Objects,
    Out,
    Str,
    Strings,
    StrOrNull,
    Value,
)


class ScheduleOut(Out):
    """A schedule; one just made, or read alone, adds ``nextRuns`` (and ``runs``)."""

    id: Str
    name: Str
    agent: Str
    cron: StrOrNull
    timezone: Str
    intervalSeconds: IntOrNull
    message: Str
    envNames: Strings
    attachments: Objects
    target: Str
    standingThreadId: StrOrNull
    paused: Bool
    pausedReason: StrOrNull
    owner: StrOrNull
    catchUp: Bool
    nextRunAt: StrOrNull


class SchedulesOut(Out):
    schedules: list[ScheduleOut]


class ScheduleRunOut(Out):
    id: Str
    dueAt: Str
    manual: Bool
    status: Str
    threadId: StrOrNull
    messageId: StrOrNull
    startedAt: StrOrNull
    skipped: Value
    error: StrOrNull


class NextRunsOut(Out):
    nextRuns: Strings


class DeletedOut(Out):
    deleted: Bool
    id: Str


class SubscriptionOut(Out):
    id: Str
    agent: StrOrNull
    url: Str
    secretEnv: StrOrNull
    events: Strings
    active: Bool
    disabledReason: StrOrNull
    owner: StrOrNull


class SubscriptionsOut(Out):
    webhooks: list[SubscriptionOut]


class DeliveryOut(Out):
    id: Str
    subscriptionId: Str
    event: Str
    status: Str
    attempts: Int
    responseCode: IntOrNull
    error: StrOrNull
    createdAt: Str
    deliveredAt: StrOrNull
    nextAttemptAt: StrOrNull


class DeliveriesOut(Out):
    deliveries: list[DeliveryOut]


class TriggerOut(Out):
    """A trigger; the answer that made it adds ``token`` and ``path`` (shown once)."""

    id: Str
    agent: Str
    name: Str
    tokenPrefix: Str
    template: Str
    secretEnv: StrOrNull
    revoked: Bool
    disabledReason: StrOrNull
    owner: StrOrNull
    lastUsedAt: StrOrNull


class TriggersOut(Out):
    triggers: list[TriggerOut]


class DatasetOut(Out):
    name: Str
    description: Str
    cases: Int


class DatasetImportOut(Out):
    """A dataset file imported: the dataset as it is now and how many cases changed."""

    dataset: DatasetOut
    added: Int
    updated: Int
    removed: Int


class DatasetsOut(Out):
    datasets: list[DatasetOut]


class EvalRunOut(Out):
    """An eval run; read alone it adds its ``results``."""

    id: Str
    dataset: Str
    agent: Str
    label: Str
    versions: Object
    status: Str
    concurrency: Int
    createdAt: Str
    finishedAt: StrOrNull
    totals: Object


class EvalRunOneOut(Out):
    run: EvalRunOut


class EvalRunsOut(Out):
    runs: list[EvalRunOut]


class ComparedCaseOut(Out):
    case: Str
    a: Value
    b: Value
    changed: Value


class EvalCompareOut(Out):
    a: EvalRunOut
    b: EvalRunOut
    cases: list[ComparedCaseOut]
