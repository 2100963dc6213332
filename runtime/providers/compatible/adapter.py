"""The adapter of a ``define_provider`` definition: OpenAI Chat Completions at the
definition's base URL, with its config slots resolved per request.

Slots are resolved when a request is sent (the env chain is per thread): non-secret values
fill the base URL and header templates; headers that use a secret slot are added at send
time only, with the key, so the request the log keeps (``build_request``) holds no secret.
Before that the log's URL shows the template (``…/accounts/{account_id}/…``).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar

import httpx

from runtime.core.spec import ModelDefinition
from runtime.providers import errors
from runtime.providers.adapter import ApiKey, HTTPAdapter, PreparedRequest
from runtime.providers.base import INVALID_REQUEST, ProviderRequest, StreamEvent
from runtime.providers.compatible.definition import (
    API_KEY,
    ProviderDefinition,
    fill,
    placeholders,
)
from runtime.providers.compatible.overrides import call_stream, call_sync, failed
from runtime.providers.openai.chat_completions import OpenAIProvider

# (env name, request) → its value in the env chain (then the process env), or None.
SlotLookup = Callable[[str, ProviderRequest], Awaitable[str | None]]


class CompatibleProvider(OpenAIProvider):
    """OpenAI Chat Completions for one provider definition (``for_definition`` makes the class)."""

    definition: ClassVar[ProviderDefinition]

    def __init__(
        self,
        client: httpx.AsyncClient,
        api_key: ApiKey,
        base_url: str | None = None,
        *,
        slot_lookup: SlotLookup | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client, api_key, base_url, **options)
        self._given_headers = dict(self.extra_headers)  # the caller's, before the slots'
        self._slot_lookup = slot_lookup
        # What the log's request shows before a request resolves the env: constants filled
        # in, env-backed slots as ``{slot}``, secret headers absent.
        constants = {
            s.name: _text(s.default)
            for s in self.definition.slots
            if s.default is not None and s.type != "secret" and not s.default_env
        }
        self.base_url = fill(self.base_url, constants, keep_unknown=True)
        secret = self.definition.secret_slots()
        for header, template in self.definition.headers.items():
            if not placeholders(template) & secret:
                self.extra_headers.setdefault(header, fill(template, constants, keep_unknown=True))
        self._secret_headers: dict[str, str] = {}
        self._secrets: tuple[str, ...] = ()

    @classmethod
    def for_definition(cls, definition: ProviderDefinition) -> type[CompatibleProvider]:
        """An adapter class named after ``definition`` (the registry keys classes by name)."""
        attrs = {
            "name": definition.name,
            "vendor": definition.display,
            "default_base_url": definition.base_url,
            "key_env": definition.key_env,
            "definition": definition,
        }
        return type(f"{definition.name.title()}Provider", (cls,), attrs)

    @classmethod
    def for_model(
        cls, model: ModelDefinition, *, client: httpx.AsyncClient, api_key: ApiKey, **options: Any
    ) -> HTTPAdapter:
        return cls(client, api_key, model.base_url, **options)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        bound = await self._bound(request)
        base = super(CompatibleProvider, bound).stream
        override = self.definition.overrides.get("stream")
        events = (
            base(request) if override is None else call_stream(self.name, override, base, request)
        )
        async for event in events:
            yield event

    # --- the definition's method overrides (``overrides.py``) ------------------------------

    def build_request(
        self, request: ProviderRequest, *, stream: bool | None = None
    ) -> PreparedRequest:
        override = self.definition.overrides.get("build_request")
        if override is None:
            return super().build_request(request, stream=stream)

        def base(req: ProviderRequest) -> PreparedRequest:
            return OpenAIProvider.build_request(self, req, stream=stream)

        prepared = call_sync(self.name, "build_request", override, base, request)
        if not isinstance(prepared, PreparedRequest):
            raise failed(
                self.name,
                "build_request",
                f"it returned a {type(prepared).__name__}, not a "
                "PreparedRequest (return ctx.base(request), or a dataclasses.replace of it)",
            )
        return prepared

    def parse_body(self, payload: Any, request: ProviderRequest) -> list[StreamEvent]:
        override = self.definition.overrides.get("parse_body")
        if override is None:
            return super().parse_body(payload, request)

        def base(body: Any, req: ProviderRequest) -> list[StreamEvent]:
            return OpenAIProvider.parse_body(self, body, req)

        events = call_sync(self.name, "parse_body", override, base, payload, request)
        if not isinstance(events, list):
            raise failed(
                self.name, "parse_body", f"it returned a {type(events).__name__}, not a list"
            )
        return events

    async def _bound(self, request: ProviderRequest) -> CompatibleProvider:
        """A copy with this request's slot values in its URL and headers."""
        values = await self._slot_values(request)
        secret = self.definition.secret_slots()
        bound = copy.copy(self)
        bound.base_url = fill(self.base_url, values).rstrip("/")
        bound.extra_headers = dict(self._given_headers)
        bound._secret_headers = {}
        for header, template in self.definition.headers.items():
            target = (
                bound._secret_headers if placeholders(template) & secret else bound.extra_headers
            )
            target.setdefault(header, fill(template, values))
        bound._secrets = tuple(v for k, v in values.items() if k in secret and v)
        return bound

    async def _slot_values(self, request: ProviderRequest) -> dict[str, str]:
        values: dict[str, str] = {}
        missing: list[str] = []
        for slot in self.definition.slots:
            if slot.name == API_KEY:
                continue  # the key has its own resolver (and the egress key rule)
            found = None
            if slot.default_env and self._slot_lookup is not None:
                found = await self._slot_lookup(slot.default_env, request)
            if found is None and slot.default is not None:
                found = _text(slot.default)
            if found:
                values[slot.name] = found
            elif slot.required:
                missing.append(slot.default_env or slot.name)
        if missing:
            raise errors.AdapterError(
                f"Missing required environment variables for provider '{self.name}': "
                f"{', '.join(missing)}",
                INVALID_REQUEST,
                retryable=False,
            )
        return values

    def auth_headers(self, key: str) -> dict[str, str]:
        headers = {"authorization": f"Bearer {key}"} if key else {}
        return {**headers, **self._secret_headers}

    async def _resolve_key(self, request: ProviderRequest) -> str:
        if self.definition.slot(API_KEY) is None:
            return ""  # a provider that takes no key (a local server)
        return await super()._resolve_key(request)

    async def _open(self, prepared: PreparedRequest, key: str) -> httpx.Response:
        try:
            return await super()._open(prepared, key)
        except errors.AdapterError as exc:
            # Vendors echo credentials back; the key is scrubbed already, secret slots here.
            errors.scrub(exc, self._secrets)
            raise


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def slot_lookup_over(
    env_lookup: Callable[[str, ProviderRequest], Awaitable[Any]] | None,
    environ: Mapping[str, str],
) -> SlotLookup:
    """A ``SlotLookup`` over the engine's env lookup (an ``EnvEntry``, a string or None),
    then ``environ``."""

    async def lookup(name: str, request: ProviderRequest) -> str | None:
        found = await env_lookup(name, request) if env_lookup is not None else None
        value = getattr(found, "value", found)
        if isinstance(value, str) and value:
            return value
        return environ.get(name) or None

    return lookup
