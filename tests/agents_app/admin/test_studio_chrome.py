"""Admin chrome a non-developer never needs is hidden from them; developers keep it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

RAW_TABLES = ("Queued messages", "Web socket tickets", "Thread values")


@pytest.fixture
def editor() -> Any:
    """Staff who configure agents: every studio permission, but not a superuser."""
    user = get_user_model().objects.create_user("editor", password="pw-editor", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="agents_app"))
    return user


def _index(client: Client, user: Any) -> str:
    client.force_login(user)
    return client.get(reverse("admin:index")).content.decode()


def test_people_who_configure_agents_see_no_raw_tables_view_site_or_audit_trail(
    client: Client, editor: Any
) -> None:
    page = _index(client, editor)
    assert "Prompts" in page  # the page really lists what they may use

    for title in RAW_TABLES:
        assert title not in page
    assert "System (for developers)" not in page
    assert "View site" not in page
    assert "Recent actions" not in page
    assert "Open the chat" in page


def test_developers_find_the_raw_tables_under_system(client: Client, ops: Any) -> None:
    assert ops.is_superuser
    page = _index(client, ops)

    system = page.index("System (for developers)")
    for title in RAW_TABLES:
        assert page.index(title) > system
    assert "Recent actions" in page


def test_the_developers_group_counts_as_developers(client: Client, editor: Any) -> None:
    editor.groups.add(Group.objects.create(name="Developers"))
    page = _index(client, editor)
    system = page.index("System (for developers)")
    for title in RAW_TABLES:
        assert page.index(title) > system
    assert "Recent actions" in page
    assert "View site" in page


def test_the_prompt_editor_is_split_into_tabs(client: Client, editor: Any) -> None:
    client.force_login(editor)
    page = client.get(reverse("admin:agents_app_prompt_add")).content.decode()

    for tab in ("tab-instructions", "tab-model", "tab-tools", "tab-advanced"):
        assert tab in page
    assert "studio/editor_tabs.js" in page
    assert 'id="tool-search"' in page
