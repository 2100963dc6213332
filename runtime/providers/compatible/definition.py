"""``define_provider``: a named provider over an OpenAI-compatible base (spec 0.2.0 ``defineProvider``).

A definition names the provider, its base URL (``{slot}`` placeholders are filled from
config slots), its API key slot and any other typed slots (text, secret, url, number,
boolean), and headers whose values are templates over slots. A slot's value comes from the
env chain under its ``default_env`` name (thread → agent → prompt → user → instance, then
the process environment), else its constant ``default``. Secret slots never enter the
request the log keeps: they are added at send time, like the key.

The six first-party OpenAI-compatible vendors (``builtin.py``) are definitions of the same
kind, so a user's ``agents/providers/*.py`` and ours take one path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.core.definition_errors import NAME_RE
from runtime.providers.compatible.overrides import ProviderMethodOverrides, checked_overrides

SlotType = Literal["text", "secret", "url", "number", "boolean"]
SLOT_TYPES: tuple[str, ...] = ("text", "secret", "url", "number", "boolean")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPTION_KEYS = frozenset(
    {
        "name",
        "label",
        "description",
        "base_url",
        "api_key",
        "config",
        "headers",
        "hosts",
        "overrides",
    }
)
_SLOT_KEYS = frozenset({"type", "default_env", "default", "required", "description"})
# The slot that carries the API key (its ``default_env`` is the key's env name).
API_KEY = "api_key"


class ProviderDefinitionError(ValueError):
    """A ``define_provider`` call is malformed (raised at import, so start-up names the file)."""


@dataclass(frozen=True)
class ConfigSlot:
    """One configuration value of a provider."""

    name: str
    type: SlotType = "text"
    default_env: str | None = None
    default: str | float | bool | None = None
    required: bool = False
    description: str = ""

    def public(self) -> dict[str, Any]:
        """What the API lists: never a value of a secret slot."""
        shown = None if self.type == "secret" else self.default
        return {
            "name": self.name,
            "type": self.type,
            "defaultEnv": self.default_env,
            "default": shown,
            "required": self.required,
            "description": self.description,
        }


@dataclass(frozen=True)
class ProviderDefinition:
    """A provider served by the OpenAI Chat Completions adapter at ``base_url``."""

    name: str
    base_url: str
    slots: tuple[ConfigSlot, ...]
    label: str = ""
    description: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    # The vendor's own hosts: where the instance's key may always go (the egress key rule).
    hosts: frozenset[str] = frozenset()
    builtin: bool = False
    origin: str = ""
    # Adapter methods replaced by the definition's own functions (``overrides.py``).
    overrides: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    @property
    def key_env(self) -> str:
        """The env name of the API key (``""`` when the provider takes no key)."""
        slot = self.slot(API_KEY)
        return (slot.default_env or "") if slot is not None else ""

    @property
    def display(self) -> str:
        return self.label or self.name

    def slot(self, name: str) -> ConfigSlot | None:
        return next((s for s in self.slots if s.name == name), None)

    def secret_slots(self) -> set[str]:
        return {s.name for s in self.slots if s.type == "secret"}


def define_provider(
    options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    base_url: str | None = None,
    api_key: Mapping[str, Any] | None = None,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
    label: str | None = None,
    description: str | None = None,
    hosts: list[str] | None = None,
    overrides: ProviderMethodOverrides | None = None,
) -> ProviderDefinition:
    """Define a provider: ``define_provider(name="acme", base_url="https://api.acme.ai/v1",
    api_key={"default_env": "ACME_API_KEY"}, config={...}, headers={...})``, or the same keys
    in one mapping. ``api_key`` is the key's slot (a secret; ``None`` for a provider that
    takes none); ``config`` maps slot names to ``{type, default_env, default, required,
    description}``; ``{slot}`` in ``base_url`` and in header values is replaced by the slot's
    value; ``hosts`` are the vendor's own hosts (the base URL's host when not given);
    ``overrides`` replace adapter methods with functions (``overrides.py``: ``build_request``,
    ``parse_body``, ``stream``)."""
    if options is not None:
        unknown = sorted(set(options) - _OPTION_KEYS)
        if unknown:
            raise ProviderDefinitionError(f"define_provider: unknown options {unknown}")
        name = options.get("name", name)
        base_url = options.get("base_url", base_url)
        api_key = options.get("api_key", api_key)
        config = options.get("config", config)
        headers = options.get("headers", headers)
        label = options.get("label", label)
        description = options.get("description", description)
        hosts = options.get("hosts", hosts)
        overrides = options.get("overrides", overrides)
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
        raise ProviderDefinitionError(
            f"define_provider: name {name!r} is not a usable provider name (letters, digits, "
            "'_', '-' and '.', at most 64)"
        )
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise ProviderDefinitionError(
            f"define_provider {name}: base_url must be an http(s) URL, got {base_url!r}"
        )
    slots = [_slot(name, API_KEY, {**(api_key or {}), "type": "secret"})] if api_key else []
    for slot_name, spec in (config or {}).items():
        if slot_name == API_KEY:
            raise ProviderDefinitionError(
                f"define_provider {name}: declare the key with api_key=, not as config slot "
                f"{API_KEY!r}"
            )
        slots.append(_slot(name, slot_name, spec))
    known = {s.name for s in slots}
    header_map = {str(k): str(v) for k, v in (headers or {}).items()}
    for where, text in [("base_url", base_url), *header_map.items()]:
        missing = sorted(set(_PLACEHOLDER.findall(text)) - known)
        if missing:
            raise ProviderDefinitionError(
                f"define_provider {name}: {where} uses undeclared config slots {missing}"
            )
    secret_in_url = set(_PLACEHOLDER.findall(base_url)) & {
        s.name for s in slots if s.type == "secret"
    }
    if secret_in_url:
        raise ProviderDefinitionError(
            f"define_provider {name}: base_url may not hold secret slots {sorted(secret_in_url)} "
            "(URLs are kept in logs); send them in a header"
        )
    try:
        methods = checked_overrides(name, overrides)
    except ValueError as exc:
        raise ProviderDefinitionError(str(exc)) from None
    host = _host(base_url)
    return ProviderDefinition(
        name=name,
        base_url=base_url.rstrip("/"),
        slots=tuple(slots),
        label=(label or "").strip(),
        description=(description or "").strip(),
        headers=header_map,
        hosts=frozenset(h.lower() for h in (hosts or ([host] if host else []))),
        overrides=methods,
    )


def _slot(provider: str, name: str, spec: Mapping[str, Any]) -> ConfigSlot:
    where = f"define_provider {provider}: config slot {name!r}"
    if not _ENV_NAME.match(name):
        raise ProviderDefinitionError(f"{where} is not a usable slot name")
    unknown = sorted(set(spec) - _SLOT_KEYS)
    if unknown:
        raise ProviderDefinitionError(f"{where} has unknown keys {unknown}")
    kind = spec.get("type", "text")
    if kind not in SLOT_TYPES:
        raise ProviderDefinitionError(f"{where}: type must be one of {', '.join(SLOT_TYPES)}")
    env = spec.get("default_env")
    if env is not None and (not isinstance(env, str) or not _ENV_NAME.match(env)):
        raise ProviderDefinitionError(f"{where}: default_env {env!r} is not an env name")
    default = spec.get("default")
    if default is not None and kind == "secret":
        raise ProviderDefinitionError(
            f"{where}: a secret slot takes its value from default_env, never a constant default"
        )
    return ConfigSlot(
        name=name,
        type=kind,
        default_env=env,
        default=default,
        required=bool(spec.get("required", False)),
        description=str(spec.get("description") or ""),
    )


def _host(url: str) -> str:
    match = re.match(r"^https?://([^/:?#]+)", url)
    return match.group(1).lower() if match else ""


def fill(template: str, values: Mapping[str, str], *, keep_unknown: bool = False) -> str:
    """``template`` with each ``{slot}`` replaced by its value (``""`` when unset, or the
    placeholder itself with ``keep_unknown``)."""
    return _PLACEHOLDER.sub(
        lambda m: values.get(m.group(1), m.group(0) if keep_unknown else ""), template
    )


def placeholders(template: str) -> set[str]:
    return set(_PLACEHOLDER.findall(template))
