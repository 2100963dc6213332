"""Eval datasets as files in the studio (issue #55): "Download as a file" on a dataset's page
and "Upload a dataset file" on the list, the same JSON ``manage.py export_eval_dataset`` writes
and ``import_eval_dataset`` / ``run_eval --dataset-file`` read (``services.evals.files``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from agents_app.base.errors import DomainError
from agents_app.models import EvalDataset
from agents_app.services.evals import files as eval_files


class DatasetFileForm(forms.Form):
    file = forms.FileField(
        label="Dataset file",
        help_text="A .json file written by “Download as a file” or manage.py "
        "export_eval_dataset. A dataset of the same name is made to hold exactly the "
        "file's cases: cases are matched by name, new ones are added, and the ones the file "
        "does not have are deleted (with their results in earlier runs).",
    )


class DatasetFilesMixin:
    """For the ``EvalDataset`` admin: the download and upload views and their links."""

    def get_urls(self) -> list[URLPattern]:
        site = self.admin_site  # type: ignore[attr-defined]
        own = [
            path(
                "upload/",
                site.admin_view(self.upload_view),
                name="agents_app_evaldataset_upload",
            ),
            path(
                "<int:object_id>/file/",
                site.admin_view(self.download_view),
                name="agents_app_evaldataset_file",
            ),
        ]
        return own + super().get_urls()  # type: ignore[misc,no-any-return]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        extra = dict(extra_context or {})
        if str(object_id).isdigit():
            extra["dataset_file_url"] = reverse(
                "admin:agents_app_evaldataset_file", args=[int(object_id)]
            )
        return super().change_view(request, object_id, form_url, extra)  # type: ignore[misc,no-any-return]

    def download_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        if not self.has_view_permission(request):  # type: ignore[attr-defined]
            raise PermissionDenied
        dataset = get_object_or_404(EvalDataset, pk=object_id)
        response = HttpResponse(
            eval_files.dataset_text(dataset), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{eval_files.file_name(dataset)}"'
        return response

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        if not (
            self.has_add_permission(request)  # type: ignore[attr-defined]
            and self.has_change_permission(request)  # type: ignore[attr-defined]
        ):
            raise PermissionDenied
        form = DatasetFileForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                dataset, counts = eval_files.import_text(form.cleaned_data["file"].read())
            except DomainError as exc:
                form.add_error("file", exc.message)
            else:
                self.message_user(  # type: ignore[attr-defined]
                    request,
                    f"Dataset {dataset.name}: {eval_files.counts_text(counts)}.",
                    messages.SUCCESS,
                )
                url = reverse("admin:agents_app_evaldataset_change", args=[dataset.pk])
                return HttpResponseRedirect(url)
        context = {
            **self.admin_site.each_context(request),  # type: ignore[attr-defined]
            "opts": EvalDataset._meta,
            "title": "Upload a dataset file",
            "form": form,
        }
        return TemplateResponse(request, "admin/agents_app/evaldataset/upload.html", context)
