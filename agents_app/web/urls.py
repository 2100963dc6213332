"""Routes of the chat page, included at the site root by ``studio/urls.py``."""

from __future__ import annotations

from django.urls import path, re_path

from agents_app.web import knowledge_views, memory_views, views

urlpatterns = [
    path("login/", views.ChatLoginView.as_view(), name="chat-login"),
    path("logout/", views.ChatLogoutView.as_view(), name="chat-logout"),
    path("chat/", views.chat, name="chat"),
    path("chat/memory/", memory_views.memory_page, name="chat-memory"),
    path("chat/passages/<int:passage_id>/", knowledge_views.passage_page, name="chat-passage"),
    # Any id shape reaches the page, which shows the API's "Thread not found" in words.
    re_path(r"^chat/t/(?P<thread_id>[A-Za-z0-9_-]{1,64})/?$", views.chat, name="chat-thread"),
]
