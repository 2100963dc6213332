"""Env resolution on ``DjangoStore``: thread > agent > prompt > user > instance, type rules,
``set_env`` type keeping, a clear error for a missing value; plus the redaction service."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from agents_app.bridge.store import DjangoStore
from agents_app.models import Agent, EnvValue, Prompt, Thread
from agents_app.services.definitions import rows as defs
from agents_app.services.env.redaction import RedactingSink, redact_for_thread
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
from runtime.engine import Engine
from runtime.state import EnvNotFound
from runtime.store.events import ListSink
from runtime.store.protocol import NewThread

pytestmark = pytest.mark.django_db

LEVELS = ("thread", "agent", "prompt", "user", "instance")


@pytest.fixture
def thread_id() -> str:
    alice = get_user_model().objects.create(username="alice")
    defs.model_from_definition(ModelDefinition(name="m", provider="test", model="scripted"))
    defs.prompt_from_definition(PromptDefinition(name="main", model="m", prompt="hi"))
    defs.agent_from_definition(AgentDefinition(name="agent", side_a=SideConfig(prompt="main")))
    new = NewThread(id=str(uuid.uuid4()), agent_name="agent", user_id=str(alice.pk))
    return async_to_sync(DjangoStore().create_thread)(new).id


def _plant(thread_id: str, level: str, name: str, value: str, kind: str = "secret") -> None:
    thread = Thread.objects.get(pk=thread_id)
    owners: dict[str, dict[str, Any]] = {
        "thread": {"thread": thread},
        "agent": {"agent": Agent.objects.get(name="agent")},
        "prompt": {"prompt": Prompt.objects.get(name="main")},
        "user": {"user_id": thread.owner_id},
        "instance": {},
    }
    owner = owners[level]
    row = EnvValue(scope=level, key=name, value_type=kind, **owner)
    row.value = value
    row.save()


def _resolve(thread_id: str, name: str) -> Any:
    return async_to_sync(DjangoStore().resolve_env)(thread_id, name)


@pytest.mark.parametrize("level", LEVELS)
def test_each_level_resolves_alone(thread_id: str, level: str) -> None:
    _plant(thread_id, level, "K", f"from-{level}")
    entry = _resolve(thread_id, "K")
    assert (entry.value, entry.source) == (f"from-{level}", level)


@pytest.mark.parametrize(("high", "low"), list(itertools.combinations(LEVELS, 2)))
def test_higher_level_wins_over_lower(thread_id: str, high: str, low: str) -> None:
    _plant(thread_id, low, "K", f"from-{low}", "text")
    _plant(thread_id, high, "K", f"from-{high}", "text")
    entry = _resolve(thread_id, "K")
    assert (entry.value, entry.source) == (f"from-{high}", high)
    # env_type follows the same order; definition levels are always secret.
    assert entry.type == ("secret" if high in ("agent", "prompt") else "text")


@pytest.mark.parametrize("level", ["thread", "user", "instance"])
def test_stored_type_is_reported_for_thread_user_and_instance(thread_id: str, level: str) -> None:
    _plant(thread_id, level, "T", "v-text", "text")
    _plant(thread_id, level, "S", "v-secret", "secret")
    assert (_resolve(thread_id, "T").type, _resolve(thread_id, "S").type) == ("text", "secret")


@pytest.mark.parametrize("level", ["agent", "prompt"])
def test_definition_levels_are_secret_even_when_marked_text(thread_id: str, level: str) -> None:
    _plant(thread_id, level, "K", "v", "text")
    assert _resolve(thread_id, "K").type == "secret"


def test_user_level_is_skipped_for_threads_without_owner(thread_id: str) -> None:
    _plant(thread_id, "user", "K", "alice-value")
    Thread.objects.filter(pk=thread_id).update(owner=None)
    assert _resolve(thread_id, "K") is None


def test_an_unknown_thread_is_a_lookup_error_whatever_values_exist(thread_id: str) -> None:
    _plant(thread_id, "instance", "K", "v")
    resolve = async_to_sync(DjangoStore().resolve_env)
    assert resolve(thread_id, "K") is not None
    for unknown in (str(uuid.uuid4()), "not-a-thread"):
        with pytest.raises(LookupError):
            resolve(unknown, "K")


def test_set_env_keeps_the_type_or_makes_new_keys_secret(thread_id: str) -> None:
    store = DjangoStore()
    async_to_sync(store.set_env)(thread_id, "NEW", "v1")
    assert _resolve(thread_id, "NEW").type == "secret"
    async_to_sync(store.set_env)(thread_id, "NEW", "v2", "text")
    async_to_sync(store.set_env)(thread_id, "NEW", "v3")
    entry = _resolve(thread_id, "NEW")
    assert (entry.value, entry.type) == ("v3", "text")


def test_missing_value_raises_naming_the_key_and_no_other_value(thread_id: str) -> None:
    _plant(thread_id, "instance", "NEIGHBOUR", "neighbour-secret-value")
    engine = Engine(DjangoStore(), ListSink())
    state = async_to_sync(engine.thread_state)(thread_id)
    with pytest.raises(EnvNotFound) as caught:
        async_to_sync(state.env)("ABSENT")
    assert "Environment variable not found: ABSENT" in str(caught.value)
    assert "neighbour-secret-value" not in str(caught.value)
    assert async_to_sync(state.env_type)("ABSENT") == "secret"


# --- agents_app.services.env.redaction ----------------------------------------------------------


def test_redact_for_thread_covers_every_level_but_names_only_the_owners(thread_id: str) -> None:
    for level in LEVELS:
        _plant(thread_id, level, f"S_{level.upper()}", f"secret-of-{level}")
    _plant(thread_id, "instance", "PLAIN", "plain-text-value", "text")
    data = {"all": [f"secret-of-{level}" for level in LEVELS], "plain": "plain-text-value"}
    assert redact_for_thread(thread_id, data) == {
        # Thread and user values are the owner's; the rest is not named (no oracle).
        "all": [
            f"[REDACTED:S_{level.upper()}]" if level in ("thread", "user") else "[REDACTED]"
            for level in LEVELS
        ],
        "plain": "plain-text-value",
    }


def test_redacting_sink_redacts_frames(thread_id: str) -> None:
    _plant(thread_id, "thread", "TOKEN", "tok-123456")
    inner = ListSink()
    RedactingSink(inner).emit(thread_id, {"type": "event", "data": "x tok-123456"})
    assert inner.frames[thread_id] == [{"type": "event", "data": "x [REDACTED:TOKEN]"}]
