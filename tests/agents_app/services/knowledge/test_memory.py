"""Long-term memory per person (``memory:person``: remember, recall, forget), at the edge: a
fact told in one thread is what the model receives after recall in another thread of the same
person, never in anyone else's; the person sees and deletes it on the chat's memory page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from agents_app.models import Log, ThreadSession, UserValue
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.knowledge.memory import memories_of, memory_forget
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import _api_hosts, client_for, scripted_model  # noqa: F401

FACT = "Alice's bicycle is a green Brompton called Kermit."


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"name": name, "arguments": arguments, "id": f"c-{name}"}
    return {"toolCalls": [call], "finishReason": "tool_calls"}


def _agent(name: str, script: list[dict[str, Any]], tools: list[Any]) -> list[tuple[str, Any]]:
    prompt = PromptDefinition(
        name=f"{name}-p", model=f"{name}-m", prompt="Be helpful.", tools=tools
    )
    return [
        ("m", scripted_model(f"{name}-m", script)),
        ("p", prompt),
        ("a", AgentDefinition(name=name, side_a=SideConfig(prompt=f"{name}-p"))),
    ]


def _define() -> None:
    remember = [_call("remember", {"text": FACT}), {"content": "I will remember."}]
    # Asked by meaning, with no word of the fact but "bike" ≈ "bicycle".
    recall = [_call("recall", {"query": "what bike do they ride"}), {"content": "Noted."}]
    save_definitions(
        _agent("keeper", remember, ["memory:person"]) + _agent("asker", recall, ["memory:person"]),
        strict_code_names=False,
    )


@pytest.mark.django_db
def test_a_memory_tool_set_other_than_memory_person_is_refused_at_save() -> None:
    with pytest.raises(DefinitionsInvalid, match="'memory:team' is not a memory tool set"):
        save_definitions(_agent("x", [], ["memory:team"]), strict_code_names=False)
    save_definitions(_agent("x", [], ["memory:person"]), strict_code_names=False)


async def _turn(user: Any, agent: str, text: str) -> list[Log]:
    thread = await sync_to_async(thread_create)(user=user, agent_name=agent)
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content=text)
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    await run_session_job(str(session.pk))
    return await sync_to_async(
        lambda: list(Log.objects.filter(thread=thread, kind="llm").order_by("created_at"))
    )()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_fact_remembered_in_one_thread_is_recalled_in_another_of_the_same_person_only(
    alice: Any, bob: Any
) -> None:
    await sync_to_async(_define)()
    first, _ = await _turn(alice, "keeper", "Remember my bike.")
    assert all(n in json.dumps(first.request_body) for n in ("remember", "recall", "forget"))
    stored = await sync_to_async(lambda: list(UserValue.objects.values_list("user_id", "key")))()
    assert [u for u, _ in stored] == [alice.pk] and stored[0][1].startswith("memory/")

    # Alice, another thread, another agent: the model receives the memory after recall.
    _, after_recall = await _turn(alice, "asker", "Which bike do I have?")
    assert "green Brompton called Kermit" in json.dumps(after_recall.request_body)
    # Bob's agent recalls nothing of Alice's.
    _, bobs = await _turn(bob, "asker", "Which bike do I have?")
    received = json.dumps(bobs.request_body)
    assert "Brompton" not in received and "Nothing is remembered" in received
    # Alice deletes it: it is gone for her agents too.
    (memory,) = await sync_to_async(memories_of)(user_id=alice.pk)
    assert await sync_to_async(memory_forget)(user_id=alice.pk, memory_id=memory.id)
    _, after_delete = await _turn(alice, "asker", "Which bike do I have?")
    assert "Kermit" not in json.dumps(after_delete.request_body)


@pytest.mark.django_db
def test_the_person_sees_and_deletes_their_memories_on_the_chat_memory_page(
    alice: Any, bob: Any
) -> None:
    hostile = "<script>window.__x=1</script> likes tea"
    UserValue.objects.create(user=alice, key="memory/a1", value={"text": hostile, "vector": ""})
    UserValue.objects.create(user=alice, key="memory/a2", value={"text": FACT, "vector": ""})
    UserValue.objects.create(user=bob, key="memory/b1", value={"text": "Bob likes jazz."})
    UserValue.objects.create(
        user=alice, key="settings/theme", value="midnight-purple"
    )  # not a memory
    client = Client()
    client.force_login(alice)
    page = client.get("/chat/memory/").content.decode()
    assert "What the agents remember about you" in page
    assert (
        "&lt;script&gt;window.__x=1&lt;/script&gt; likes tea" in page
        and "<script>window" not in page
    )
    assert "Kermit" in page and "Bob likes jazz" not in page and "midnight-purple" not in page
    # Bob's id in Alice's form deletes nothing of Bob's.
    assert client.post("/chat/memory/", {"id": "b1"}).status_code == 302
    assert UserValue.objects.filter(user=bob).count() == 1
    client.post("/chat/memory/", {"id": "a1"})
    assert [m.id for m in memories_of(user_id=alice.pk)] == ["a2"]
    client.post("/chat/memory/", {"all": "1"})
    assert memories_of(user_id=alice.pk) == []
    assert UserValue.objects.filter(user=alice, key="settings/theme").exists()
    assert "Nothing is remembered about you." in client.get("/chat/memory/").content.decode()
    # The chat page links to it.
    assert 'href="/chat/memory/"' in client.get("/chat/").content.decode()


PLANTED = "sk-live-planted-7c6d5e4f3a2b"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_secret_the_model_remembers_is_masked_on_the_memory_page(
    alice: Any,
) -> None:
    client = await sync_to_async(client_for)(alice)
    patched = await sync_to_async(client.patch_json)(
        "/api/users/me/env", {"env_patch": {"SHOP_KEY": PLANTED}}
    )
    assert patched.status_code == 200, patched.content
    script = [_call("remember", {"text": f"Alice's shop key is {PLANTED}"}), {"content": "Ok."}]
    await sync_to_async(save_definitions)(
        _agent("keeper", script, ["memory:person"]), strict_code_names=False
    )
    await _turn(alice, "keeper", "Remember my shop key.")
    (memory,) = await sync_to_async(memories_of)(user_id=alice.pk)
    assert "shop key" in memory.text and PLANTED not in memory.text
    page = Client()
    await sync_to_async(page.force_login)(alice)
    shown = (await sync_to_async(page.get)("/chat/memory/")).content.decode()
    assert "shop key" in shown and PLANTED not in shown
