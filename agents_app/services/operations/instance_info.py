"""What the reference studio asks about the instance: sign-in options, providers, warnings,
and one thread's execution health. Plain reads; the API module only shapes them."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from django.utils import timezone

from agents_app import wire
from agents_app.models import (
    EnvValue,
    LanguageModel,
    Log,
    QueuedMessage,
    ScheduledEffect,
    Thread,
    ThreadSession,
)
from runtime.providers.registry import ADAPTERS, KEY_NAMES

PROVIDER_LABELS = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "anthropic": "Anthropic",
    "google": "Google",
    "test": "Test (scripted)",
}


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


def _instance_keys() -> set[str]:
    return set(
        EnvValue.objects.filter(scope=EnvValue.Scope.INSTANCE, key__in=KEY_NAMES.values())
        .values_list("key", flat=True)
        .distinct()
    )


def providers() -> list[dict[str, Any]]:
    """Every provider we can call, in the reference's shape; ``hasApiKey`` when an
    instance-level value or the process environment holds its key (never the value)."""
    stored = _instance_keys()
    items = []
    for name in [*ADAPTERS, "test"]:
        key = KEY_NAMES.get(name)
        has_key = key is None or key in stored or bool(os.environ.get(key))
        items.append(
            {
                "name": name,
                "sdk": name,
                "label": PROVIDER_LABELS[name],
                "hasApiKey": has_key,
                "hasDirectApiKey": has_key,
                "configuredViaPlatform": False,
                "configurationSource": "direct" if has_key else "missing",
                "envKeys": [key] if key else [],
                "variables": [{"name": key, "type": "secret", "required": True}] if key else [],
                "isUserDefined": False,
                "iconId": name,
            }
        )
    return items


def is_provider(name: str) -> bool:
    return name in ADAPTERS or name == "test"


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
