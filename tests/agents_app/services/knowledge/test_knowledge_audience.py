"""Publishing and audience at the tool (docs/knowledge.md): a prompt's ``knowledge:<name>``
tool searches with the rights of the thread's owner, so an agent offered to someone outside
the base's audience refuses in words and returns no passage; a draft base is reached only by
holders of ``view_knowledgebase``."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group, Permission

from agents_app.models import KnowledgeBase, Message, ThreadSession
from agents_app.models.knowledge import KnowledgeState
from agents_app.orchestration.runner import run_session_job
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.knowledge.tool_host import _reachable
from agents_app.services.threads import messages as message_service
from runtime.tools.knowledge_tools import KnowledgeUnavailable
from tests.agents_app.api.api_support import _api_hosts  # noqa: F401
from tests.agents_app.services.knowledge.test_knowledge_tool import _define

SECRET_POLICY = "The merger code name is Bluebird."


def _hr_base() -> None:
    base = KnowledgeBase.objects.create(name="handbook", description="HR only")
    base.audience_groups.add(Group.objects.create(name="hr"))
    call = {"name": "search_handbook", "arguments": {"query": "merger code name"}, "id": "c1"}
    _define(
        ["knowledge:handbook"],
        [{"toolCalls": [call], "finishReason": "tool_calls"}, {"content": "I cannot say."}],
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_thread_connections")
async def test_the_tool_refuses_in_words_for_an_owner_outside_the_audience(bob: Any) -> None:
    await sync_to_async(_hr_base)()
    thread = await sync_to_async(thread_create)(user=bob, agent_name="reader")
    await sync_to_async(message_service.message_post)(
        thread=thread, role="user", content="What is the merger called?"
    )
    session = await sync_to_async(ThreadSession.objects.get)(thread=thread)
    await run_session_job(str(session.pk))

    tool_row = await sync_to_async(Message.objects.get)(thread=thread, role="tool")
    assert tool_row.tool_status == "error"
    assert "is not in its audience" in tool_row.content
    assert "passages" not in tool_row.content


@pytest.mark.django_db
def test_a_member_reaches_the_base_and_a_draft_is_for_base_readers_only(
    alice: Any, bob: Any, make_user: Any
) -> None:
    _hr_base()
    Group.objects.get(name="hr").user_set.add(alice)
    reader = make_user("reader")
    reader.user_permissions.add(Permission.objects.get(codename="view_knowledgebase"))
    threads = {
        u.username: str(thread_create(user=u, agent_name="reader").pk) for u in (alice, bob, reader)
    }

    assert _reachable("handbook", threads["alice"]).name == "handbook"
    with pytest.raises(KnowledgeUnavailable, match="not in its audience"):
        _reachable("handbook", threads["bob"])
    KnowledgeBase.objects.filter(name="handbook").update(state=KnowledgeState.DRAFT)
    with pytest.raises(KnowledgeUnavailable, match="or it is a draft"):
        _reachable("handbook", threads["alice"])
    assert _reachable("handbook", threads["reader"]).name == "handbook"
