"""The chat's "What the agents remember about you" page (docs/knowledge.md, "Memory"): the
signed-in person's memories, each with a button that deletes it, and one that deletes all.
A plain form page (no script): every memory is text an agent wrote, shown escaped."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from agents_app.services.knowledge.memory import (
    memories_forget_all,
    memories_of,
    memory_forget,
)
from agents_app.web.views import LOGIN_URL


@login_required(login_url=LOGIN_URL)
@require_http_methods(["GET", "POST"])
def memory_page(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _forget(request)
    memories = memories_of(user_id=request.user.pk)
    return render(request, "chat/memory.html", {"memories": memories})


def _forget(request: HttpRequest) -> HttpResponse:
    if request.POST.get("all") == "1":
        n = memories_forget_all(user_id=request.user.pk)
        messages.success(request, f"Forgot everything ({n} memories).")
    elif memory_forget(user_id=request.user.pk, memory_id=request.POST.get("id", "")):
        messages.success(request, "Forgotten.")
    else:
        messages.error(request, "That memory was already gone.")
    return redirect("chat-memory")
