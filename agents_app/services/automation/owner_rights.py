"""Standing credentials act as their owner, with the owner's rights as they are now.

A schedule, a trigger, a webhook subscription and an eval run go on acting after the person
who made them has left the page, so each is a credential that stands in for its owner. The
rule (docs/automation.md, "The owner rule"): every time one acts, it may do only what its
owner could do by hand at that moment. ``owner_refusal`` decides it for every kind and every
path: due and manual schedule runs, inbound trigger requests, eval cases, webhook
deliveries (``may_read``), and a person's own post to an existing thread (``post_refusal``).
Nothing here caches a right: a permission, a group, an agent's audience or an account's
activity changed a second ago is what the next act meets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents_app import selectors
from agents_app.base.errors import Forbidden
from agents_app.base.permissions import ThreadAction, may, may_use_thread
from agents_app.models import Agent, Thread
from agents_app.selectors import is_offered
from agents_app.services.access import limits

# The permission that lets a person manage automation other people own (issue #52): the
# model permissions (view, change, delete) reach only one's own rows without it.
MANAGE_OTHERS = {
    "schedule": "agents_app.manage_others_schedule",
    "trigger": "agents_app.manage_others_trigger",
    "webhooksubscription": "agents_app.manage_others_webhooksubscription",
}


NO_LONGER_OFFERED = (
    "This agent is no longer available to you (it was unpublished, or offered to other "
    "groups), so it cannot answer here."
)


class OwnerRefused(Forbidden):
    """The credential's owner may not do this now; the message names the reason."""


def _who(owner: Any) -> str:
    return str(owner.get_username()) if owner is not None else "nobody"


def owner_refusal(
    owner: Any,
    agent: Agent,
    *,
    thread_owner_id: Any = None,
    thread_action: ThreadAction | None = None,
) -> str | None:
    """Why ``owner`` may not use ``agent`` (and, with ``thread_action``, that thread) right
    now; ``None`` when they may. ``owner`` ``None`` is refused: a credential needs a person."""
    if owner is None:
        return "it has no owner"
    if not owner.is_active:
        return f"its owner's account ({_who(owner)}) is deactivated"
    if not is_offered(owner, agent.pk):
        return (
            f"its owner ({_who(owner)}) may not use the agent {agent.name} now (it is a draft, "
            "or offered to groups they are not in)"
        )
    if thread_action is not None and not may_use_thread(owner, thread_owner_id, thread_action):
        return f"its owner ({_who(owner)}) may not {thread_action} that thread"
    return None


def act_as_owner(
    what: str,
    owner: Any,
    agent: Agent,
    *,
    counts: Iterable[str] = (),
    thread_owner_id: Any = None,
    thread_action: ThreadAction | None = None,
) -> None:
    """Check the owner rule for one act of a standing credential (``what`` names it in the
    refusal) and count the owner's usage limits for ``counts`` (``thread_create``,
    ``message_post``): ``OwnerRefused`` or ``RateLimited`` when the owner could not do it
    by hand. Their spend budgets are checked where every post meets them (the post)."""
    refusal = owner_refusal(
        owner, agent, thread_owner_id=thread_owner_id, thread_action=thread_action
    )
    if refusal is not None:
        raise OwnerRefused(f"{what} cannot act: {refusal}.")
    for action in counts:
        limits.action_hit(action, user=owner)


def require_offered(user: Any, agent_id: Any) -> None:
    """``Forbidden`` with ``post_refusal``'s sentence when the agent is not offered to
    ``user`` (a regenerate or a fork of a thread read whole already)."""
    refusal = post_refusal(user, agent_id)
    if refusal is not None:
        raise Forbidden(refusal)


def post_refusal(user: Any, agent_id: Any) -> str | None:
    """Why ``user`` may not post to a thread of this agent now (its audience was narrowed
    or it went back to draft since the chat began): a reopened chat is not a way around the
    agent's publishing."""
    return None if is_offered(user, agent_id) else NO_LONGER_OFFERED


def thread_to_post(thread_id: str, user: Any) -> Thread:
    """The thread (id, agent and owner loaded) for a request that makes its agent answer (a
    post, an edit, a regenerate, a fork): ``change`` access, and refused with
    ``post_refusal``'s sentence when the agent is no longer offered to ``user``. The
    audience is read with the access check; only a user it does not offer the agent to
    pays a permission read (studio readers see drafts and every audience)."""
    thread = selectors.thread_to_post(thread_id, user, action="change")
    if not thread.offered_by_audience and not selectors.sees_every_agent(user):  # type: ignore[attr-defined]
        raise Forbidden(NO_LONGER_OFFERED)
    return thread


def may_read(owner: Any, *, thread_owner_id: Any) -> bool:
    """Whether ``owner`` may read a thread's content now (a webhook delivery carries reply
    texts): active, and the thread's owner or holding ``view_thread``."""
    if owner is None or not owner.is_active:
        return False
    return may_use_thread(owner, thread_owner_id, "view")


def may_manage(user: Any, kind: str, owner_id: Any) -> bool:
    """Whether ``user`` may manage a row of ``kind`` owned by ``owner_id``: their own, or
    anyone's with the manage-others permission."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return (owner_id is not None and owner_id == user.pk) or may(user, MANAGE_OTHERS[kind])


def managed_by(user: Any, kind: str, rows: Any) -> Any:
    """``rows`` (a queryset of ``kind``) narrowed to what ``user`` may manage."""
    return rows if may(user, MANAGE_OTHERS[kind]) else rows.filter(owner_id=user.pk)
