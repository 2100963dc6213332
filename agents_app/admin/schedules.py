"""Recurring schedules in the studio: the next five run times are shown before saving
(the first save of a new or changed timing answers with them and asks to save again),
pause, resume and run now as actions, each run linked to its thread."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from agents_app.admin.owned import OwnedAdminMixin
from agents_app.errors import DomainError
from agents_app.forms.fields import KeyValueLinesField
from agents_app.models import Schedule, ScheduleRun
from agents_app.orchestration.schedule_runner import run_start
from agents_app.services import schedules
from agents_app.services.sessions import owner_id

TIMING = ("cron", "timezone", "interval_seconds")
# The form's fields that change what a run posts, or where (services.schedules.schedule_saved_in_studio).
OWNER_FIELDS = ("agent", "message", "target", "upload", "drop_files", "env_lines")


def _fingerprint(spec: schedules.ScheduleSpec) -> str:
    text = f"{spec.cron}|{spec.timezone}|{spec.interval_seconds}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class MultipleFiles(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented pattern: each file cleaned alone)."""

    def clean(self, data: Any, initial: Any = None) -> Any:
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(d, initial) for d in data]
        return super().clean(data, initial)


class ScheduleForm(forms.ModelForm):
    previewed = forms.CharField(required=False, widget=forms.HiddenInput)
    upload = MultipleFileField(
        label="Attachments",
        required=False,
        widget=MultipleFiles(),
        help_text="Files each run's message carries (at most 10, 5 MiB in all). Choosing files "
        "replaces the ones kept; leave it empty to keep them.",
    )
    drop_files = forms.BooleanField(label="Remove the attachments", required=False)
    env_lines = KeyValueLinesField(
        label="Thread env",
        help_text="Env values each run's thread gets, one NAME=value per line. The values are "
        "never shown again: typing lines replaces them all; leave it empty to keep them.",
    )

    class Meta:
        model = Schedule
        fields = [
            "name",
            "agent",
            "message",
            "cron",
            "timezone",
            "interval_seconds",
            "target",
            "catch_up",
            "paused",
        ]
        help_texts = {
            "cron": "Five fields (minute hour day month weekday), or six with seconds first "
            "… as cronsim reads them. Leave empty to use an interval.",
            "timezone": "An IANA name (Europe/Paris). Daylight-saving: a time skipped by the "
            "spring change runs once at the first valid moment; a repeated one runs once.",
            "interval_seconds": "Instead of cron: every N seconds from the save.",
            "catch_up": "After an outage, how many missed runs to make up besides the latest.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        row = self.instance
        if row.pk and row.attachments:
            names = ", ".join(a["name"] for a in row.attachments)
            self.fields["upload"].help_text += f" Kept now: {names}."
        if row.pk and row.env_names:
            self.fields["env_lines"].help_text += f" Set now: {', '.join(row.env_names)}."

    def clean_upload(self) -> list[dict[str, Any]] | None:
        uploads = self.files.getlist("upload") if hasattr(self.files, "getlist") else []
        if not uploads:
            return None
        items = [
            {
                "name": f.name,
                "mimeType": f.content_type or "application/octet-stream",
                "data": base64.b64encode(f.read()).decode(),
            }
            for f in uploads
        ]
        try:
            return schedules.attachments_checked(items)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def save(self, commit: bool = True) -> Any:
        row = self.instance
        if self.cleaned_data.get("drop_files"):
            row.attachments = []
        elif self.cleaned_data.get("upload") is not None:
            row.attachments = self.cleaned_data["upload"]
        if self.cleaned_data.get("env_lines"):
            row.env = self.cleaned_data["env_lines"]
        return super().save(commit)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        spec = schedules.ScheduleSpec(
            (data.get("cron") or "").strip(),
            data.get("timezone") or "UTC",
            data.get("interval_seconds"),
        )
        try:
            upcoming = schedules.next_times(spec, 5)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        changed = self.instance.pk is None or any(f in self.changed_data for f in TIMING)
        if changed and data.get("previewed") != _fingerprint(spec):
            posted = self.data.copy()  # type: ignore[attr-defined]
            posted["previewed"] = _fingerprint(spec)
            self.data = posted
            times = ", ".join(
                t.astimezone(ZoneInfo(spec.timezone)).strftime("%a %Y-%m-%d %H:%M:%S %Z")
                for t in upcoming
            )
            raise forms.ValidationError(f"Next five runs: {times}. Save again to confirm.")
        return data


class RunInline(admin.TabularInline):
    model = ScheduleRun
    extra = 0
    can_delete = False
    fields = ("due_at", "manual", "status", "thread_link", "started_at", "skipped", "error")
    readonly_fields = fields
    ordering = ("-due_at",)
    max_num = 0

    @admin.display(description="Thread")
    def thread_link(self, obj: ScheduleRun) -> str:
        if not obj.thread_id:
            return "—"
        url = reverse("admin:agents_app_thread_change", args=[obj.thread_id])
        return format_html('<a href="{}">{}</a>', url, str(obj.thread_id)[:8])


@admin.register(Schedule)
class ScheduleAdmin(OwnedAdminMixin, admin.ModelAdmin):
    form = ScheduleForm
    owned_kind = "schedule"
    list_display = (
        "__str__",
        "agent",
        "timing",
        "target",
        "paused",
        "next_run_at",
        "owner",
        "stopped_because",
    )
    list_filter = ("paused", "target", "agent")
    readonly_fields = ("next_runs", "standing_thread", "owner", "paused_reason")
    inlines = [RunInline]
    actions = ["pause", "resume", "run_now"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [
            *ScheduleForm.Meta.fields,
            "upload",
            "drop_files",
            "env_lines",
            "previewed",
            "next_runs",
            "standing_thread",
            "owner",
            "paused_reason",
        ]

    @admin.display(description="Timing")
    def timing(self, obj: Schedule) -> str:
        return f"{obj.cron} ({obj.timezone})" if obj.cron else f"every {obj.interval_seconds} s"

    @admin.display(description="Next five runs")
    def next_runs(self, obj: Schedule) -> str:
        if obj.pk is None:
            return "Shown when you save."
        times = schedules.next_times(schedules.spec_of(obj), 5)
        return format_html_join("", "<div>{}</div>", ((t.isoformat(),) for t in times))

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        if not change:
            obj.owner = request.user  # type: ignore[assignment]
        handed = self.handed_over(request, obj, form, change)
        changed = not change or any(f in form.changed_data for f in TIMING)
        words = change and not handed and bool(set(form.changed_data) & set(OWNER_FIELDS))
        schedules.schedule_saved_in_studio(
            obj, spec_changed=changed, editor=request.user, words_changed=words
        )
        super().save_model(request, obj, form, change)
        if obj.paused_reason and words:
            self.message_user(request, obj.paused_reason, messages.WARNING)

    @admin.action(description="Pause", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            schedules.schedule_pause(row, True, actor=request.user)

    @admin.action(description="Resume", permissions=["change"])
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for row in queryset:
            try:
                schedules.schedule_pause(row, False, actor=request.user)
            except DomainError as exc:
                self.message_user(request, f"{row}: {exc.message}", messages.ERROR)

    @admin.action(description="Run now", permissions=["change"])
    def run_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        me = owner_id()
        for row in queryset[:20]:
            try:
                manual = schedules.manual_run(row, me)
            except DomainError as exc:
                self.message_user(request, f"{row}: {exc.message}", messages.ERROR)
                continue
            run = run_start(manual, me)
            level = messages.SUCCESS if run.status == "started" else messages.ERROR
            self.message_user(request, f"{row}: {run.status} {run.error}".strip(), level)
