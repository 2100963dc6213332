"""The Logs list's filters in words (issue #40 item 9): "Outcome: finished / still running",
"Error: A step failed", "Ended: Called tools", never a column name or a stored code."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agents_app.base.people_format import REASONS
from agents_app.selectors import STOPPED_LOG_TYPE, cut_short_by_a_stop, stopped_by_a_person


def _words(code: str) -> str:
    return REASONS.get(code, code.replace("_", " ").capitalize())


class _CodeFilter(admin.SimpleListFilter):
    """Filter on a stored code column, each choice shown in words (the code in the URL)."""

    field = ""
    not_listed: tuple[str, ...] = ()

    def rows(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The rows this filter speaks of (all of them, unless a subclass says otherwise)."""
        return queryset

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        codes = (
            self.rows(model_admin.get_queryset(request))
            .exclude(**{self.field: ""})
            .exclude(**{f"{self.field}__in": self.not_listed})
            .exclude(**{f"{self.field}__isnull": True})
            .order_by(self.field)
            .values_list(self.field, flat=True)
            .distinct()
        )
        return [(code, _words(code)) for code in codes]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return self.rows(queryset).filter(**{self.field: value}) if value else queryset


class ErrorFilter(_CodeFilter):
    title = "error"
    parameter_name = "error"
    field = "error_type"
    # A person's Stop is no error: it is a choice of "outcome" (FinishedFilter).
    not_listed = (STOPPED_LOG_TYPE,)

    def rows(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.exclude(cut_short_by_a_stop())


class EndedFilter(_CodeFilter):
    title = "how the request ended"
    parameter_name = "ended"
    field = "finish_reason"


class StopReasonFilter(_CodeFilter):
    """A session list's "why it ended", in words (issue #55: never ``stop_on_response``)."""

    title = "why it ended"
    parameter_name = "ended"
    field = "stop_reason"


class FinishedFilter(admin.SimpleListFilter):
    title = "outcome"
    parameter_name = "finished"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("yes", "Finished"),
            ("no", "Still running or cut off"),
            (STOPPED_LOG_TYPE, "Stopped by a person"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == STOPPED_LOG_TYPE:
            return queryset.filter(stopped_by_a_person())
        if self.value() in ("yes", "no"):
            return queryset.filter(is_complete=self.value() == "yes")
        return queryset
