"""The OpenAI-compatible API (``/v1``, docs/api.md "OpenAI-compatible API"), called the way
its users call it: OpenAI's own Python client against a real server.

A uvicorn server in a thread of this process (``door_server``, shared by the doors' tests)
serves ``studio.asgi.application`` (the production composition: ``/v1`` in front of Django)
on the test's database; sessions run on its loop (the in-process executor), their frames on the in-memory channel layer. The
agents are scripted (the ``test`` provider); ``expectInput`` makes a scripted reply fail
unless the model was sent what the test says (an image, a tool's result, the history).
alice and bob are plain users; ops is staff.
"""

from __future__ import annotations

import base64
import io
import time
from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest
from django.contrib.auth.models import Group
from PIL import Image

from agents_app.models import (
    Agent,
    Message,
    SpendBudget,
    Thread,
    ThreadFile,
    ThreadSession,
    UsageLimit,
)
from agents_app.services.access.api_keys import api_key_create
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import define_agent, scripted_model
from tests.agents_app.api.door_server import *  # noqa: F403  (fixtures: server, _sessions_run)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WAIT = 20  # seconds a client waits for one answer here


def client_of(server: str, user: Any) -> openai.OpenAI:
    _, raw = api_key_create(user=user, name=f"openai key of {user.username}")
    # No retries: every refusal below must reach the test as the exception it is.
    return openai.OpenAI(base_url=f"{server}/v1", api_key=raw, max_retries=0, timeout=WAIT)


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 30)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _transcript(thread: Thread) -> list[tuple[str, str]]:
    rows = Message.objects.filter(thread=thread, depth=0).order_by("created_at")
    return [(m.role, m.content or "") for m in rows]


def _one_thread(user: Any) -> Thread:
    threads = list(Thread.objects.filter(owner=user))
    assert len(threads) == 1, threads
    return threads[0]


def _error(exc: openai.APIStatusError) -> dict[str, Any]:
    """OpenAI's error body, exactly its four keys."""
    body = exc.response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert exc.response.headers["content-type"] == "application/json"
    error: dict[str, Any] = body["error"]
    return error


# --- models -----------------------------------------------------------------------------------


def test_models_are_the_agents_the_key_s_user_is_offered(server: str, alice: Any, bob: Any) -> None:
    define_agent("helper")
    define_agent("secret")  # a draft: only studio readers see it
    define_agent("beta")  # offered to the Beta group, which bob is in
    Agent.objects.filter(name="secret").update(state="draft")
    beta = Group.objects.create(name="Beta")
    Agent.objects.get(name="beta").audience_groups.add(beta)
    bob.groups.add(beta)

    listed = client_of(server, alice).models.list()
    assert [m.id for m in listed.data] == ["helper"]
    model = listed.data[0]
    assert model.object == "model" and model.owned_by and isinstance(model.created, int)
    assert sorted(m.id for m in client_of(server, bob).models.list().data) == ["beta", "helper"]

    assert client_of(server, alice).models.retrieve("helper").id == "helper"
    define_agent("worker")  # spec 0.2.0 primary: false: not listed, still addressable
    Agent.objects.filter(name="worker").update(primary=False)
    assert [m.id for m in client_of(server, alice).models.list().data] == ["helper"]
    assert client_of(server, alice).models.retrieve("worker").id == "worker"
    with pytest.raises(openai.NotFoundError) as refused:
        client_of(server, alice).models.retrieve("secret")
    assert _error(refused.value)["code"] == "model_not_found"


# --- Chat Completions -------------------------------------------------------------------------


def test_a_chat_completion_is_the_agent_s_answer_with_usage_and_cost(
    server: str, alice: Any
) -> None:
    define_agent("helper", [{"content": "Hello from the agent.", "usage": {"promptTokens": 7}}])
    raw = client_of(server, alice).chat.completions.with_raw_response.create(
        model="helper", messages=[{"role": "user", "content": "Hi there"}]
    )
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert completion.model == "helper"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Hello from the agent."
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 7
    assert completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == 7 + completion.usage.completion_tokens
    assert completion.usage.model_extra is not None and "cost" in completion.usage.model_extra
    thread = _one_thread(alice)
    assert raw.headers["x-thread-id"] == str(thread.pk)
    assert _transcript(thread) == [("user", "Hi there"), ("assistant", "Hello from the agent.")]


def test_a_streamed_chat_completion_yields_the_text_as_it_streams_then_usage(
    server: str, alice: Any
) -> None:
    text = "Streaming, one small piece after another."
    define_agent("helper", [{"content": text}], streaming={"chunkSize": 6, "chunkDelayMs": 30})
    chunks = list(
        client_of(server, alice).chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "Stream it"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(pieces) == text
    assert len(pieces) > 1, "the text came in one piece: it was not streamed"
    assert all(c.object == "chat.completion.chunk" and c.model == "helper" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None and last.usage.total_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_the_stream_is_server_sent_events_ending_with_done(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Done soon."}])
    _, key = api_key_create(user=alice, name="raw")
    body = {"model": "helper", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    with httpx.stream(
        "POST",
        f"{server}/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=WAIT,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-thread-id"] == str(_one_thread(alice).pk)
        text = response.read().decode()
    events = [e for e in text.split("\n\n") if e and not e.startswith(":")]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"


def test_a_second_request_with_the_thread_header_continues_the_same_thread(
    server: str, alice: Any
) -> None:
    define_agent(
        "helper",
        [
            {"content": "First answer."},
            # The model is sent the thread's history: both user turns and the first answer.
            {"content": "Second answer.", "expectInput": {"messageCount": 3}},
        ],
    )
    client = client_of(server, alice)
    first = client.chat.completions.with_raw_response.create(
        model="helper", messages=[{"role": "user", "content": "Question one"}]
    )
    thread_id = first.headers["x-thread-id"]
    history = [
        {"role": "user", "content": "Question one"},
        {"role": "assistant", "content": first.parse().choices[0].message.content},
        {"role": "user", "content": "Question two"},
    ]
    second = client.chat.completions.with_raw_response.create(
        model="helper", messages=history, extra_headers={"X-Thread-Id": thread_id}
    )
    assert second.parse().choices[0].message.content == "Second answer."
    assert second.headers["x-thread-id"] == thread_id
    thread = _one_thread(alice)
    assert str(thread.pk) == thread_id
    assert _transcript(thread) == [
        ("user", "Question one"),
        ("assistant", "First answer."),
        ("user", "Question two"),
        ("assistant", "Second answer."),
    ]


def test_earlier_turns_of_a_new_conversation_become_its_thread_s_history(
    server: str, alice: Any
) -> None:
    define_agent(
        "helper", [{"content": "Paris, still.", "expectInput": {"containsMessage": "capital"}}]
    )
    answer = client_of(server, alice).chat.completions.create(
        model="helper",
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "Are you sure?"},
        ],
    )
    assert answer.choices[0].message.content == "Paris, still."
    assert _transcript(_one_thread(alice)) == [
        ("system", "Answer briefly."),
        ("user", "What is the capital of France?"),
        ("assistant", "Paris."),
        ("user", "Are you sure?"),
        ("assistant", "Paris, still."),
    ]


def test_another_user_s_thread_cannot_be_continued(server: str, alice: Any, bob: Any) -> None:
    define_agent("helper", [{"content": "Hello."}])
    first = client_of(server, alice).chat.completions.with_raw_response.create(
        model="helper", messages=[{"role": "user", "content": "Hi"}]
    )
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client_of(server, bob).chat.completions.create(
            model="helper",
            messages=[{"role": "user", "content": "Let me in"}],
            extra_headers={"X-Thread-Id": first.headers["x-thread-id"]},
        )
    assert "access to this thread" in _error(refused.value)["message"]
    assert Message.objects.filter(content="Let me in").count() == 0


# --- Responses --------------------------------------------------------------------------------


def test_responses_continue_the_thread_through_previous_response_id(
    server: str, alice: Any
) -> None:
    define_agent(
        "helper",
        [
            {"content": "Nice to meet you, Ada."},
            {"content": "You are Ada.", "expectInput": {"containsMessage": "my name is Ada"}},
        ],
    )
    client = client_of(server, alice)
    first = client.responses.create(model="helper", input="Hello, my name is Ada")
    assert first.object == "response" and first.status == "completed"
    assert first.id.startswith("resp_")
    assert first.output_text == "Nice to meet you, Ada."
    assert first.usage is not None and first.usage.total_tokens > 0
    second = client.responses.create(
        model="helper",
        input=[{"role": "user", "content": "Who am I?"}],
        previous_response_id=first.id,
    )
    assert second.output_text == "You are Ada."
    assert second.previous_response_id == first.id
    assert _transcript(_one_thread(alice)) == [
        ("user", "Hello, my name is Ada"),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "Who am I?"),
        ("assistant", "You are Ada."),
    ]
    # Continuing from anything but the latest response would branch: refused, not ignored.
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="helper", input="Again", previous_response_id=first.id)
    assert _error(refused.value)["param"] == "previous_response_id"


def test_a_streamed_response_sends_the_responses_api_events(server: str, alice: Any) -> None:
    text = "Events, one after another."
    define_agent("helper", [{"content": text}], streaming={"chunkSize": 5, "chunkDelayMs": 30})
    events = list(
        client_of(server, alice).responses.create(model="helper", input="Go", stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    for kind in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.output_item.done",
    ):
        assert kind in kinds
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == text and len(deltas) > 1
    assert [e.sequence_number for e in events] == list(range(len(events)))
    completed = events[-1].response  # type: ignore[union-attr]
    assert completed.output_text == text and completed.usage is not None


def test_the_client_s_stream_helper_assembles_the_final_response(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Assembled."}], streaming={"chunkSize": 3})
    with client_of(server, alice).responses.stream(model="helper", input="Go") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Assembled."


# --- files and tools --------------------------------------------------------------------------


def test_an_image_in_the_input_is_stored_as_an_attachment_and_sent_to_the_model(
    server: str, alice: Any
) -> None:
    define_agent(
        "helper",
        [
            {
                "content": "A small red picture.",
                "expectInput": {"imageCount": 1, "containsMessage": "What is in it?"},
            }
        ],
    )
    image = f"data:image/png;base64,{_png()}"
    answer = client_of(server, alice).chat.completions.create(
        model="helper",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in it?"},
                    {"type": "image_url", "image_url": {"url": image}},
                ],
            }
        ],
    )
    assert answer.choices[0].message.content == "A small red picture."
    thread = _one_thread(alice)
    question = Message.objects.get(thread=thread, role="user")
    assert question.content == "What is in it?"
    [ref] = question.attachments or []
    assert ref["mimeType"] == "image/png" and ref["name"] == "image-1.png"
    stored = ThreadFile.objects.get(thread=thread, path=ref["path"])
    assert (stored.width, stored.height) == (4, 3)


def test_a_file_in_a_responses_input_is_stored_as_an_attachment(server: str, alice: Any) -> None:
    define_agent("helper", [{"content": "Read it.", "expectInput": {"documentCount": 1}}])
    data = base64.b64encode(b"%PDF-1.4\n% a tiny test file\n").decode()
    answer = client_of(server, alice).responses.create(
        model="helper",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Summarize this."},
                    {
                        "type": "input_file",
                        "filename": "notes.pdf",
                        "file_data": f"data:application/pdf;base64,{data}",
                    },
                ],
            }
        ],
    )
    assert answer.output_text == "Read it."
    [ref] = Message.objects.get(thread=_one_thread(alice), role="user").attachments or []
    assert (ref["name"], ref["mimeType"]) == ("notes.pdf", "application/pdf")


def _tool_agent() -> None:
    model = scripted_model(
        "tools-model",
        [
            {
                "content": "Let me look that up.",
                "toolCalls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}],
            },
            {
                "content": "Order A-1001 has shipped with ParcelPost.",
                "expectInput": {
                    "containsToolResult": {"toolName": "lookup_order", "resultContains": "PP-55821"}
                },
            },
        ],
    )
    prompt = PromptDefinition(
        name="tools-prompt",
        model=model.name,
        prompt="You help.",
        include_chat=True,
        tools=["lookup_order"],
    )
    agent = AgentDefinition(name="shop", side_a=SideConfig(prompt=prompt.name))
    save_definitions([("model", model), ("prompt", prompt), ("agent", agent)])


def test_the_agent_s_own_tools_run_on_the_server_and_the_answer_says_their_outcome(
    server: str, alice: Any
) -> None:
    _tool_agent()
    answer = client_of(server, alice).chat.completions.create(
        model="shop", messages=[{"role": "user", "content": "Where is my order A-1001?"}]
    )
    message = answer.choices[0].message
    assert message.tool_calls is None and answer.choices[0].finish_reason == "stop"
    # Each reply of the turn, in order: the words before the call, then the answer.
    assert message.content == "Let me look that up.\n\nOrder A-1001 has shipped with ParcelPost."
    tool_rows = Message.objects.filter(thread=_one_thread(alice), role="tool")
    assert [(r.name, r.tool_status) for r in tool_rows] == [("lookup_order", "success")]


def test_a_streamed_turn_with_a_tool_sends_the_same_text(server: str, alice: Any) -> None:
    _tool_agent()
    events = list(
        client_of(server, alice).responses.create(
            model="shop", input="Where is my order A-1001?", stream=True
        )
    )
    done = [e.item for e in events if e.type == "response.output_item.done"]  # type: ignore[union-attr]
    assert [item.content[0].text for item in done] == [
        "Let me look that up.",
        "Order A-1001 has shipped with ParcelPost.",
    ]
    assert events[-1].type == "response.completed"


# --- refusals ---------------------------------------------------------------------------------


def test_tools_the_client_declares_are_refused_in_openai_s_error_shape(
    server: str, alice: Any
) -> None:
    define_agent("helper")
    client = client_of(server, alice)
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
    with pytest.raises(openai.BadRequestError) as chat:
        client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "Hi"}], tools=[tool]
        )
    error = _error(chat.value)
    assert error["param"] == "tools" and error["type"] == "invalid_request_error"
    assert "on the server" in error["message"]
    with pytest.raises(openai.BadRequestError) as responses:
        client.responses.create(
            model="helper",
            input="Hi",
            tools=[{"type": "function", "name": "get_weather", "parameters": {}}],
        )
    assert _error(responses.value)["param"] == "tools"
    with pytest.raises(openai.BadRequestError) as tuning:
        client.chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "Hi"}], temperature=0.2
        )
    assert _error(tuning.value)["param"] == "temperature"
    assert not Thread.objects.exists()  # nothing was created for a refused request


def test_a_bad_key_is_401(server: str) -> None:
    client = openai.OpenAI(
        base_url=f"{server}/v1", api_key="agtbldr_" + "0" * 64, max_retries=0, timeout=WAIT
    )
    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert _error(refused.value)["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "Hi"}])


def test_an_agent_the_user_is_not_offered_is_an_unknown_model(server: str, alice: Any) -> None:
    define_agent("secret")
    Agent.objects.filter(name="secret").update(state="draft")
    client = client_of(server, alice)
    for model in ("secret", "no-such-agent"):
        with pytest.raises(openai.NotFoundError) as refused:
            client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "Hi"}]
            )
        error = _error(refused.value)
        assert (error["param"], error["code"]) == ("model", "model_not_found")
    assert not Thread.objects.exists()


def test_usage_limits_and_budgets_are_429_with_retry_after(server: str, alice: Any) -> None:
    define_agent("helper")
    client = client_of(server, alice)
    UsageLimit.objects.create(user=alice, action="message_post", limit=0, period=60)
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "Hi"}])
    error = _error(limited.value)
    assert error["code"] == "rate_limit_exceeded" and "Too many messages" in error["message"]
    assert int(limited.value.response.headers["retry-after"]) >= 1
    UsageLimit.objects.all().delete()
    SpendBudget.objects.create(user=alice, monthly_limit_usd=Decimal("0.00"))
    with pytest.raises(openai.RateLimitError) as budget:
        client.responses.create(model="helper", input="Hi")
    assert "budget" in _error(budget.value)["message"]
    assert int(budget.value.response.headers["retry-after"]) >= 1
    assert not Thread.objects.exists()


def test_bad_input_is_a_400_and_unknown_paths_a_json_404(server: str, alice: Any) -> None:
    define_agent("helper")
    client = client_of(server, alice)
    for messages in (
        [],
        [{"role": "assistant", "content": "Hi"}],
        [{"role": "tool", "content": "x"}],
    ):
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="helper", messages=messages)  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError) as remote:
        client.chat.completions.create(
            model="helper",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
                    ],
                }
            ],
        )
    assert _error(remote.value)["param"] == "messages.0.content.0.image_url.url"
    _, key = api_key_create(user=alice, name="raw")
    auth = {"Authorization": f"Bearer {key}"}
    broken = httpx.post(f"{server}/v1/chat/completions", content=b"{", headers=auth, timeout=WAIT)
    assert broken.status_code == 400 and set(broken.json()["error"]) == {
        "message",
        "type",
        "param",
        "code",
    }
    unknown = httpx.get(f"{server}/v1/embeddings", headers=auth, timeout=WAIT)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_url"
    wrong = httpx.get(f"{server}/v1/chat/completions", headers=auth, timeout=WAIT)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert not Thread.objects.exists()


def test_a_session_that_fails_is_an_openai_error_streamed_or_not(server: str, alice: Any) -> None:
    failing = {"error": {"message": "The vendor is down", "status": 400}}
    define_agent("helper", [failing, failing])
    client = client_of(server, alice)
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "Hi"}])
    error = _error(failed.value)
    assert error["code"] == "agent_failed" and error["type"] == "server_error"
    assert failed.value.response.headers["x-should-retry"] == "false"
    assert failed.value.response.headers["x-thread-id"]
    stream = client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    with pytest.raises(openai.APIError) as streamed:
        list(stream)
    assert "failed" in streamed.value.message


# --- waits ------------------------------------------------------------------------------------


def _sessions(user: Any) -> list[str]:
    return list(ThreadSession.objects.filter(thread__owner=user).values_list("status", flat=True))


def test_a_client_that_goes_away_stops_the_session_it_started(server: str, alice: Any) -> None:
    # 40 pieces, 0.25 s apart: ten seconds of answer unless the session is stopped.
    define_agent("helper", [{"content": "x" * 40}], streaming={"chunkSize": 1, "chunkDelayMs": 250})
    stream = client_of(server, alice).chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "Go slowly"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            break  # the reply streams: go away in the middle of it
    stream.close()
    deadline = time.monotonic() + WAIT
    while _sessions(alice) != ["stopped"]:
        assert time.monotonic() < deadline, f"the session was not stopped: {_sessions(alice)}"
        time.sleep(0.1)


def test_a_turn_that_outlasts_the_wait_is_a_504_and_goes_on_in_its_thread(
    server: str, alice: Any, settings: Any
) -> None:
    settings.STUDIO_OPENAI_WAIT_SECONDS = 1
    define_agent("helper", [{"content": "Late, but here.", "delayMs": 3000}])
    with pytest.raises(openai.InternalServerError) as late:
        client_of(server, alice).chat.completions.create(
            model="helper", messages=[{"role": "user", "content": "Take your time"}]
        )
    error = _error(late.value)
    assert late.value.status_code == 504 and error["code"] == "timeout"
    thread_id = late.value.response.headers["x-thread-id"]
    assert thread_id in error["message"]
    deadline = time.monotonic() + WAIT
    while _sessions(alice) != ["completed"]:
        assert time.monotonic() < deadline, f"the session did not finish: {_sessions(alice)}"
        time.sleep(0.1)
    assert _transcript(_one_thread(alice))[-1] == ("assistant", "Late, but here.")
