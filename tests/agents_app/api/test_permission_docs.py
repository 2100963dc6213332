"""docs/security.md's permission table matches ``permissions.API_ROUTES`` (issue #36: the
security section names the permission each capability needs): every permission a route asks
for is in the table, and the table names no permission the routes do not use (the studio-only
ones listed below aside)."""

from __future__ import annotations

import re
from pathlib import Path

from agents_app.base.permissions import API_ROUTES, Perm, ThreadRule

DOC = Path(__file__).resolve().parents[3] / "docs" / "security.md"
# Asked by the studio (admin pages, sockets), not by an /api/ route.
STUDIO_ONLY = {"view_mcpserver", "change_mcpserver"}


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Permissions: one model")
    return text[start : text.index("\n## ", start + 1)]


def test_the_permission_table_names_every_permission_a_route_needs() -> None:
    needed = set()
    for rule in API_ROUTES.values():
        if isinstance(rule, Perm):
            needed.update(codename.split(".", 1)[1] for codename in rule.codenames)
        elif isinstance(rule, ThreadRule):
            needed.add(f"{rule.action}_thread")
    named = set(re.findall(r"`((?:view|add|change|delete)_[a-z0-9]+)`", _section()))
    assert needed - named == set(), "permissions the routes need but the docs do not name"
    assert named - needed - STUDIO_ONLY == set(), "permissions the docs name but no route uses"


def test_the_documented_matrix_size_is_the_route_count() -> None:
    assert f"{len(API_ROUTES)}\nroutes × 7 personas" in _section() or (
        f"{len(API_ROUTES)} routes × 7 personas" in _section()
    )
    assert f"= {len(API_ROUTES) * 7} cells" in _section()
