"""Agents use knowledge: a prompt listing ``knowledge:<name>`` gets a search tool; an unknown
base is refused at save with a sentence; at the edge, the scripted model calls the tool and
the next request it receives holds the passage with its document, page and link."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import KnowledgeBase, Log, Message, ThreadSession
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.definitions.rows import DefinitionsInvalid
from agents_app.services.definitions.saves import save_definitions
from agents_app.services.knowledge.documents import document_add
from agents_app.services.knowledge.ingestion import document_ingest
from agents_app.services.threads import messages as message_service
from runtime.core.spec import AgentDefinition, PromptDefinition, SideConfig
from tests.agents_app.api.api_support import _api_hosts, scripted_model  # noqa: F401
from tests.agents_app.services.knowledge.sample_files import pdf_bytes

PAGE_3 = "Staff may take the company bicycles home at weekends if they book them."


def _define(tools: list[str], script: list[dict[str, Any]] | None = None) -> None:
    model = scripted_model("m", script)
    prompt = PromptDefinition(name="p", model="m", prompt="Answer from the handbook.", tools=tools)
    agent = AgentDefinition(name="reader", side_a=SideConfig(prompt="p"))
    save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)


@pytest.mark.django_db
def test_an_unknown_knowledge_base_is_refused_at_save_with_a_sentence() -> None:
    with pytest.raises(DefinitionsInvalid, match="Knowledge base 'handbook' does not exist."):
        _define(["knowledge:handbook"])
    KnowledgeBase.objects.create(name="handbook")
    _define(["knowledge:handbook"])  # saved once the base exists


def _handbook() -> None:
    base = KnowledgeBase.objects.create(name="handbook", description="the staff handbook")
    pages = [["Welcome to the company."], ["Lunch is served at noon."], [PAGE_3]]
    document = document_add(
        base=base, filename="staff.pdf", content_type="application/pdf", data=pdf_bytes(pages)
    )
    assert document_ingest(document.pk) == "ready"
    call = {"name": "search_handbook", "arguments": {"query": "bicycles at weekends"}, "id": "c1"}
    _define(
        ["knowledge:handbook"],
        [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "See page 3."}],
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_the_model_calls_the_search_tool_and_receives_passages_with_citations(
    alice: Any,
) -> None:
    await sync_to_async(_handbook)()
    thread = await sync_to_async(thread_create)(user=alice, agent_name="reader")
    await sync_to_async(message_service.message_post)(
        thread=thread, role="user", content="Can I borrow a bicycle?"
    )
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    await run_session_job(str(session.pk))

    first, second = await sync_to_async(
        lambda: list(Log.objects.filter(thread=thread, kind="llm").order_by("created_at"))
    )()
    offered = json.dumps(first.request_body)
    assert "search_handbook" in offered and "the staff handbook" in offered
    tool_row = await sync_to_async(Message.objects.get)(thread=thread, role="tool")
    assert tool_row.tool_status == "success"
    passages = json.loads(tool_row.content)["passages"]
    top = passages[0]
    assert top["text"] == PAGE_3
    assert (top["document"], top["page"]) == ("staff", 3)
    document_id = await sync_to_async(_document_id)()
    assert top["link"].endswith(f"/knowledgedocument/{document_id}/change/")
    # What the model received next holds the passage and where it comes from.
    received = json.dumps(second.request_body)
    for needle in (PAGE_3, '\\"page\\": 3', '\\"document\\": \\"staff\\"', top["link"]):
        assert needle in received
    final = await sync_to_async(
        lambda: Message.objects.filter(thread=thread, role="assistant").order_by("-created_at")[0]
    )()
    assert final.content == "See page 3."


def _document_id() -> int:
    from agents_app.models import KnowledgeDocument

    return KnowledgeDocument.objects.get(filename="staff.pdf").pk  # type: ignore[no-any-return]
