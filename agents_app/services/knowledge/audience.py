"""Who may search a knowledge base (docs/knowledge.md, "Publishing and audience").

As agents are offered (``selectors.agents_for``): holders of ``view_knowledgebase`` (the
studio's permission to read bases) reach every base, drafts included; everyone else reaches
the published bases whose audience is everyone (no group chosen) or a group they belong to.
The API's search asks as the caller; a prompt's ``knowledge:<name>`` tool asks as the
thread's owner, so an agent offered to someone outside a base's audience finds nothing in it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from agents_app.base.errors import NotFound
from agents_app.base.permissions import KNOWLEDGE_VIEW, may
from agents_app.models.knowledge import KnowledgeBase, KnowledgeState


def sees_every_base(user: Any) -> bool:
    """Those who may read bases in the studio reach drafts and every audience."""
    return may(user, KNOWLEDGE_VIEW)


def bases_for(user: Any) -> QuerySet[KnowledgeBase]:
    """The knowledge bases ``user`` may search."""
    if sees_every_base(user):
        return KnowledgeBase.objects.all()
    through = KnowledgeBase.audience_groups.through
    restricted = Exists(through.objects.filter(knowledgebase_id=OuterRef("pk")))
    audience = Q(~restricted)
    if user is not None and getattr(user, "pk", None) and getattr(user, "is_active", False):
        audience |= Q(
            Exists(through.objects.filter(knowledgebase_id=OuterRef("pk"), group__user=user))
        )
    elif user is not None and getattr(user, "pk", None):
        return KnowledgeBase.objects.none()  # a deactivated account reaches nothing
    return KnowledgeBase.objects.filter(audience, state=KnowledgeState.PUBLISHED)


def offered_base(user: Any, name: str) -> KnowledgeBase:
    """The base named ``name`` if ``user`` may search it; otherwise 404, as if absent (a
    draft's or a group's base name is not confirmed to others)."""
    base = bases_for(user).filter(name=name).first() if len(name) <= 128 else None
    if base is None:
        raise NotFound(f"Knowledge base not found: {name}")
    return base
