"""Feedback on replies: a filterable list, each row opening the thread's inspector at the
rated reply, a CSV export of what the filters show (``services.threads.feedback``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agents_app.admin.display import excerpt
from agents_app.admin.read_only import ReadOnlyAdmin
from agents_app.base.errors import DomainError
from agents_app.models import EvalDataset, Feedback
from agents_app.services.evals import checks as evals
from agents_app.services.threads import feedback as feedback_service

FROM_FEEDBACK = "From feedback"


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "rating", "agent", "version", "reason", "said", "user", "reply")
    list_filter = ("score", "agent", "reason")
    search_fields = ("comment", "reason", "message__thread__id", "message__id")
    list_select_related = ("agent", "user", "message")
    date_hierarchy = "created_at"
    change_list_template = "admin/agents_app/feedback/change_list.html"
    deletable = True  # a rating can be removed by an operator (spam, a test)
    actions = ["make_cases"]

    @admin.action(description="Make eval cases from the rated replies")
    def make_cases(self, request: HttpRequest, queryset: QuerySet[Feedback]) -> None:
        """One click from a thumbs-down to a case: the conversation up to the question, the
        person's comment as notes, in the dataset "From feedback" (add checks there)."""
        dataset, _ = EvalDataset.objects.get_or_create(
            name=FROM_FEEDBACK, defaults={"description": "Cases made from rated replies."}
        )
        made = 0
        for row in queryset.select_related("message"):
            try:
                evals.case_from_reply(dataset=dataset, message=row.message)
                made += 1
            except DomainError as exc:
                self.message_user(request, f"{row.message_id}: {exc.message}", messages.WARNING)
        url = reverse("admin:agents_app_evaldataset_change", args=[dataset.pk])
        self.message_user(
            request,
            format_html(
                '{} case(s) added to <a href="{}">{}</a>: add their checks there.',
                made,
                url,
                FROM_FEEDBACK,
            ),
            messages.SUCCESS,
        )

    @admin.display(description="Rating", ordering="score")
    def rating(self, obj: Feedback) -> str:
        return "👍" if obj.score == 1 else "👎"

    @admin.display(description="Agent version")
    def version(self, obj: Feedback) -> Any:
        name = obj.agent.name if obj.agent else ""
        return (obj.definition_versions or {}).get(f"agents/{name}", "–")

    @admin.display(description="Comment")
    def said(self, obj: Feedback) -> str:
        return excerpt(obj.comment, 80) or "–"

    @admin.display(description="Reply")
    def reply(self, obj: Feedback) -> str:
        url = reverse("admin:agents_app_thread_change", args=[obj.message.thread_id])
        return format_html(
            '<a href="{}#msg-{}">{}</a>', url, obj.message_id, excerpt(obj.message.content, 50)
        )

    def get_urls(self) -> list[URLPattern]:
        export = path(
            "export.csv",
            self.admin_site.admin_view(self.export_csv),
            name="agents_app_feedback_export",
        )
        return [export, *super().get_urls()]

    def export_csv(self, request: HttpRequest) -> HttpResponse:
        """The rows the list's filters select, as CSV (secrets redacted)."""
        if not self.has_view_permission(request):
            return HttpResponse(status=403)
        changelist = self.get_changelist_instance(request)
        rows = changelist.get_queryset(request).select_related("agent", "user", "message")
        response = HttpResponse(feedback_service.as_csv(rows), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="feedback.csv"'
        return response

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        extra = {"by_version": feedback_service.summary_by_version(), **(extra_context or {})}
        return super().changelist_view(request, extra)
