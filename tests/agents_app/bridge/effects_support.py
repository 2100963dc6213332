"""Fixtures for the effect tests: a thread, a registry of test effects, frames on the layer.

Effects record what they were called with in ``calls``; ``flaky`` fails until it has
been called ``flaky_failures`` times; ``slow`` sleeps ``args.seconds``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone
from pydantic import BaseModel

from agents_app.base.code_registry import reset_registry
from agents_app.broadcast.events import thread_group
from agents_app.broadcast.live_frames import frame_of
from agents_app.models import Agent, LanguageModel, Prompt, ScheduledEffect, Thread
from runtime.tools.registry import Registry, define_effect

calls: list[dict[str, Any]] = []
flaky_failures = {"left": 0}


class NoteArgs(BaseModel):
    text: str


class SlowArgs(BaseModel):
    seconds: float


async def note(state: Any, args: NoteArgs) -> None:
    calls.append({"name": "note", "text": args.text, "effect_id": state.context["effect_id"]})
    await state.set_value(f"note:{state.context['effect_id']}", args.text)


async def flaky(state: Any, args: Any) -> None:
    calls.append({"name": "flaky", "effect_id": state.context["effect_id"]})
    if flaky_failures["left"] > 0:
        flaky_failures["left"] -= 1
        raise RuntimeError("not yet")


async def slow(state: Any, args: SlowArgs) -> None:
    calls.append({"name": "slow", "effect_id": state.context["effect_id"]})
    await asyncio.sleep(args.seconds)


def effects_registry() -> Registry:
    return Registry(
        define_effect("Write a note", NoteArgs, note),
        define_effect("Fails a few times", None, flaky),
        define_effect("Takes its time", SlowArgs, slow),
    )


@pytest.fixture
def effects(settings: Any) -> Any:
    """The test effects registered; fast retries; no executor (tests drive the sweeps)."""
    calls.clear()
    flaky_failures["left"] = 0
    settings.STUDIO_EXECUTOR = "none"
    settings.STUDIO_EFFECT_RETRY_BASE_MS = 100
    settings.STUDIO_EFFECT_POLL_MS = 20
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    reset_registry(effects_registry())
    yield calls
    reset_registry(None)


@pytest.fixture
def thread(db: Any, alice: Any) -> Thread:
    model = LanguageModel.objects.create(name="m", provider="test", model="x")
    agent = Agent.objects.create(
        name="support", side_a_prompt=Prompt.objects.create(name="p", model=model)
    )
    return Thread.objects.create(agent=agent, origin_agent=agent, owner=alice)


def make_effect(thread: Thread, name: str = "note", *, in_s: float = -1, **kw: Any) -> Any:
    """A row due ``in_s`` seconds from now (past by default)."""
    kw.setdefault("args", {"text": "hi"} if name == "note" else None)
    return ScheduledEffect.objects.create(
        thread=thread, name=name, due_at=timezone.now() + timedelta(seconds=in_s), **kw
    )


class Frames:
    """``effect_changed`` frames a thread's group received (in-memory channel layer)."""

    def __init__(self, thread: Thread) -> None:
        self.layer = get_channel_layer()
        self.channel = async_to_sync(self.layer.new_channel)()
        async_to_sync(self.layer.group_add)(thread_group(str(thread.pk)), self.channel)

    def statuses(self, effect_id: Any = None) -> list[str]:
        async def drain() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            while True:
                try:
                    message = await asyncio.wait_for(self.layer.receive(self.channel), 0.05)
                except TimeoutError:
                    return out
                out.append(frame_of(message))

        frames = async_to_sync(drain)()
        return [
            f["data"]["status"]
            for f in frames
            if f.get("eventType") == "effect_changed"
            and (effect_id is None or f["data"]["id"] == str(effect_id))
        ]


@pytest.fixture
def frames(thread: Thread, effects: Any) -> Frames:
    return Frames(thread)


__all__ = ["effects", "frames", "thread"]
