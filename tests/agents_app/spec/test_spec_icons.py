"""agents-spec §8.2: absolute icon paths are returned as full URLs by the API; URLs as-is."""

from __future__ import annotations

from typing import Any

import pytest

from agents_app import selectors
from agents_app.models import Agent
from tests.agents_app.api.api_support import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db


def _set_icon(name: str, icon: str) -> None:
    Agent.objects.filter(name=name).update(icon=icon)


def test_spec_8_2_absolute_icon_path_is_a_full_url_in_the_agent_list(
    as_: Any, alice: Any, ops: Any, agent: str
) -> None:
    _set_icon(agent, "/icons/support.svg")
    for user in (alice, ops):
        listed = as_(user).get("/api/agents").json()["agents"]
        assert [a["icon"] for a in listed] == ["http://testserver/icons/support.svg"]
    one = as_(ops).get(f"/api/agents/{agent}").json()["agent"]
    assert one["icon"] == "http://testserver/icons/support.svg"
    # The definition keeps what the author wrote, so an export round-trips.
    assert one["definition"]["icon"] == "/icons/support.svg"


def test_spec_8_2_external_icon_urls_are_used_as_is(as_: Any, alice: Any, agent: str) -> None:
    _set_icon(agent, "https://cdn.example.com/icon.svg")
    listed = as_(alice).get("/api/agents").json()["agents"]
    assert listed[0]["icon"] == "https://cdn.example.com/icon.svg"


def test_spec_8_2_thread_list_and_detail_return_the_icon_as_a_full_url(
    as_: Any, alice: Any, agent: str, thread_of: Any
) -> None:
    _set_icon(agent, "/icons/support.svg")
    thread = thread_of(alice)
    listed = as_(alice).get("/api/threads").json()["threads"]
    assert listed[0]["agent"]["icon"] == "http://testserver/icons/support.svg"
    detail = as_(alice).get(f"/api/threads/{thread.pk}").json()
    assert detail["agent"]["icon"] == "http://testserver/icons/support.svg"


def test_spec_8_2_public_url_setting_is_the_origin_for_api_and_socket_frames(
    as_: Any, alice: Any, agent: str, thread_of: Any, settings: Any
) -> None:
    settings.STUDIO_PUBLIC_URL = "https://studio.example.com/"
    _set_icon(agent, "/icons/support.svg")
    thread = thread_of(alice)
    listed = as_(alice).get("/api/agents").json()["agents"]
    assert listed[0]["icon"] == "https://studio.example.com/icons/support.svg"
    frame = selectors.registry_thread(thread.pk)
    assert frame is not None
    assert frame["agent"]["icon"] == "https://studio.example.com/icons/support.svg"


def test_spec_8_2_socket_frames_keep_the_path_without_a_public_url(
    alice: Any, agent: str, thread_of: Any, settings: Any
) -> None:
    settings.STUDIO_PUBLIC_URL = ""
    _set_icon(agent, "/icons/support.svg")
    frame = selectors.registry_thread(thread_of(alice).pk)
    assert frame is not None and frame["agent"]["icon"] == "/icons/support.svg"
