"""A thread's creation reads through fixed statements (issue #58): each gives what the ORM
read it replaced gave. The offer check is ``published_to``'s rule written as SQL (the
audience: everyone, or a group the person is in; published only); the registry's row is
``wire.thread_item`` of the thread; the insert sends no save signals, so nothing may listen
to a thread's."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db.models.signals import post_save, pre_save

from agents_app import selectors, wire
from agents_app.base.errors import NotFound
from agents_app.base.icons import configured_origin
from agents_app.models import Agent, LanguageModel, Prompt, Thread, ThreadSession
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _orm_offered(user: Any, name: str) -> Agent | None:
    return selectors.published_to(user).filter(name=name).first()


def _fixed_offered(user: Any, name: str) -> Agent | None:
    try:
        return selectors.offered_agent(user, name)
    except NotFound:
        return None


def test_the_offer_check_is_published_to_s_rule(make_user: Any) -> None:
    model = LanguageModel.objects.create(name="m", provider="test", model="x")
    prompt = Prompt.objects.create(name="p", model=model, text="hi")
    staff, member, outsider = make_user("sees-all", staff=True), make_user("in"), make_user("out")
    ours, theirs = Group.objects.create(name="ours"), Group.objects.create(name="theirs")
    member.groups.add(ours)
    cases = list(product(Agent.State.values, ["everyone", "ours", "theirs", "both"]))
    for state, audience in cases:
        agent = Agent.objects.create(name=f"{state}-{audience}", side_a_prompt=prompt, state=state)
        if audience in ("ours", "both"):
            agent.audience_groups.add(ours)
        if audience in ("theirs", "both"):
            agent.audience_groups.add(theirs)
    offered = 0
    for (state, audience), user in product(cases, (member, outsider)):
        name = f"{state}-{audience}"
        expected = _orm_offered(user, name)
        found = _fixed_offered(user, name)
        assert (found and found.pk) == (expected and expected.pk), (name, user.username)
        offered += found is not None
    assert offered >= 3  # published to everyone (both people), to ours and both (the member)
    # Whoever sees every agent is offered the rest too (the ORM's read, kept for them).
    draft = _fixed_offered(staff, f"{Agent.State.DRAFT}-theirs")
    assert draft is not None and draft.name == f"{Agent.State.DRAFT}-theirs"
    assert _fixed_offered(member, "no-such-agent") is None
    # The row is the model's, every field converted as the ORM converts it.
    row = _fixed_offered(member, f"{Agent.State.PUBLISHED}-ours")
    assert row is not None
    stored = Agent.objects.get(pk=row.pk)
    assert {f.attname: getattr(row, f.attname) for f in Agent._meta.concrete_fields} == {
        f.attname: getattr(stored, f.attname) for f in Agent._meta.concrete_fields
    }


def test_the_registry_row_is_the_thread_s_item(thread_of: Any, alice: Any) -> None:
    parent = thread_of(alice)
    child = thread_of(alice)
    other = Agent.objects.create(name="origin", side_a_prompt=child.agent.side_a_prompt)
    Thread.objects.filter(pk=child.pk).update(
        parent=parent, origin_agent=other, tags=["a", "b"], last_message_preview="hello"
    )
    ThreadSession.objects.create(thread_id=child.pk, status=ThreadSession.Status.QUEUED)
    for thread, executing in ((child, True), (parent, False)):
        row = Thread.objects.select_related("agent", "origin_agent").get(pk=thread.pk)
        expected = wire.thread_item(row, executing, configured_origin())
        expected["agent_name"] = expected.pop("agent_id")
        expected["origin_agent_name"] = expected.pop("origin_agent_id")
        assert selectors.registry_thread(thread.pk) == expected
    assert selectors.registry_thread("not-a-uuid") is None
    assert selectors.registry_thread("00000000-0000-0000-0000-000000000000") is None


def test_nothing_listens_to_a_thread_s_save() -> None:
    # ``bridge.store`` inserts threads with ``raw_sql.insert_row``, which sends no signals:
    # a receiver added for threads would silently never run.
    assert not pre_save.has_listeners(Thread)
    assert not post_save.has_listeners(Thread)
