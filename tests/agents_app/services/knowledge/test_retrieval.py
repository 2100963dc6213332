"""Automatic retrieval before each turn and the citations of a reply (docs/knowledge.md): at
the edge, what the scripted model received (the passages within the token budget, in the
system prompt), what the log and the inspector keep (every passage found, its score, whether
it fit), the reply's citations, and the passage page a citation opens (escaped, and only for
people in the base's audience)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.test import Client

from agents_app.models import KnowledgeBase, KnowledgeChunk, Log, Message, Prompt, ThreadSession
from agents_app.models.knowledge import KnowledgeState
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.pages.thread_inspector import thread_inspection
from agents_app.services.definitions.rows import DefinitionsInvalid, prompt_definition
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig, ToolConfig
from tests.agents_app.api.api_support import _api_hosts, scripted_model  # noqa: F401
from tests.agents_app.services.knowledge.sample_files import pdf_bytes

PAGE_3 = "Staff may take the company bicycles home at weekends if they book them."
HOSTILE = '<img src=x onerror="window.__x=1"> Bicycles must be returned by Monday.'


def _define(entry: Any, script: list[dict[str, Any]], agent: str = "reader") -> None:
    prompt = PromptDefinition(
        name=f"{agent}-p", model=f"{agent}-m", prompt="Answer from the handbook.", tools=[entry]
    )
    save_definitions(
        [
            ("m", scripted_model(f"{agent}-m", script)),
            ("p", prompt),
            ("a", AgentDefinition(name=agent, side_a=SideConfig(prompt=f"{agent}-p"))),
        ],
        strict_code_names=False,
    )


def _retrieving(**retrieve: Any) -> ToolConfig:
    return ToolConfig(name="knowledge:handbook", options={"retrieve": retrieve})


def _handbook() -> None:
    base = KnowledgeBase.objects.create(
        name="handbook", description="the staff handbook", state=KnowledgeState.PUBLISHED
    )
    pages = [["Welcome to the company."], ["Lunch is served at noon."], [PAGE_3], [HOSTILE]]
    document = document_add(
        base=base, filename="staff.pdf", content_type="application/pdf", data=pdf_bytes(pages)
    )
    assert document_ingest(document.pk) == "ready"


@pytest.mark.django_db
def test_knowledge_options_other_than_retrieve_topK_maxTokens_are_refused_at_save() -> None:
    KnowledgeBase.objects.create(name="handbook")
    bad = [
        (ToolConfig(name="knowledge:handbook", options={"rerank": True}), "not 'rerank'"),
        (_retrieving(topK=0), "topK must be a whole number from 1 to 20"),
        (_retrieving(maxTokens=10**6), "maxTokens must be a whole number from 10"),
        (_retrieving(topK=2, budget=3), "not 'budget'"),
    ]
    for entry, sentence in bad:
        with pytest.raises(DefinitionsInvalid, match=sentence):
            _define(entry, [])
    _define(_retrieving(topK=3, maxTokens=500), [])
    saved = prompt_definition(Prompt.objects.get(name="reader-p"))  # kept, exported as saved
    assert isinstance(saved.tools[0], ToolConfig)  # type: ignore[index]
    assert saved.tools[0].options == {"retrieve": {"topK": 3, "maxTokens": 500}}  # type: ignore[index,union-attr]


async def _ask(user: Any, agent: str, text: str) -> Any:
    thread = await sync_to_async(thread_create)(user=user, agent_name=agent)
    await sync_to_async(message_service.message_post)(thread=thread, role="user", content=text)
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    await run_session_job(str(session.pk))
    return thread


def _logs(thread: Any, kind: str) -> list[Log]:
    return list(Log.objects.filter(thread=thread, kind=kind).order_by("created_at"))


def _final(thread: Any) -> Message:
    return Message.objects.filter(thread=thread, role="assistant").order_by("-created_at")[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_retrieved_passages_within_the_budget_reach_the_model_and_the_log(alice: Any) -> None:
    await sync_to_async(_handbook)()
    # PAGE_3 is about 18 tokens: a budget of 20 leaves no room for the next passages.
    await sync_to_async(_define)(_retrieving(topK=3, maxTokens=20), [{"content": "Yes."}])
    thread = await _ask(alice, "reader", "Can I take a bicycle home at the weekend?")

    (llm,) = await sync_to_async(_logs)(thread, "llm")
    assert PAGE_3 in llm.system_prompt and "staff, page 3" in llm.system_prompt
    assert "Lunch is served" not in llm.system_prompt
    assert PAGE_3 in json.dumps(llm.request_body)  # what the scripted model was sent
    (retrieval,) = await sync_to_async(_logs)(thread, "tool")
    assert retrieval.tool_name == "knowledge retrieval"
    assert retrieval.request_body["query"] == "Can I take a bicycle home at the weekend?"
    passages = retrieval.response_body["passages"]
    assert len(passages) == 3 and all(p["score"] > 0 for p in passages)
    assert [p["text"] for p in passages if p["included"]] == [PAGE_3]
    # The inspector shows them with their scores.
    inspection = await sync_to_async(thread_inspection)(thread)
    shown = [view.retrieved for view in inspection.logs if view.retrieved]
    assert shown and shown[0][0]["text"] == PAGE_3
    # The reply cites the passage it was given.
    final = await sync_to_async(_final)(thread)
    (cited,) = final.metadata["citations"]
    chunk = await sync_to_async(KnowledgeChunk.objects.get)(text=PAGE_3)
    assert (cited["kind"], cited["title"], cited["passage"]) == (
        "knowledge",
        "staff, page 3",
        chunk.pk,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_a_reply_after_the_search_tool_cites_the_passages_the_tool_returned(
    alice: Any,
) -> None:
    await sync_to_async(_handbook)()
    call = {
        "name": "search_handbook",
        "arguments": {"query": "bicycles at weekends", "k": 1},
        "id": "c1",
    }
    script = [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "See page 3."}]
    await sync_to_async(_define)("knowledge:handbook", script)
    thread = await _ask(alice, "reader", "Can I borrow a bicycle?")
    final = await sync_to_async(_final)(thread)
    assert final.content == "See page 3."
    assert [c["title"] for c in final.metadata["citations"]] == ["staff, page 3"]
    calling = await sync_to_async(
        lambda: Message.objects.filter(thread=thread, role="assistant").order_by("created_at")[0]
    )()
    assert "citations" not in calling.metadata  # only the answer that ends the turn cites


@pytest.mark.django_db
def test_the_cited_passage_page_escapes_the_text_and_follows_the_audience(
    alice: Any, bob: Any
) -> None:
    _handbook()
    chunk = KnowledgeChunk.objects.get(text__contains="returned by Monday")
    client = Client()
    client.force_login(alice)
    page = client.get(f"/chat/passages/{chunk.pk}/").content.decode()
    assert "&lt;img src=x onerror=&quot;window.__x=1&quot;&gt;" in page and "<img src=x" not in page
    assert "staff" in page and "Page 4" in page
    # The base limited to a group Bob is not in: for Bob the passage does not exist.
    base = KnowledgeBase.objects.get(name="handbook")
    group = Group.objects.create(name="staff")
    group.user_set.add(alice)
    base.audience_groups.add(group)
    client.force_login(bob)
    assert client.get(f"/chat/passages/{chunk.pk}/").status_code == 404
    client.force_login(alice)
    assert client.get(f"/chat/passages/{chunk.pk}/").status_code == 200
    assert client.get("/chat/passages/999999/").status_code == 404
