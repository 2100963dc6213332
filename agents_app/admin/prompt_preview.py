"""The prompt editor's preview endpoint: the change form's fields in, the rendered text out.

The page posts the whole (unsaved) form; only the name, the System prompt text and the
Parts rows are read. Rendering is ``pages.prompt_preview``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse, QueryDict
from django.views.decorators.http import require_POST

from agents_app.models import Prompt
from agents_app.pages.prompt_preview import DraftPart, prompt_preview

PARTS_PREFIX = "parts"  # the Parts inline's formset prefix (PromptPart.prompt's related_name)
MAX_PARTS = 200


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def draft_parts(post: QueryDict) -> list[DraftPart]:
    """The Parts rows in the order saving would give them (by Order, then as listed)."""
    total = min(_int(post.get(f"{PARTS_PREFIX}-TOTAL_FORMS")) or 0, MAX_PARTS)
    rows: list[tuple[tuple[bool, int, int], DraftPart]] = []
    include_ids = {
        pk
        for i in range(total)
        if (pk := _int(post.get(f"{PARTS_PREFIX}-{i}-include"))) is not None
    }
    names = dict(Prompt.objects.filter(pk__in=include_ids).values_list("pk", "name"))
    for i in range(total):
        field = f"{PARTS_PREFIX}-{i}-"
        kind = post.get(field + "type") or ""
        if post.get(field + "DELETE") or kind not in ("text", "include", "env"):
            continue
        if kind == "include":
            value = names.get(_int(post.get(field + "include")) or 0, "")
        elif kind == "env":
            value = (post.get(field + "env_key") or "").strip()
        else:
            value = post.get(field + "content") or ""
        if not value:
            continue  # an empty new row: the form would not save it either
        order = _int(post.get(field + "order"))
        rows.append(((order is None, order or 0, i), DraftPart(kind, value)))  # type: ignore[arg-type]
    return [part for _, part in sorted(rows, key=lambda r: r[0])]


@require_POST
def preview_view(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    text = prompt_preview(
        name=(request.POST.get("name") or "").strip(),
        text=request.POST.get("text") or "",
        parts=draft_parts(request.POST),
        user=request.user,
    )
    return JsonResponse({"text": text})
