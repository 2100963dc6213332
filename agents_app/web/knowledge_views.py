"""A cited knowledge passage, opened from a reply's sources in the chat
(docs/knowledge.md, "Citations"). Uploaded text is hostile: the template escapes it and the
page runs no script."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents_app.services.knowledge.retrieval import passage_for
from agents_app.web.views import LOGIN_URL


@login_required(login_url=LOGIN_URL)
@require_GET
def passage_page(request: HttpRequest, passage_id: int) -> HttpResponse:
    passage = passage_for(user=request.user, passage_id=passage_id)
    if passage is None:
        raise Http404("No such passage.")
    return render(request, "chat/passage.html", {"passage": passage})
