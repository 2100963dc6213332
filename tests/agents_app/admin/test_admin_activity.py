"""Rows the engine writes (threads, messages, logs, keys…): viewable, searchable, never edited."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents_app.models import (
    Agent,
    ApiKey,
    EnvValue,
    LanguageModel,
    Log,
    Message,
    Prompt,
    ScheduledEffect,
    Thread,
    ThreadSession,
    WebSocketTicket,
)
from agents_app.pages.thread_inspector import MAX_MESSAGES
from agents_app.services.access.api_keys import api_key_create
from tests.agents_app.api.api_support import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


@pytest.fixture
def thread(alice: Any) -> Thread:
    model = LanguageModel.objects.create(name="m", provider="test", model="x")
    agent = Agent.objects.create(
        name="support", side_a_prompt=Prompt.objects.create(name="p", model=model)
    )
    return Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)


def test_the_index_groups_models_by_what_people_do(staff: Client) -> None:
    page = staff.get(reverse("admin:index")).content.decode()

    positions = [page.index(title) for title in ("Configure", "Activity", "People and access")]
    assert positions == sorted(positions)
    assert page.index(">Agents<") < page.index(">Prompts<") < page.index(">Models<")
    assert "Standard Agents Studio" in page
    assert "studio/studio.css" in page


def test_the_thread_page_shows_its_latest_messages(staff: Client, thread: Thread) -> None:
    total = MAX_MESSAGES + 5
    Message.objects.bulk_create(
        Message(thread=thread, role="user", content=f"message number {i:03d}", created_at=1000 + i)
        for i in range(total)
    )
    Message.objects.create(
        thread=thread,
        role="assistant",
        tool_calls=[{"id": "1", "type": "function", "function": {"name": "lookup_order"}}],
    )

    page = staff.get(reverse("admin:agents_app_thread_change", args=[thread.pk])).content.decode()

    assert f"message number {total - 1:03d}" in page
    assert "message number 004" not in page  # only the newest MAX_MESSAGES are shown
    assert "Calls <code>lookup_order</code>" in page
    assert f"All {total + 1} messages" in page


def test_messages_can_be_filtered_by_thread_and_searched(staff: Client, thread: Thread) -> None:
    Message.objects.create(thread=thread, role="user", content="Where is order A-1001?")
    url = reverse("admin:agents_app_message_changelist")

    by_thread = staff.get(url, {"thread__id__exact": str(thread.pk)})
    by_text = staff.get(url, {"q": "A-1001"})

    assert by_thread.status_code == 200 and "Where is order A-1001?" in by_thread.content.decode()
    assert "Where is order A-1001?" in by_text.content.decode()


def test_engine_rows_cannot_be_added_edited_or_deleted_by_hand(
    staff: Client, thread: Thread
) -> None:
    message = Message.objects.create(thread=thread, role="user", content="hi")
    log = Log.objects.create(thread=thread)
    effect = ScheduledEffect.objects.create(thread=thread, name="remind", due_at=timezone.now())

    assert staff.get(reverse("admin:agents_app_message_add")).status_code == 403
    for name, obj in (("message", message), ("log", log), ("scheduledeffect", effect)):
        url = reverse(f"admin:agents_app_{name}_change", args=[obj.pk])
        assert staff.get(url).status_code == 200  # view
        assert staff.post(url, {}).status_code == 403
        delete = reverse(f"admin:agents_app_{name}_delete", args=[obj.pk])
        assert staff.post(delete, {"post": "yes"}).status_code == 403
    assert Message.objects.filter(pk=message.pk, content="hi").exists()


def test_an_operator_may_delete_a_whole_thread(staff: Client, thread: Thread) -> None:
    Message.objects.create(thread=thread, role="user", content="hi")
    url = reverse("admin:agents_app_thread_delete", args=[thread.pk])

    assert staff.post(url, {"post": "yes"}).status_code == 302
    assert not Thread.objects.exists() and not Message.objects.exists()


def test_list_pages_render_with_their_filters(staff: Client, thread: Thread) -> None:
    Log.objects.create(thread=thread, kind="llm", model="m", error="boom")
    for name, params in (
        ("thread", {"stopped__exact": "0"}),
        ("log", {"kind__exact": "llm"}),
        ("threadsession", {"status__exact": "running"}),
        ("scheduledeffect", {"status__exact": "pending"}),
        ("envvalue", {"scope__exact": "instance"}),
    ):
        response = staff.get(reverse(f"admin:agents_app_{name}_changelist"), params)
        assert response.status_code == 200, name


def test_api_keys_never_show_their_hash_and_can_be_revoked(staff: Client, alice: Any) -> None:
    key, raw = api_key_create(user=alice, name="CI")
    list_url = reverse("admin:agents_app_apikey_changelist")
    change_url = reverse("admin:agents_app_apikey_change", args=[key.pk])

    for url in (list_url, change_url):
        body = staff.get(url).content.decode()
        assert key.key_hash not in body and raw not in body
        assert f"agtbldr_…{raw[-5:]}" in body
    # The studio adds keys since issue #40 (the new key shown once); the form shows no other.
    add = staff.get(reverse("admin:agents_app_apikey_add"))
    assert add.status_code == 200
    assert key.key_hash not in add.content.decode() and raw not in add.content.decode()

    staff.post(list_url, {"action": "revoke", "_selected_action": [key.pk]})

    assert ApiKey.objects.get().revoked_at is not None


def test_websocket_tickets_never_show_their_hash(staff: Client, alice: Any) -> None:
    ticket = WebSocketTicket.objects.create(
        ticket_hash="ab" * 32,
        pathname="/api/threads/x/stream",
        user=alice,
        expires_at=timezone.now(),
    )
    url = reverse("admin:agents_app_websocketticket_change", args=[ticket.pk])

    body = staff.get(url).content.decode()

    assert "/api/threads/x/stream" in body and ticket.ticket_hash not in body


def test_a_log_page_masks_stored_secrets_in_what_was_sent(staff: Client, thread: Thread) -> None:
    secret = EnvValue(scope="instance", key="TOKEN", value_type="secret")
    secret.value = 'sk-"quoted"-1234'
    secret.save()
    log = Log.objects.create(
        thread=thread,
        system_prompt='Use token sk-"quoted"-1234 politely.',
        request_body={"messages": [{"role": "system", "content": 'token sk-"quoted"-1234'}]},
    )

    body = staff.get(reverse("admin:agents_app_log_change", args=[log.pk])).content.decode()

    assert "quoted" not in body
    assert "Use token [secret] politely." in body
    assert "token [secret]" in body


def test_the_thread_page_offers_stop_only_while_a_session_runs(
    staff: Client, thread: Thread
) -> None:
    url = reverse("admin:agents_app_thread_change", args=[thread.pk])
    stop = reverse("admin:agents_app_thread_stop", args=[thread.pk])
    Message.objects.create(thread=thread, role="user", content="hello", side="b")

    idle = staff.get(url).content.decode()
    assert "Idle" in idle and stop not in idle
    assert "side B" not in idle  # side labels only mean something on AI ↔ AI threads

    ThreadSession.objects.create(thread=thread, status=ThreadSession.Status.RUNNING)
    running = staff.get(url).content.decode()
    assert "Running" in running and stop in running


def test_a_log_page_shows_provider_tools_and_sources_as_safe_links(
    staff: Client, thread: Thread
) -> None:
    search = {
        "id": "srvtoolu_1",
        "name": "web_search",
        "provider": "anthropic",
        "status": "completed",
        "result": {"actions": [{"type": "search", "query": "weather <today>"}]},
    }
    citations = [
        {"url": "https://example.org/w", "title": "Weather", "start": 0, "end": 5},
        {"url": "javascript:alert(1)", "title": "Hostile", "start": 6, "end": 9},
    ]
    log = Log.objects.create(
        thread=thread,
        kind="llm",
        response_body={"content": "Sunny rain", "provider_tools": [search], "citations": citations},
    )

    body = staff.get(reverse("admin:agents_app_log_change", args=[log.pk])).content.decode()

    assert "<code>web_search</code> (anthropic, completed) searched: weather &lt;today&gt;" in body
    assert (
        '<a href="https://example.org/w" target="_blank" rel="noopener noreferrer nofollow">'
        "Weather</a> [0–5]" in body
    )
    assert 'href="javascript:' not in body
    assert "Hostile (not a web link: javascript:alert(1))" in body


def test_the_logs_filters_speak_in_words(staff: Client, thread: Thread) -> None:
    """Issue #40 item 9: no "By is complete", no ``step_error`` or ``tool_calls`` in the
    filters; each choice in words, the code only in the URL, and each one filters."""
    Log.objects.create(
        thread=thread, kind="llm", model="m", is_complete=True, error_type="step_error"
    )
    Log.objects.create(
        thread=thread, kind="llm", model="m", is_complete=True, finish_reason="tool_calls"
    )
    Log.objects.create(thread=thread, kind="llm", model="m", is_complete=False)
    url = reverse("admin:agents_app_log_changelist")
    page = staff.get(url).content.decode()
    for words in ("By outcome", "Finished", "By error", "A step failed", "Called tools"):
        assert words in page
    for code in (
        "By is complete",
        "By error type",
        "By finish reason",
        ">step_error<",
        ">tool_calls<",
    ):
        assert code not in page
    counts = {
        query: staff.get(url + query).context["cl"].result_count
        for query in ("?finished=no", "?error=step_error", "?ended=tool_calls")
    }
    assert counts == {"?finished=no": 1, "?error=step_error": 1, "?ended=tool_calls": 1}


def test_a_stopped_request_is_shown_neutrally_and_is_not_an_error(
    staff: Client, thread: Thread
) -> None:
    """A person's Stop is no failure: the list shows "■ Stopped" without the failure style,
    "By error" does not offer it, and "By outcome" finds it."""
    Log.objects.create(thread=thread, kind="llm", model="m", is_complete=True, error_type="stopped")
    Log.objects.create(
        thread=thread, kind="llm", model="m", is_complete=True, error_type="step_error"
    )
    url = reverse("admin:agents_app_log_changelist")
    page = staff.get(url).content.decode()
    assert '<span class="studio-stopped" title="stopped">■ Stopped</span>' in page
    assert "✗ Stopped" not in page and "?error=stopped" not in page
    assert "?error=step_error" in page  # a real failure is still listed
    assert "Stopped by a person" in page
    assert staff.get(url + "?finished=stopped").context["cl"].result_count == 1


def test_a_request_a_stop_cut_short_before_any_text_reads_stopped_not_failed(
    staff: Client, thread: Thread, alice: Any
) -> None:
    """The Logs page, one log's page and the Logs API agree: a person's stop before any text
    (stored "interrupted") is a stop; a worker's death is still a failure."""
    turn, died = uuid.uuid4(), uuid.uuid4()
    for root, why in ((turn, "aborted_by_user"), (died, "completed")):
        ThreadSession.objects.create(
            thread=thread,
            status=ThreadSession.Status.STOPPED,
            root_message_id=root,
            stop_reason=why,
        )
    stopped, failed = (
        Log.objects.create(
            thread=thread,
            kind="llm",
            model=name,
            is_complete=True,
            error_type="interrupted",
            message_id=root,
        )
        for name, root in (("stopped-model", turn), ("failed-model", died))
    )
    url = reverse("admin:agents_app_log_changelist")
    page = staff.get(url).content.decode()
    assert page.count("■ Stopped<") == 1 and page.count("✗ Interrupted") == 1
    only_stops = staff.get(url + "?finished=stopped").context["cl"].result_list
    assert [row.pk for row in only_stops] == [stopped.pk]
    one = staff.get(reverse("admin:agents_app_log_change", args=[stopped.pk])).content.decode()
    assert "Stopped by a person before any text" in one and "No: it failed" not in one
    other = staff.get(reverse("admin:agents_app_log_change", args=[failed.pk])).content.decode()
    assert "No: it failed" in other
    listed = client_for(alice).get(f"/api/threads/{thread.pk}/logs").json()["logs"]
    assert {x["model"]: x["stopped_by_user"] for x in listed} == {
        "stopped-model": True,
        "failed-model": False,
    }


def test_by_error_lists_interrupted_only_when_no_person_stopped_it(
    staff: Client, thread: Thread
) -> None:
    """A request a Stop cut short before any text stays "interrupted" in the data, yet it is a
    person's stop: "By error" leaves it out; one a worker's death cut short is still listed."""
    turn = uuid.uuid4()
    ThreadSession.objects.create(
        thread=thread,
        status=ThreadSession.Status.STOPPED,
        root_message_id=turn,
        stop_reason="aborted_by_user",
    )
    Log.objects.create(
        thread=thread,
        kind="llm",
        model="m",
        is_complete=True,
        error_type="interrupted",
        message_id=turn,
    )
    url = reverse("admin:agents_app_log_changelist")
    assert "?error=interrupted" not in staff.get(url).content.decode()

    died = uuid.uuid4()
    ThreadSession.objects.create(
        thread=thread,
        status=ThreadSession.Status.COMPLETED,
        root_message_id=died,
        stop_reason="completed",
    )
    Log.objects.create(
        thread=thread,
        kind="llm",
        model="m",
        is_complete=True,
        error_type="interrupted",
        message_id=died,
    )
    assert "?error=interrupted" in staff.get(url).content.decode()
    # Choosing it finds the worker's death only.
    assert staff.get(url + "?error=interrupted").context["cl"].result_count == 1


def test_a_read_only_record_shows_its_json_as_a_code_block(staff: Client, thread: Thread) -> None:
    # The page walk found a message's metadata shown as running text (issue #55).
    message = Message.objects.create(
        thread=thread, role="user", content="Hi", metadata={"forked_from": "3f537c64"}
    )
    url = reverse("admin:agents_app_message_change", args=[message.pk])
    page = staff.get(url).content.decode()
    block = page.index('<pre class="studio-log">')
    assert page.index("forked_from", block) < page.index("</pre>", block)
    assert page.count("forked_from") == 1
    assert page.count(">Metadata:<") == 1
