"""Versions in the studio: the "Change note" on save, a definition's history, a side-by-side
diff of two versions and "Restore this version".

``VersionedAdmin`` is mixed into the agent, prompt and model admins. Their forms build and
validate the definition (``forms.definition_check.DefinitionForm.clean``); the save is
``services.definitions.saves.studio_save``, the same ``save_definitions`` every writer goes
through, which also records the version. Django's admin writes nothing itself here: what a form
holds beside the definition (env values, a model's key permissions) is written inside that
save's transaction, before the version is recorded. The pages are thin: data from
``services.definitions.versions`` and ``pages.definition_diff``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from agents_app.admin.change_context import ChangeContextMixin
from agents_app.base.errors import Invalid, NotFound
from agents_app.forms.definition_check import DefinitionRowsFormSet
from agents_app.pages.definition_diff import changed_count, side_by_side
from agents_app.services.definitions import saves as definition_saves
from agents_app.services.definitions import versions

NOTE_FIELDSET = (
    "Save",
    {
        "description": "Each save is kept as a version you can compare and restore "
        "(Versions, at the top right).",
        "fields": ("change_note",),
    },
)


class VersionedAdmin(ChangeContextMixin):
    """For the admins of versioned definitions; ``version_kind`` is agents, prompts or models."""

    version_kind: str = ""
    model: Any
    admin_site: Any
    opts: Any

    # --- saving -------------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))  # type: ignore[misc]
        if self.has_change_permission(request, obj) if obj else True:  # type: ignore[attr-defined]
            fieldsets.append(NOTE_FIELDSET)
        return fieldsets

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        """Nothing is written yet: ``save_related`` saves it all at once, with the rows."""

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        obj = form.instance
        # The definition's own rows (parts, tool entries, fallbacks) are in the definition;
        # the other inlines (env values) are the studio's to write.
        extras = [fs for fs in formsets if not isinstance(fs, DefinitionRowsFormSet)]
        for formset in formsets:
            if isinstance(formset, DefinitionRowsFormSet):
                # Writes nothing; fills in what changed, for the admin's history message.
                formset.save(commit=False)

        def write_extras() -> None:
            row = self.model.objects.get(name=form.definition.name)
            obj.pk, obj._state.adding, obj._state.db = row.pk, False, row._state.db
            self.save_row_only(request, form, row)
            for formset in extras:
                self.save_formset(request, form, formset, change)  # type: ignore[attr-defined]

        definition_saves.studio_save(
            self.version_kind,
            form.definition,
            renamed_from=form.original_name,
            author=request.user,
            note=form.cleaned_data.get("change_note") or "",
            after_write=write_extras,
        )

    def save_row_only(self, request: HttpRequest, form: Any, row: Any) -> None:
        """Columns a form sets that are not part of the definition (``LanguageModelAdmin``:
        who may send the instance's key where)."""

    def change_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        return {
            **super().change_context(request, obj),  # type: ignore[misc]
            "versions_url": reverse(self._url_name("versions"), args=[obj.pk]),
        }

    # --- pages --------------------------------------------------------------------------------

    def _url_name(self, what: str) -> str:
        return f"admin:{self.opts.app_label}_{self.opts.model_name}_{what}"

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("<path:object_id>/versions/", view(self.versions_view), name=f"{name}_versions"),
            path(
                "<path:object_id>/versions/<int:number>/",
                view(self.version_diff_view),
                name=f"{name}_version",
            ),
            path(
                "<path:object_id>/versions/<int:number>/restore/",
                view(require_POST(self.version_restore_view)),
                name=f"{name}_version_restore",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def _object(self, request: HttpRequest, object_id: str) -> Any:
        obj = get_object_or_404(self.model, pk=object_id)
        if not self.has_view_permission(request, obj):  # type: ignore[attr-defined]
            raise PermissionDenied
        return obj

    def _context(self, request: HttpRequest, obj: Any, title: str) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": None,
            "opts": self.opts,
            "original": obj,
            "kind_label": self.opts.verbose_name,
            "change_url": reverse(self._url_name("change"), args=[obj.pk]),
            "changelist_url": reverse(self._url_name("changelist")),
            "versions_url": reverse(self._url_name("versions"), args=[obj.pk]),
            "can_restore": self.has_change_permission(request, obj),  # type: ignore[attr-defined]
        }

    def versions_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._object(request, object_id)
        rows = versions.history(self.version_kind, obj.name)
        context = {
            **self._context(request, obj, f"Versions of {obj.name}"),
            "versions": rows,
            "latest_number": rows[0].number if rows else None,
            "matches_latest": bool(rows)
            and versions.current_dump(self.version_kind, obj.name) == rows[0].definition,
            "version_url": reverse(self._url_name("version"), args=[obj.pk, 0])[:-2],
        }
        return TemplateResponse(request, "admin/agents_app/versions/history.html", context)

    def version_diff_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        obj = self._object(request, object_id)
        kind = self.version_kind
        against = request.GET.get("against", "previous")
        try:
            return self._diff_page(request, obj, kind, number, against)
        except NotFound as exc:
            raise Http404(exc.message) from None

    def _diff_page(
        self, request: HttpRequest, obj: Any, kind: str, number: int, against: str
    ) -> HttpResponse:
        shown = versions.version(kind, obj.name, number)
        if against == "current":
            old, new = shown.definition, versions.current_dump(kind, obj.name)
            left, right = f"Version {number}", "Saved now"
        else:
            other = number - 1 if against == "previous" else _int(against)
            previous = versions.version(kind, obj.name, other) if other and other >= 1 else None
            if previous is not None and previous.number > number:
                old, new = shown.definition, previous.definition
                left, right = f"Version {number}", f"Version {previous.number}"
            else:
                old = previous.definition if previous else None
                new = shown.definition
                left = f"Version {previous.number}" if previous else "(nothing before)"
                right = f"Version {number}"
        rows = side_by_side(versions.readable(kind, old), versions.readable(kind, new))
        context = {
            **self._context(request, obj, f"{obj.name}: version {number}"),
            "version": shown,
            "rows": rows,
            "changes": changed_count(rows),
            "left_title": left,
            "only_right": old is None,
            "right_title": right,
            "against": against,
            "choices": [v.number for v in versions.history(kind, obj.name) if v.number != number],
            "restore_url": reverse(self._url_name("version_restore"), args=[obj.pk, number]),
            "is_current": versions.current_dump(kind, obj.name) == shown.definition,
        }
        return TemplateResponse(request, "admin/agents_app/versions/diff.html", context)

    def version_restore_view(
        self, request: HttpRequest, object_id: str, number: int
    ) -> HttpResponse:
        obj = self._object(request, object_id)
        if not self.has_change_permission(request, obj):  # type: ignore[attr-defined]
            raise PermissionDenied
        try:
            restored = definition_saves.restore(
                self.version_kind, obj.name, number, author=request.user
            )
        except (Invalid, NotFound) as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, f"Version {number} restored: it is now version {restored.number}."
            )
        return HttpResponseRedirect(reverse(self._url_name("versions"), args=[obj.pk]))


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None
