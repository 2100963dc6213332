"""Evals in the studio: datasets and their cases, runs (start, watch, cancel) and the
comparison of two runs side by side (``services.evals.checks``, ``eval_runs``).

A case's messages and checks are validated by the same functions the API and ``run_eval``
use, so the studio cannot save a check the scorer would not understand.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agents_app.admin.change_context import ChangeContextMixin
from agents_app.admin.display import json_block, verbatim
from agents_app.admin.eval_files import DatasetFilesMixin
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.base.errors import DomainError
from agents_app.base.people_format import duration, money_fine
from agents_app.forms.eval_pins import LIST_BUTTON
from agents_app.forms.evals import CaseForm, RunForm
from agents_app.models import EvalCase, EvalDataset, EvalResult, EvalRun
from agents_app.orchestration.eval_runs import run_cancel, run_start
from agents_app.services.evals import checks as evals


class CaseInline(admin.StackedInline):
    model = EvalCase
    form = CaseForm
    extra = 0
    fields = ("name", "messages", "checks", "env", "notes")


@admin.register(EvalDataset)
class EvalDatasetAdmin(DatasetFilesMixin, admin.ModelAdmin):
    list_display = ("name", "description", "case_count")
    search_fields = ("name",)
    inlines = [CaseInline]

    class Media:
        js = ("studio/dom.js", "studio/eval_cases.js")  # the case editor's rows
        css = {"all": ("studio/people_forms.css",)}

    @admin.display(description="Cases")
    def case_count(self, obj: EvalDataset) -> int:
        return obj.cases.count()


@admin.register(EvalRun)
class EvalRunAdmin(ChangeContextMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "label_or_agent",
        "dataset",
        "status",
        "progress",
        "pass_rate",
        "cost",
    )
    list_filter = ("status", "agent", "dataset")
    actions = ["compare_two", "cancel_runs"]
    change_form_template = "admin/agents_app/evalrun/change_form.html"

    class Media:
        js = ("studio/eval_pins.js",)  # lists the new agent's definitions when it changes
        css = {"all": ("studio/people_forms.css",)}

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kw: Any
    ) -> Any:
        if obj is None:
            kw["form"] = RunForm
        return super().get_form(request, obj, change=change, **kw)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("dataset", "agent", "pin_list", "pins", "label", "concurrency")
        return (
            "dataset",
            "agent",
            "shown_versions",
            "label",
            "concurrency",
            "status",
            "created_at",
            "finished_at",
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.get_fields(request, obj) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: EvalRun, form: Any, change: bool) -> None:
        if change:
            return
        try:
            started = run_start(
                dataset=obj.dataset.name,
                agent=form.cleaned_data["agent"],
                user=request.user,
                versions=form.cleaned_data.get("pins") or {},
                concurrency=obj.concurrency,
                label=obj.label,
            )
        except DomainError as exc:
            raise ValidationError(exc.message) from None
        obj.pk = started.pk

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> Any:
        if request.method == "POST" and LIST_BUTTON in request.POST:
            # "List what the chosen agent uses": the same form again, for that agent, with
            # what was typed kept (the admin reads a new form's initial values from the query).
            kept = {k: request.POST.get(k, "") for k in ("dataset", "agent", "label", "pins")}
            kept["concurrency"] = request.POST.get("concurrency", "")
            return HttpResponseRedirect(f"{request.path}?{urlencode(kept)}")
        try:
            return super().add_view(request, form_url, extra_context)
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def change_context(self, request: HttpRequest, obj: EvalRun) -> dict[str, Any]:
        return {
            **super().change_context(request, obj),
            "results": obj.results.select_related("case").order_by("case_id"),
            "totals": evals.totals(obj),
            "running": obj.status == EvalRun.Status.RUNNING,
        }

    @admin.display(description="Versions")
    def shown_versions(self, obj: EvalRun) -> str:
        return evals.versions_text(obj)

    @admin.display(description="Run")
    def label_or_agent(self, obj: EvalRun) -> str:
        return obj.label or obj.agent

    @admin.display(description="Progress")
    def progress(self, obj: EvalRun) -> str:
        t = evals.totals(obj)
        return f"{t['done'] + t['errors']} of {t['cases']}"

    @admin.display(description="Pass rate")
    def pass_rate(self, obj: EvalRun) -> str:
        rate = evals.totals(obj)["pass_rate"]
        return "–" if rate is None else f"{rate:.0%}"

    @admin.display(description="Cost")
    def cost(self, obj: EvalRun) -> str:
        return money_fine(evals.totals(obj)["cost"])

    @admin.action(description="Compare the two selected runs")
    def compare_two(self, request: HttpRequest, queryset: QuerySet[EvalRun]) -> Any:
        runs = list(queryset.order_by("created_at")[:3])
        if len(runs) != 2:
            self.message_user(request, "Select exactly two runs to compare.", messages.WARNING)
            return None
        url = reverse("admin:agents_app_evalrun_compare")
        return HttpResponseRedirect(f"{url}?a={runs[0].pk}&b={runs[1].pk}")

    @admin.action(description="Cancel the selected runs")
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[EvalRun]) -> None:
        for run in queryset.filter(status=EvalRun.Status.RUNNING):
            run_cancel(run)
        self.message_user(request, "Cancelled.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        compare = path(
            "compare/",
            self.admin_site.admin_view(self.compare_view),
            name="agents_app_evalrun_compare",
        )
        return [compare, *super().get_urls()]

    def compare_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            return HttpResponse(status=403)
        a = get_object_or_404(EvalRun, pk=request.GET.get("a"))
        b = get_object_or_404(EvalRun, pk=request.GET.get("b"))
        context = {
            **self.admin_site.each_context(request),
            "title": "Compare eval runs",
            "table": evals.compare(a, b),
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/agents_app/evalrun/compare.html", context)


@admin.register(EvalResult)
class EvalResultAdmin(ReadOnlyAdmin):
    list_display = ("run", "case", "status", "score", "shown_cost", "shown_time", "thread_link")
    list_filter = ("status", "run")
    # The result's page in human formats (issue #55: never a cost of 0.00000000).
    fields = (
        "run",
        "case",
        "status",
        "score",
        "shown_answer",
        "shown_checks",
        "shown_cost",
        "shown_time",
        "thread_link",
    )
    readonly_fields = fields

    @admin.display(description="Answer")
    def shown_answer(self, obj: EvalResult) -> str:
        return verbatim(obj.answer)

    @admin.display(description="Checks")
    def shown_checks(self, obj: EvalResult) -> str:
        return json_block(obj.checks)

    @admin.display(description="Cost", ordering="cost")
    def shown_cost(self, obj: EvalResult) -> str:
        return money_fine(obj.cost)

    @admin.display(description="Time", ordering="latency_ms")
    def shown_time(self, obj: EvalResult) -> str:
        return duration(obj.latency_ms)

    @admin.display(description="Thread")
    def thread_link(self, obj: EvalResult) -> str:
        if not obj.thread_id:
            return "–"
        url = reverse("admin:agents_app_thread_change", args=[obj.thread_id])
        return format_html('<a href="{}">Inspect</a>', url)
