"""Seed the integration stack's database: personas with API keys and scripted agents.

Run as ``python -m tests.integration.seed`` with the stack's environment; prints
``{"keys": {username: raw_key}}`` as JSON on the last line.
"""

from __future__ import annotations

import json
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from agents_app.services.api_keys import api_key_create  # noqa: E402
from agents_app.services.definitions import save_definitions  # noqa: E402
from runtime.definitions import (  # noqa: E402
    AgentDefinition,
    ModelDefinition,
    PromptDefinition,
    SideConfig,
)

# name -> (script, streaming)
AGENTS = {
    # Streams its reply in small chunks.
    "greeter": (
        [{"content": "Hello Alice! How can I help you today?"}],
        {"chunkSize": 4, "chunkDelayMs": 15},
    ),
    # The first reply takes a while: messages sent meanwhile must queue.
    "slowpoke": (
        [
            {"content": "first answer", "delayMs": 1500},
            {"content": "second answer"},
            {"content": "third answer"},
        ],
        None,
    ),
    # A request long enough to stop (or to kill the worker) while it is in flight.
    "sleeper": ([{"content": "finally awake", "delayMs": 4000}, {"content": "still here"}], None),
}


def seed() -> dict[str, object]:
    User = get_user_model()
    keys = {}
    for name, staff in (("alice", False), ("bob", False), ("charlie", False), ("ops", True)):
        user = User.objects.create_user(name, password="pw-for-tests-1", is_staff=staff)
        keys[name] = api_key_create(user=user, name="integration")[1]
    items = []
    for name, (script, streaming) in AGENTS.items():
        model = ModelDefinition(
            name=f"{name}-model",
            provider="test",
            model="scripted",
            script=script,
            streaming=streaming,
        )
        prompt = PromptDefinition(
            name=f"{name}-prompt", model=model.name, prompt="You are helpful.", include_chat=True
        )
        agent = AgentDefinition(name=name, side_a=SideConfig(prompt=prompt.name))
        items += [(model.name, model), (prompt.name, prompt), (name, agent)]
    save_definitions(items, strict_code_names=False)
    return {"keys": keys}


if __name__ == "__main__":
    print(json.dumps(seed()))
