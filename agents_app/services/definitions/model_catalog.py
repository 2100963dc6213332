"""Model discovery for the studio and the API: a provider's models (cached), one model's
capabilities, OpenRouter's upstream endpoints, and the studio's "Test connection".

Keys are resolved as for a studio action outside a thread: the signed-in user's env
value, then the instance's, then the process environment (the adapters' own last step).
The key is sent to the vendor and nowhere else: cache keys hold a hash of it, errors are
scrubbed of it (``runtime.providers.errors``) and re-scrubbed here.

Listings are cached whole in Django's cache (Redis in production, locmem embedded) for
``CACHE_SECONDS`` per provider + base URL + key; ``refresh=True`` asks the vendor again.
Paging and search then run on the cached list, so a picker's pages cost no vendor call.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import httpx
from asgiref.sync import async_to_sync
from django.core.cache import cache
from django.db.models import Q

from agents_app.base.errors import DomainError, Invalid, NotFound
from agents_app.models import EnvValue, LanguageModel
from agents_app.services.operations.instance_info import is_provider, provider_display
from runtime.core import egress
from runtime.providers import discovery, errors
from runtime.providers.base import Finish, ProviderRequest
from runtime.providers.compatible.adapter import CompatibleProvider, slot_lookup_over
from runtime.providers.discovery import (
    ModelCapabilityHints,
    ProviderModelInfo,
    ProviderModelsPage,
    ProviderModelsQuery,
)
from runtime.providers.registry import ADAPTERS, API_ADAPTERS, KEY_NAMES, provider_definition

CACHE_SECONDS = 3600
CACHE_PREFIX = "model-catalog:v1"
TIMEOUT = httpx.Timeout(20.0, connect=5.0)


class CatalogUnavailable(DomainError):
    """The vendor answered with an error or could not be reached (a bad gateway for us)."""

    status = 502


# --- keys and addresses -----------------------------------------------------------------------


def provider_key(provider: str, user: Any = None) -> str | None:
    """The API key for ``provider``: the user's env value, the instance's, the process env."""
    return _provider_key(provider, user)[0]


def _provider_key(provider: str, user: Any) -> tuple[str | None, str]:
    """The key and where it came from: ``user``, ``instance`` or ``process``."""
    name = KEY_NAMES.get(provider)
    if name is None:
        return None, ""
    return _env_value(name, user)


def _env_value(name: str, user: Any) -> tuple[str | None, str]:
    """An env value outside a thread: the user's, the instance's, the process env's."""
    owner = Q(scope="user", user_id=getattr(user, "pk", None)) if user else Q(pk__in=[])
    rows = {
        r.scope: r for r in EnvValue.objects.filter(Q(key=name) & (owner | Q(scope="instance")))
    }
    for scope in ("user", "instance"):
        row = rows.get(scope)
        if row is not None and row.value:
            return row.value, scope
    value = os.environ.get(name) or None
    return value, "process" if value else ""


# Keys the egress key rule guards, by the tier they came from: keys no user owns (an
# agent's or prompt's definition key is written by whoever edits that definition, not by
# whoever edits the model's base URL).
GUARDED_KEYS = {
    "instance": "The instance's",
    "process": "The server's",
    "agent": "The agent's",
    "prompt": "The prompt's",
}


def key_withheld(provider: str, source: str, base_url: str | None) -> str | None:
    """Why a key from tier ``source`` must not go to ``base_url`` (``None``: it may).

    The egress key rule: the instance's, the server's, an agent's or a prompt's key goes to
    the vendor's own host, or to a base URL a superuser marked on a model of that provider;
    a user's (or a thread's) own key goes wherever its owner points it."""
    whose = GUARDED_KEYS.get(source)
    if whose is None or egress.is_official_host(provider, base_url):
        return None
    stripped = (base_url or "").rstrip("/")
    blessed = LanguageModel.objects.filter(
        provider=provider,
        base_url__in=[stripped, stripped + "/"],
        send_instance_key_to_base_url=True,
    ).exists()
    if blessed:
        return None
    return (
        f"{whose} {KEY_NAMES.get(provider, 'API key')} was not sent to "
        f"{egress.host_of(base_url)}: it is not {_label(provider)}'s own host and no superuser "
        "has allowed sending the instance key to this base URL (the model's \"Send the "
        "instance's API key\" setting). Set your own env value for the key to use another one."
    )


def _label(provider: str) -> str:
    return provider_display(provider)


def _check_provider(provider: str) -> None:
    if not is_provider(provider):
        raise NotFound(f"Provider not found: {provider}")


def clean_base_url(base_url: str | None) -> str | None:
    """An http(s) base URL, or ``None`` for the provider's usual address."""
    value = (base_url or "").strip()
    if not value:
        return None
    if not value.startswith(("http://", "https://")) or len(value) > 200:
        raise Invalid(
            "The base URL must be an http:// or https:// address (200 characters at most)."
        )
    return value.rstrip("/")


def model_base_url(name: str | None, provider: str) -> str | None:
    """The base URL of the model definition ``name`` (its provider must be ``provider``)."""
    if not name:
        return None
    row = LanguageModel.objects.filter(name=name[:129]).first()
    if row is None:
        raise NotFound(f"Model not found: {name}")
    if row.provider != provider:
        raise Invalid(f"Model {name} uses provider {row.provider}, not {provider}.")
    return row.base_url or None


def _require_key(provider: str, user: Any, base_url: str | None = None) -> tuple[str | None, str]:
    """The key to send to ``base_url`` and, when the egress key rule withheld the
    instance's key, why (said with any failure)."""
    key, source = _provider_key(provider, user)
    if key is None and provider in KEY_NAMES:
        raise Invalid(
            f"No API key for {_label(provider)}: set {KEY_NAMES[provider]} as your own env "
            "value, an instance env value, or in the server's environment."
        )
    withheld = key_withheld(provider, source, base_url)
    return (None, withheld) if withheld else (key, "")


def _with_reason(message: str, withheld: str) -> str:
    return f"{message} {withheld}" if withheld else message


# --- plain words for vendor errors ------------------------------------------------------------


def plain_error(
    provider: str, exc: errors.AdapterError, key: str | None, base_url: str | None
) -> str:
    """What went wrong, for someone who is not a developer (the key never in it)."""
    label = _label(provider)
    status = f" ({exc.status})" if exc.status else ""
    detail = exc.message
    if exc.vendor_code == errors.EGRESS_REFUSED:
        # Our refusal, not the vendor's answer: nothing was sent.
        text = f"Did not connect to {label} at {base_url or 'its usual address'}: {detail}"
    elif exc.code == errors.AUTHENTICATION:
        text = (
            f"The {label} key in {KEY_NAMES.get(provider, 'the env')} was refused{status}. "
            f"Check that it is right and still active. {label} said: {detail}"
        )
    elif exc.code == errors.RATE_LIMIT:
        text = (
            f"{label} refused the request for now{status}: check the account's quota or "
            f"billing, or try again later. {label} said: {detail}"
        )
    elif exc.code in (errors.NETWORK, errors.TIMEOUT):
        where = base_url or "its usual address"
        text = f"Could not reach {label} at {where}. {detail}"
    elif exc.code == errors.INVALID_REQUEST:
        text = f"{label} rejected the request{status}. {label} said: {detail}"
    else:
        text = f"{label} answered with an error{status}. {label} said: {detail}"
    return errors.redact(text, (key,))


# --- listings ---------------------------------------------------------------------------------


def _cache_key(provider: str, base_url: str | None, key: str | None) -> str:
    digest = hashlib.sha256(f"{provider}\0{base_url or ''}\0{key or ''}".encode()).hexdigest()
    return f"{CACHE_PREFIX}:{provider}:{digest[:32]}"


async def _fetch(provider: str, key: str | None, base_url: str | None) -> list[ProviderModelInfo]:
    test_models: list[str] = []
    if provider == "test":
        test_models = [m async for m in _test_model_ids()]
    async with egress.client(timeout=TIMEOUT) as client:
        return await discovery.list_models(provider, client, key, base_url, test_models=test_models)


async def _test_model_ids() -> Any:
    async for model_id in LanguageModel.objects.filter(provider="test").values_list(
        "model", flat=True
    ):
        yield model_id


def list_provider_models(
    provider: str, *, user: Any = None, base_url: str | None = None, refresh: bool = False
) -> list[ProviderModelInfo]:
    """Every model ``provider`` lists (from the cache unless ``refresh``)."""
    _check_provider(provider)
    base_url = clean_base_url(base_url)
    if not discovery.can_list(provider, base_url):
        raise Invalid(
            f"{_label(provider)} cannot list its models here (its address needs a value "
            "only a thread's env gives, or it has no model list): enter the provider model "
            "id yourself."
        )
    key, withheld = _require_key(provider, user, base_url)
    cache_key = _cache_key(provider, base_url, key)
    if not refresh:
        cached = cache.get(cache_key)
        if isinstance(cached, list):
            return [ProviderModelInfo.load(item) for item in cached]
    try:
        models = async_to_sync(_fetch)(provider, key, base_url)
    except errors.AdapterError as exc:
        message = plain_error(provider, exc, key, base_url)
        raise CatalogUnavailable(_with_reason(message, withheld)) from None
    cache.set(cache_key, [m.dump() for m in models], CACHE_SECONDS)
    return models


def provider_models_page(
    provider: str,
    *,
    user: Any = None,
    base_url: str | None = None,
    search: str = "",
    page: int = 1,
    per_page: int = 50,
    refresh: bool = False,
) -> ProviderModelsPage:
    """One page of ``provider``'s models matching ``search`` (the spec's ``getModelsPage``)."""
    models = list_provider_models(provider, user=user, base_url=base_url, refresh=refresh)
    return discovery.models_page(models, ProviderModelsQuery(search[:200], page, per_page))


def provider_model_capabilities(
    provider: str, model_id: str, *, user: Any = None, base_url: str | None = None
) -> ModelCapabilityHints | None:
    """The spec's ``getModelCapabilities(modelId)`` through the cached listing."""
    models = list_provider_models(provider, user=user, base_url=base_url)
    return discovery.model_capabilities(models, model_id)


def openrouter_endpoints(
    slug: str, *, user: Any = None, base_url: str | None = None
) -> list[dict[str, Any]]:
    """The upstream providers OpenRouter routes ``slug`` to, with their prices."""
    if not slug or len(slug) > 200 or ".." in slug or slug.startswith("/"):
        raise Invalid("modelSlug must be an OpenRouter model id such as openai/gpt-4o.")
    base_url = clean_base_url(base_url)
    key, withheld = _require_key("openrouter", user, base_url)

    async def fetch() -> list[dict[str, Any]]:
        async with egress.client(timeout=TIMEOUT) as client:
            return await discovery.openrouter_endpoints(client, key, slug, base_url)

    try:
        return async_to_sync(fetch)()
    except errors.AdapterError as exc:
        message = plain_error("openrouter", exc, key, base_url)
        raise CatalogUnavailable(_with_reason(message, withheld)) from None


# --- test connection --------------------------------------------------------------------------


def check_connection(
    provider: str,
    model_id: str,
    *,
    user: Any = None,
    base_url: str | None = None,
    api: str | None = None,
) -> dict[str, Any]:
    """Send one one-token request through the real adapter with the resolved key.

    Returns ``{ok, message}``; ``message`` is plain words either way (a vendor error is
    not an exception here: showing it is the point of the button).
    """
    _check_provider(provider)
    model_id = (model_id or "").strip()
    if not model_id:
        raise Invalid("Enter the provider model id first (or pick one from the list).")
    label = _label(provider)
    if provider not in ADAPTERS:
        return {"ok": True, "message": f"{label} needs no key: it answers from the script."}
    base_url = clean_base_url(base_url)
    try:
        key, withheld = _require_key(provider, user, base_url)
    except Invalid as exc:
        return {"ok": False, "message": exc.message}
    definition = provider_definition(provider)
    slots = {
        slot.default_env: _env_value(slot.default_env, user)[0]
        for slot in (definition.slots if definition is not None else ())
        if slot.default_env and slot.name != "api_key"
    }
    try:
        async_to_sync(_one_token)(provider, model_id, key, base_url, api, slots)
    except errors.AdapterError as exc:
        message = plain_error(provider, exc, key, base_url)
        return {"ok": False, "message": _with_reason(message, withheld)}
    return {
        "ok": True,
        "message": f"{label} answered: the key in {KEY_NAMES[provider]} works and "
        f"{model_id} is available.",
    }


async def _one_token(
    provider: str,
    model_id: str,
    key: str | None,
    base_url: str | None,
    api: str | None,
    slots: dict[str, str | None] | None = None,
) -> None:
    request = ProviderRequest(
        model=model_id,
        system="",
        messages=[{"role": "user", "content": "Reply with OK."}],
        max_output_tokens=1,
        metadata={"purpose": "test-connection"},
    )
    async with egress.client(timeout=TIMEOUT) as client:
        # The API the model will really use (OpenAI: Chat Completions or Responses).
        cls = API_ADAPTERS.get((provider, api or ""), ADAPTERS[provider])
        options: dict[str, Any] = {"stream": False}
        if issubclass(cls, CompatibleProvider):  # its config slots, resolved as the key was
            options["slot_lookup"] = slot_lookup_over(
                None, {k: v for k, v in (slots or {}).items() if v}
            )
        adapter = cls(client, key, base_url, **options)
        finished = False
        async for event in adapter.stream(request):
            finished = finished or isinstance(event, Finish)
        if not finished:
            raise errors.malformed(ADAPTERS[provider].vendor, "the answer had no end")
