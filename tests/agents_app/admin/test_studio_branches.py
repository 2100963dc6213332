"""Issue #41 in the studio: the thread inspector draws the conversation tree (versions,
the active path) and lets staff make another version active; a viewer sees the tree but no
button and is refused the switch; a running session refuses it in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents_app.models import Message, Thread, ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.test_api_branches import _run, _say, agent  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def _regenerated(as_: Any, alice: Any, thread_of: Any) -> Thread:
    """first question, reply 1 / reply 2 (regenerated, active)."""
    thread = thread_of(alice)
    client = as_(alice)
    _say(client, thread, "first question")
    reply = Message.objects.get(thread=thread, content="reply 1")
    assert (
        client.post(f"/api/threads/{thread.pk}/messages/{reply.pk}/regenerate").status_code == 202
    )
    _run(thread)
    return thread


def _nodes(html: str) -> list[tuple[str, str]]:
    """(text, class) of each tree node, in order."""
    found = re.findall(r'<li class="(studio-tree-node[^"]*)"[^>]*>(.*?)</li>', html, re.S)
    return [
        (re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)).strip(), cls) for cls, body in found
    ]


def _page(client: Client, thread: Thread) -> str:
    response = client.get(reverse("admin:agents_app_thread_change", args=[thread.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_inspector_draws_the_tree_and_switches_versions(
    client: Client, ops: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = _regenerated(as_, alice, thread_of)
    client.force_login(ops)
    html = _page(client, thread)
    nodes = _nodes(html)
    assert [text.split(" Show this version")[0] for text, _ in nodes] == [
        "user first question active",
        "version 1 of 2 assistant reply 1",
        "version 2 of 2 assistant reply 2 active · latest",
    ]
    assert ["studio-tree-active" in cls for _, cls in nodes] == [True, False, True]
    assert "other version" in html  # the abandoned reply is marked in the message list
    assert html.count(">Show this version</button>") == 1

    old = Message.objects.get(thread=thread, content="reply 1")
    url = reverse("admin:agents_app_thread_version_activate", args=[thread.pk, old.pk])
    response = client.post(url, follow=True)
    assert "Switched versions" in response.content.decode()
    nodes = _nodes(_page(client, thread))
    assert ["studio-tree-active" in cls for _, cls in nodes] == [True, True, False]
    # What the chat and the model read now: the first reply.
    page = as_(alice).get(f"/api/threads/{thread.pk}/messages").json()["messages"]
    assert [m["content"] for m in page] == ["first question", "reply 1"]


def test_a_viewer_gets_no_button_and_a_running_session_refuses_the_switch(
    client: Client, ops: Any, make_user: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = _regenerated(as_, alice, thread_of)
    old = Message.objects.get(thread=thread, content="reply 1")
    url = reverse("admin:agents_app_thread_version_activate", args=[thread.pk, old.pk])

    viewer = make_user("viewer")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(Permission.objects.get(codename="view_thread"))
    client.force_login(viewer)
    html = _page(client, thread)
    assert "version 1 of 2" in html and ">Show this version<" not in html
    refused = client.post(url, follow=True).content.decode()
    assert "not act on them" in refused
    assert Message.objects.get(pk=old.pk).abandoned

    # A session queued on the thread: the switch waits for it.
    ThreadSession.objects.create(thread=thread, status="queued", side="a")
    client.force_login(ops)
    said = client.post(url, follow=True).content.decode()
    assert "Not done: A session is running on this thread" in said
    assert Message.objects.get(pk=old.pk).abandoned


def test_the_inspector_reads_the_thread_row_twice_not_three_times(
    client: Client, ops: Any, as_: Any, alice: Any, thread_of: Any
) -> None:
    """The tree, the inspection panels and Django's form share one fetch of the thread (each
    mixin fetched its own before, three reads of the same row per page)."""
    thread = _regenerated(as_, alice, thread_of)
    client.force_login(ops)
    with CaptureQueriesContext(connection) as queries:
        _page(client, thread)
    by_id = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith('SELECT "agents_app_thread"."id"')
        and f'WHERE "agents_app_thread"."id" = \'{thread.pk.hex}\'' in q["sql"]
    ]
    # One read for the change page's context (ChangeContextMixin), one for Django's form.
    assert len(by_id) == 2, by_id
