"""What the chat page needs from the API: search over one's threads, older messages page by
page, and whether an agent's replies carry reasoning (so "Show reasoning" is offered)."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app.db.thread_search import snippet
from agents_app.models import Message, Thread
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)
from tests.agents_app.api.api_support import define_agent

pytestmark = pytest.mark.django_db

BASE_US = 1_700_000_000_000_000


def _say(thread: Thread, *texts: str, start: int = 0) -> None:
    Message.objects.bulk_create(
        Message(
            thread=thread,
            role="user" if i % 2 == 0 else "assistant",
            content=text,
            created_at=BASE_US + (start + i) * 1000,
        )
        for i, text in enumerate(texts)
    )


def _ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [t["id"] for t in response.json()["threads"]]


# --- search --------------------------------------------------------------------------------


def test_search_finds_own_threads_by_any_message_title_or_preview(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    by_message = thread_of(alice)
    _say(by_message, "Where is my order 1042?", "It left the warehouse on Monday.")
    by_title = thread_of(alice)
    by_title.display_name = "Holiday PLANS"
    by_title.save()
    by_preview = thread_of(alice)
    by_preview.last_message_preview = "the invoice for march"
    by_preview.save()
    thread_of(alice)  # matches nothing

    found = as_(alice).get("/api/threads?q=WAREHOUSE")
    assert _ids(found) == [str(by_message.pk)]
    # The list can show why it was found: the matching message, not the last one.
    assert found.json()["threads"][0]["match_preview"] == "It left the warehouse on Monday."
    assert _ids(as_(alice).get("/api/threads?q=holiday plans")) == [str(by_title.pk)]
    assert _ids(as_(alice).get("/api/threads?q=Invoice")) == [str(by_preview.pk)]
    assert _ids(as_(alice).get("/api/threads?q=nothing like this")) == []


def test_search_never_reaches_other_peoples_threads(
    as_: Any, alice: Any, bob: Any, thread_of: Any
) -> None:
    mine = thread_of(alice)
    _say(mine, "the blue parrot")
    theirs = thread_of(bob)
    _say(theirs, "the blue parrot")
    assert _ids(as_(alice).get("/api/threads?q=parrot")) == [str(mine.pk)]
    assert _ids(as_(bob).get("/api/threads?q=parrot")) == [str(theirs.pk)]


def test_search_by_agent_title_and_blank_search_lists_all(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    define_agent("weather")
    weather = as_(alice).post_json("/api/threads", {"agent_id": "weather"}).json()["threadId"]
    other = thread_of(alice)
    assert _ids(as_(alice).get("/api/threads?q=Weath")) == [weather]
    assert set(_ids(as_(alice).get("/api/threads?q=%20%20"))) == {weather, str(other.pk)}


def test_search_term_too_long_is_a_clear_400(as_: Any, alice: Any, agent: str) -> None:
    response = as_(alice).get("/api/threads?q=" + "x" * 201)
    assert response.status_code == 400
    assert "q" in response.json()["error"]


# --- paging older messages -----------------------------------------------------------------


def test_older_pages_walk_the_whole_history_without_gaps_or_repeats(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    _say(thread, *(f"message {i}" for i in range(250)))
    path = f"/api/threads/{thread.pk}/messages"

    newest = as_(alice).get(f"{path}?limit=200&order=desc&depth=8").json()
    assert newest["total"] == 250 and newest["hasMore"] is True
    assert newest["messages"][0]["content"] == "message 50"
    older = as_(alice).get(f"{path}?limit=100&offset=200&order=desc&depth=8").json()
    assert older["hasMore"] is False
    assert [m["content"] for m in older["messages"]] == [f"message {i}" for i in range(50)]
    seen = [m["id"] for m in older["messages"] + newest["messages"]]
    assert len(seen) == len(set(seen)) == 250


# --- reasoning -----------------------------------------------------------------------------


def _agent_with_reasoning(
    name: str, reasoning: dict[str, Any] | None, provider: str = "test"
) -> None:
    model = ModelDefinition(
        name=f"{name}-model",
        provider=provider,  # type: ignore[arg-type]
        model="scripted" if provider == "test" else "some-model",
        **({"script": [{"content": "ok"}]} if provider == "test" else {}),
    )
    prompt = PromptDefinition(
        name=f"{name}-prompt", model=model.name, prompt="Think.", reasoning=reasoning
    )
    agent = AgentDefinition(name=name, side_a=SideConfig(prompt=prompt.name))
    save_definitions(
        [("model", model), ("prompt", prompt), ("agent", agent)], strict_code_names=False
    )


@pytest.mark.parametrize(
    ("reasoning", "provider", "shown"),
    [
        (None, "test", False),
        ({"effort": "high"}, "test", True),
        ({"maxTokens": 2000}, "anthropic", True),
        ({"effort": "high", "exclude": True}, "test", False),
        # OpenAI's Chat Completions never returns reasoning text (docs/providers.md).
        ({"effort": "high"}, "openai", False),
    ],
)
def test_reasoning_is_offered_only_for_prompts_that_return_it(
    as_: Any, alice: Any, reasoning: Any, provider: str, shown: bool
) -> None:
    _agent_with_reasoning("thinker", reasoning, provider)
    thread = as_(alice).post_json("/api/threads", {"agent_id": "thinker"}).json()["threadId"]
    detail = as_(alice).get(f"/api/threads/{thread}").json()
    assert detail["agent"]["reasoning"] is shown
    listed = {a["name"]: a for a in as_(alice).get("/api/agents").json()["agents"]}
    assert listed["thinker"]["reasoning"] is shown


def test_reasoning_is_offered_when_the_thread_already_holds_some(
    as_: Any, alice: Any, thread_of: Any
) -> None:
    thread = thread_of(alice)
    assert as_(alice).get(f"/api/threads/{thread.pk}").json()["agent"]["reasoning"] is False
    Message.objects.create(
        thread=thread, role="assistant", content="42", reasoning_content="Six times seven."
    )
    assert as_(alice).get(f"/api/threads/{thread.pk}").json()["agent"]["reasoning"] is True


def test_a_match_deep_in_a_long_message_is_cut_around_the_words() -> None:
    text = "start " + "filler " * 60 + "the KEY phrase here " + "tail " * 60
    cut = snippet(text, "key phrase")
    assert "KEY phrase" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= 122
    assert snippet("short KEY", "key") == "short KEY"
