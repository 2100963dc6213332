"""Feedback on replies (issue #42): rate, change, withdraw over HTTP; one rating per person
and reply; stored with the agent version that produced the reply; other users refused; the
CSV export never carries a secret."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents_app.models import (
    Agent,
    DefinitionVersion,
    EnvValue,
    Feedback,
    Message,
    Thread,
    ThreadSession,
)
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.threads import feedback as feedback_service
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition
from tests.agents_app.api.api_support import _api_hosts, client_for, define_agent  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True)]

CANARY = "sk-canary-feedback-7f3a9c"


@sync_to_async
def _alice_and_thread(reply: str) -> tuple[Any, Thread]:
    define_agent("helper", [{"content": reply}])
    # The reasons come with the agent's definition, as a file or the studio would save them.
    agent = AgentDefinition.model_validate(
        {
            "name": "helper",
            "type": "ai_human",
            "sideA": {"prompt": "helper-prompt"},
            "feedbackReasons": ["Wrong answer", "Too long"],
        }
    )
    save_definitions([("agent", agent)], strict_code_names=False)
    assert Agent.objects.get(name="helper").feedback_reasons == ["Wrong answer", "Too long"]
    alice = get_user_model().objects.create_user(username="alice", password="pw-for-tests-1")
    return alice, thread_create(user=alice, agent_name="helper")


async def _reply_id(thread: Thread) -> str:
    posted = await sync_to_async(message_service.message_post)(
        thread=thread, role="user", content="Hello"
    )
    assert posted.message_id
    session = await sync_to_async(
        lambda: ThreadSession.objects.filter(thread=thread).values_list("pk", flat=True).first()
    )()
    await run_session_job(str(session))
    reply = await sync_to_async(lambda: Message.objects.get(thread=thread, role="assistant"))()
    return str(reply.pk)


def _page_feedback(client: Any, thread: Thread) -> list[Any]:
    page = client.get(f"/api/threads/{thread.pk}/messages").json()["messages"]
    return [m.get("feedback") for m in page if m["role"] == "assistant"]


@pytest.mark.usefixtures("close_thread_connections")
async def test_rate_change_and_withdraw_a_reply_over_http() -> None:
    alice, thread = await _alice_and_thread("Your order has shipped.")
    reply = await _reply_id(thread)

    @sync_to_async
    def over_http() -> None:
        client = client_for(alice)
        url = f"/api/threads/{thread.pk}/messages/{reply}/feedback"
        assert _page_feedback(client, thread) == [None]
        first = client.post(url, {"score": 1}, content_type="application/json")
        assert first.status_code == 200, first.content
        assert _page_feedback(client, thread) == [{"score": 1, "reason": None, "comment": None}]
        body = {"score": -1, "reason": "Too long", "comment": "Three paragraphs for a yes."}
        changed = client.post(url, body, content_type="application/json")
        assert changed.json()["feedback"] == body
        assert Feedback.objects.count() == 1  # a second call replaces the first
        assert _page_feedback(client, thread) == [body]
        withdrawn = client.delete(url)
        assert withdrawn.json() == {"withdrawn": True, "feedback": None}
        assert _page_feedback(client, thread) == [None] and not Feedback.objects.exists()

    await over_http()


@pytest.mark.usefixtures("close_thread_connections")
async def test_feedback_keeps_the_agent_version_that_produced_the_reply() -> None:
    alice, thread = await _alice_and_thread("First version's answer.")
    reply = await _reply_id(thread)

    @sync_to_async
    def rate_after_an_edit() -> Feedback:
        # The agent changes after the reply: the rating still names the version that answered.
        agent = AgentDefinition.model_validate(
            {
                "name": "helper",
                "title": "Helper v2",
                "type": "ai_human",
                "sideA": {"prompt": "helper-prompt"},
            }
        )
        save_definitions([("agent", agent)], strict_code_names=False)
        client_for(alice).post(
            f"/api/threads/{thread.pk}/messages/{reply}/feedback",
            {"score": -1},
            content_type="application/json",
        )
        return Feedback.objects.select_related("agent").get()

    row = await rate_after_an_edit()
    assert row.agent is not None and row.agent.name == "helper"
    answered = await sync_to_async(
        lambda: Message.objects.select_related("log").get(pk=reply).log.definition_versions
    )()
    latest = await sync_to_async(
        lambda: DefinitionVersion.objects.filter(kind="agents", name="helper").count()
    )()
    assert row.definition_versions["agents/helper"] == answered["agents/helper"] < latest
    summary = await sync_to_async(feedback_service.summary_by_version)()
    version = answered["agents/helper"]
    assert summary == [{"agent": "helper", "version": version, "up": 0, "down": 1, "share_up": 0.0}]


@pytest.mark.usefixtures("close_thread_connections")
async def test_feedback_refuses_other_users_user_messages_and_unknown_reasons() -> None:
    alice, thread = await _alice_and_thread("Hi.")
    reply = await _reply_id(thread)

    @sync_to_async
    def checks() -> None:
        bob = get_user_model().objects.create_user(username="bob", password="pw-for-tests-1")
        url = f"/api/threads/{thread.pk}/messages/{reply}/feedback"
        refused = client_for(bob).post(url, {"score": 1}, content_type="application/json")
        assert refused.status_code == 403
        assert client_for(bob).delete(url).status_code == 403
        mine = client_for(alice)
        user_message = Message.objects.get(thread=thread, role="user").pk
        not_a_reply = mine.post(
            f"/api/threads/{thread.pk}/messages/{user_message}/feedback",
            {"score": 1},
            content_type="application/json",
        )
        assert not_a_reply.status_code == 400
        assert not_a_reply.json() == {"error": "Only assistant replies can be rated"}
        odd = mine.post(url, {"score": 1, "reason": "Rude"}, content_type="application/json")
        assert odd.status_code == 400 and "'Wrong answer', 'Too long'" in odd.json()["error"]
        zero = mine.post(url, {"score": 0}, content_type="application/json")
        assert zero.status_code == 400
        assert not Feedback.objects.exists()

    await checks()


@pytest.mark.usefixtures("close_thread_connections")
async def test_feedback_export_redacts_a_planted_secret() -> None:
    alice, thread = await _alice_and_thread(f"The key is {CANARY}, keep it safe.")
    reply = await _reply_id(thread)

    @sync_to_async
    def export() -> str:
        EnvValue.objects.create(
            scope="instance", key="CANARY_KEY", value=CANARY, value_type="secret"
        )
        client_for(alice).post(
            f"/api/threads/{thread.pk}/messages/{reply}/feedback",
            {"score": -1, "comment": f"It printed {CANARY}"},
            content_type="application/json",
        )
        return feedback_service.as_csv(feedback_service.feedback_rows())

    text = await export()
    assert CANARY not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["reply"] == "The key is [REDACTED], keep it safe."
    assert rows[0]["comment"] == "It printed [REDACTED]"


def _rated_reply(alice: Any, text: str, score: int = -1) -> Feedback:
    define_agent("helper")
    thread = thread_create(user=alice, agent_name="helper")
    reply = Message.objects.create(thread=thread, role="assistant", content=text)
    rating = feedback_service.Rating(score, "", "too vague")
    return feedback_service.feedback_set(
        thread=thread, message_id=str(reply.pk), user=alice, rating=rating
    )


def test_the_studio_lists_filters_and_exports_feedback_for_holders_of_view_feedback() -> None:
    from django.contrib.auth.models import Permission
    from django.test import Client

    User = get_user_model()
    alice = User.objects.create_user(username="alice", password="pw-for-tests-1")
    row = _rated_reply(alice, '=HYPERLINK("http://evil.example")')
    clerk = User.objects.create_user(username="clerk", password="pw-for-tests-1", is_staff=True)
    browser = Client()
    browser.force_login(clerk)
    assert browser.get("/admin/agents_app/feedback/").status_code == 403
    assert browser.get("/admin/agents_app/feedback/export.csv").status_code == 403
    clerk.user_permissions.add(Permission.objects.get(codename="view_feedback"))
    page = browser.get("/admin/agents_app/feedback/?score__exact=-1")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Feedback by agent version" in html and f"#msg-{row.message_id}" in html
    assert "too vague" in html
    assert (
        "too vague"
        not in browser.get("/admin/agents_app/feedback/?score__exact=1").content.decode()
    )
    export = browser.get("/admin/agents_app/feedback/export.csv?score__exact=-1")
    assert export["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert [r["comment"] for r in rows] == ["too vague"]
    # A reply that looks like a formula is exported as text, not run by a spreadsheet.
    assert rows[0]["reply"].startswith("'=")
    dashboard = browser.get("/admin/").content.decode()
    assert 'id="feedback-by-version"' in dashboard
