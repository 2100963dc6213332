"""What the reference studio asks about the instance: sign-in options, providers, warnings,
and one thread's execution health. Plain reads; the API module only shapes them."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from django.utils import timezone

from agents_app import wire
from agents_app.base.code_registry import get_registry
from agents_app.models import (
    EnvValue,
    LanguageModel,
    Log,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadSession,
)
from runtime.providers.registry import (
    KEY_NAMES,
    known_providers,
    provider_definition,
    provider_label,
)

# The native providers' labels as the reference studio shows them; the OpenAI-compatible
# ones carry their own (``runtime.providers.registry.provider_label``).
PROVIDER_LABELS = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "anthropic": "Anthropic",
    "google": "Google",
    "test": "Test (scripted)",
}


def provider_display(name: str) -> str:
    return PROVIDER_LABELS.get(name) or provider_label(name)


def auth_config() -> dict[str, Any]:
    """The sign-in options: local username/password only (no OAuth, no hosted platform)."""
    return {
        "github": False,
        "google": False,
        "platformConnected": False,
        "localPassword": True,
        "hosted": False,
        "standardAgentsLogin": False,
        "platformEndpoint": None,
    }


def instance_config() -> dict[str, Any]:
    return {"name": "Standard Agents Studio", "hosted": False, **auth_config()}


def _instance_keys(names: set[str]) -> set[str]:
    return set(
        EnvValue.objects.filter(scope=EnvValue.Scope.INSTANCE, key__in=names)
        .values_list("key", flat=True)
        .distinct()
    )


def _variables(name: str) -> list[dict[str, Any]]:
    """A provider's config slots in the reference's ``variables`` shape: names, types and
    constant defaults of non-secret slots, never a value read from the env."""
    definition = provider_definition(name)
    if definition is not None:
        return [
            {
                "name": slot.default_env or slot.name,
                "slot": slot.name,
                "env": slot.default_env is not None,
                "type": slot.type,
                "required": slot.required,
                "default": None if slot.type == "secret" else slot.default,
                "description": slot.description,
            }
            for slot in definition.slots
        ]
    key = KEY_NAMES.get(name)
    return [{"name": key, "type": "secret", "required": True}] if key else []


def providers() -> list[dict[str, Any]]:
    """Every provider we can call, in the reference's shape; ``hasApiKey`` when an
    instance-level value or the process environment holds every required variable (never
    a value): the native adapters, the OpenAI-compatible vendors, the ``define_provider``
    definitions of agents/providers/, and test."""
    get_registry()  # discovers agents/providers/
    names = list(known_providers())
    variables = {name: _variables(name) for name in names}
    env_names = {v["name"] for vs in variables.values() for v in vs}
    stored = _instance_keys(env_names)
    items = []
    for name in names:
        needed = [v["name"] for v in variables[name] if v["required"] and v.get("default") is None]
        has_key = all(key in stored or bool(os.environ.get(key)) for key in needed)
        definition = provider_definition(name)
        items.append(
            {
                "name": name,
                "sdk": name if definition is None else "openai",
                "label": provider_display(name),
                "hasApiKey": has_key,
                "hasDirectApiKey": has_key,
                "configuredViaPlatform": False,
                "configurationSource": "direct" if has_key else "missing",
                "envKeys": [v["name"] for v in variables[name] if v.get("env", True)],
                "variables": variables[name],
                "isUserDefined": definition is not None and not definition.builtin,
                "iconId": name,
                "baseUrl": definition.base_url if definition is not None else None,
            }
        )
    return items


def is_provider(name: str) -> bool:
    get_registry()
    return name in known_providers()


def warnings() -> list[dict[str, Any]]:
    """Definition problems worth a banner: models on a provider we cannot call."""
    found: list[dict[str, Any]] = []
    for model in LanguageModel.objects.order_by("name").only("name", "provider"):
        if not is_provider(model.provider):
            found.append(
                {
                    "type": "unknown_provider",
                    "message": f"Model {model.name} uses unknown provider {model.provider}",
                    "details": {"model": model.name, "provider": model.provider},
                }
            )
    return found


def thread_diagnostics(thread: Thread) -> dict[str, Any]:
    """The execution-health snapshot of ``thread`` (the reference's shape; no watchdog)."""
    now = timezone.now()
    session = (
        ThreadSession.objects.filter(thread=thread)
        .filter(status__in=[ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING])
        .first()
    )
    beat = session.heartbeat_at if session is not None else None
    incomplete = Log.objects.filter(thread=thread, is_complete=False, kind=Log.Kind.LLM)
    effects = ScheduledEffect.objects.filter(thread=thread).order_by("-created_at")[:50]
    kinds = Counter(e.status for e in effects)
    return {
        "thread": {
            "executing": session is not None and session.status == ThreadSession.Status.RUNNING,
            "lastProgressAt": wire.millis(beat),
            "silenceMs": int((now - beat).total_seconds() * 1000) if beat else None,
            "watchdogStrikes": 0,
            "watchdogCeilingMs": None,
            "stopped": thread.stopped,
            "incompleteLogs": [
                {
                    "id": str(x.id),
                    "model": x.model,
                    "provider": x.provider,
                    "created_at": x.created_at,
                }
                for x in incomplete[:50]
            ],
            "alarmQueue": [
                {
                    "id": str(e.id),
                    "method": "runEffect",
                    "status": e.status,
                    "scheduled_at": wire.millis(e.due_at),
                    "created_at": wire.millis(e.created_at),
                    "attempts": e.attempts,
                    "error": e.error or None,
                }
                for e in effects
            ],
            "alarmQueueCounts": dict(kinds),
            "messageQueueCount": QueuedMessage.objects.filter(thread=thread).count(),
            "contextUsage": None,
        },
        "watchdog": None,
        "terminated": thread.terminated_at is not None,
    }
