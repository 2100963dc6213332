"""Trying a prompt edit before saving it: the prompt's "Try a draft" page.

Opened from an agent's "Try this agent" panel (``?agent=<name>``): the prompt's text in a
box; "Try this draft" stores the draft (``services.definitions.drafts``), creates a thread
of that agent tagged ``draft`` whose sessions use the draft, and frames its chat; "Save
this draft" saves it, with a note, as the prompt's next version.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from agents_app.base.errors import DomainError
from agents_app.models import Agent, Prompt
from agents_app.orchestration.thread_creation import thread_create
from agents_app.pages.definition_diff import changed_count, side_by_side
from agents_app.services.definitions import drafts, versions


class PromptDraftAdmin:
    """Mixed into ``PromptAdmin``."""

    admin_site: Any

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/draft/", view(self.draft_view), name="agents_app_prompt_draft"),
            path(
                "<path:object_id>/draft/<uuid:draft_id>/save/",
                view(require_POST(self.draft_save_view)),
                name="agents_app_prompt_draft_save",
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def _prompt(self, request: HttpRequest, object_id: str) -> Prompt:
        prompt = get_object_or_404(Prompt, pk=object_id)
        if not self.has_change_permission(request, prompt):  # type: ignore[attr-defined]
            raise PermissionDenied
        return prompt

    def draft_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        prompt = self._prompt(request, object_id)
        agents = list(
            Agent.objects.filter(Q(side_a_prompt=prompt) | Q(side_b_prompt=prompt)).order_by("name")
        )
        agent_name = request.GET.get("agent") or request.POST.get("agent") or ""
        agent = next((a for a in agents if a.name == agent_name), agents[0] if agents else None)
        draft = None
        if request.GET.get("draft"):
            try:
                draft = drafts.draft_get(request.GET["draft"], prompt.name)
            except DomainError as exc:
                raise Http404(exc.message) from None
        if request.method == "POST":
            return self._try_draft(request, prompt, agent)
        newest = versions.newest("prompts", prompt.name)
        saved = newest[1] if newest else {}
        texts = drafts.editable_texts(draft.definition if draft else saved)
        rows = (
            side_by_side(
                versions.readable("prompts", saved), versions.readable("prompts", draft.definition)
            )
            if draft
            else []
        )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Try a change to {prompt.name}",
            "subtitle": None,
            "opts": Prompt._meta,
            "original": prompt,
            "agents": agents,
            "agent": agent,
            "texts": texts,
            "draft": draft,
            "rows": rows,
            "changes": changed_count(rows),
            "left_title": f"Saved (version {newest[0]})" if newest else "Saved",
            "right_title": "Draft",
            "change_url": reverse("admin:agents_app_prompt_change", args=[prompt.pk]),
            "versions_url": reverse("admin:agents_app_prompt_versions", args=[prompt.pk]),
        }
        return TemplateResponse(request, "admin/agents_app/prompt/draft.html", context)

    def _try_draft(self, request: HttpRequest, prompt: Prompt, agent: Agent | None) -> HttpResponse:
        url = reverse("admin:agents_app_prompt_draft", args=[prompt.pk])
        if agent is None:
            messages.error(request, "No agent runs this prompt on a side: nothing to try it with.")
            return HttpResponseRedirect(url)
        texts = request.POST.getlist("text")
        try:
            draft = drafts.draft_create(prompt.name, texts, author=request.user)
            thread = thread_create(
                user=request.user, agent_name=agent.name, tags=[drafts.DRAFT_TAG]
            )
            drafts.draft_attach(draft, thread)
        except DomainError as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(f"{url}?{urlencode({'agent': agent.name})}")
        query = urlencode({"agent": agent.name, "draft": str(draft.pk)})
        return HttpResponseRedirect(f"{url}?{query}")

    def draft_save_view(self, request: HttpRequest, object_id: str, draft_id: Any) -> HttpResponse:
        prompt = self._prompt(request, object_id)
        try:
            draft = drafts.draft_get(str(draft_id), prompt.name)
            saved = drafts.draft_save(
                draft, note=request.POST.get("change_note", "")[:500], author=request.user
            )
        except DomainError as exc:
            messages.error(request, exc.message)
            back = reverse("admin:agents_app_prompt_draft", args=[prompt.pk])
            return HttpResponseRedirect(f"{back}?{urlencode({'draft': str(draft_id)})}")
        messages.success(request, f"The draft is saved as version {saved.number}.")
        return HttpResponseRedirect(
            reverse("admin:agents_app_prompt_version", args=[prompt.pk, saved.number])
        )
