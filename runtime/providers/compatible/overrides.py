"""Method overrides of a ``define_provider`` definition (spec 0.2.0 ``ProviderOverride``,
``ProviderSyncOverride``, ``ProviderMethodOverrides``).

A definition may replace three of its adapter's methods with Python callables, given as
``overrides={"build_request": fn, ...}``. Each override is called with a
``ProviderOverrideContext`` first (the provider's name and ``base``, the method it replaces,
to call for the default behaviour), then the method's own arguments:

- ``build_request(ctx, request) -> PreparedRequest`` (sync): the request as sent (URL,
  headers, JSON body; never credentials, which are added at send time). The log keeps what
  it returns.
- ``parse_body(ctx, payload, request) -> list[StreamEvent]`` (sync): a non-streamed
  response's events.
- ``stream(ctx, request)`` (an ``async def`` generator): the events of one request;
  ``ctx.base(request)`` is the default stream, so an override can post-process it.

The names and kinds are checked when the definition is made: an unknown method name, a
non-callable, a sync function where an async generator is expected (or the reverse) is
refused with a sentence naming it. An override that raises, or returns something the engine
cannot use, fails the request with an error naming the provider and the method (never
retried: the same code would fail again).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from runtime.providers import errors
from runtime.providers.base import INVALID_REQUEST, ProviderError, StreamEvent

OverrideKind = Literal["sync", "stream"]
# ``ProviderSyncOverride``: a plain function; ``ProviderOverride``: an async generator.
ProviderSyncOverride = Callable[..., Any]
ProviderOverride = Callable[..., AsyncIterator[Any]]
ProviderMethodOverrides = Mapping[str, ProviderSyncOverride | ProviderOverride]

# method name → (its kind, how many arguments follow the context)
OVERRIDABLE: dict[str, tuple[OverrideKind, int]] = {
    "build_request": ("sync", 1),
    "parse_body": ("sync", 2),
    "stream": ("stream", 1),
}
EVENT_TYPES: tuple[type, ...] = get_args(StreamEvent)


@dataclass(frozen=True)
class ProviderOverrideContext:
    """What an override gets first: the provider's name and the method it replaces."""

    provider: str
    method: str
    base: Callable[..., Any]


def checked_overrides(provider: str, given: Any) -> dict[str, Callable[..., Any]]:
    """``given`` as a method-name → callable map, or ``ValueError`` with a sentence."""
    where = f"define_provider {provider}"
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ValueError(f"{where}: overrides must map method names to functions")
    out: dict[str, Callable[..., Any]] = {}
    for method, fn in given.items():
        if method not in OVERRIDABLE:
            raise ValueError(
                f"{where}: there is no method {method!r} to override "
                f"(overridable: {', '.join(sorted(OVERRIDABLE))})"
            )
        kind, arity = OVERRIDABLE[method]
        if not callable(fn):
            raise ValueError(f"{where}: the override of {method!r} is not callable")
        if kind == "stream" and not inspect.isasyncgenfunction(fn):
            raise ValueError(
                f"{where}: the override of {method!r} must be an async generator function "
                "(async def with yield)"
            )
        if kind == "sync" and (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)):
            raise ValueError(f"{where}: the override of {method!r} must be a plain (sync) function")
        _check_arity(where, method, fn, arity + 1)
        out[str(method)] = fn
    return out


def _check_arity(where: str, method: str, fn: Callable[..., Any], count: int) -> None:
    try:
        inspect.signature(fn).bind(*range(count))
    except TypeError:
        raise ValueError(
            f"{where}: the override of {method!r} must take {count} positional arguments "
            "(the context, then the method's own)"
        ) from None
    except ValueError:
        return  # a builtin without a signature: checked when called


def failed(provider: str, method: str, detail: str) -> errors.AdapterError:
    """The error of an override that raised or returned what the engine cannot use."""
    return errors.AdapterError(
        f"Provider '{provider}': the {method} override failed: {detail}",
        INVALID_REQUEST,
        retryable=False,
    )


def call_sync(
    provider: str, method: str, fn: Callable[..., Any], base: Callable[..., Any], *args: Any
) -> Any:
    """Run a sync override; its own exceptions become the provider's error."""
    context = ProviderOverrideContext(provider=provider, method=method, base=base)
    try:
        return fn(context, *args)
    except ProviderError:
        raise
    except Exception as exc:  # user code: any failure is the request's
        raise failed(provider, method, f"{type(exc).__name__}: {exc}") from None


async def call_stream(
    provider: str, fn: Callable[..., Any], base: Callable[..., Any], *args: Any
) -> AsyncIterator[StreamEvent]:
    """Run a ``stream`` override, checking that each item it yields is a stream event."""
    context = ProviderOverrideContext(provider=provider, method="stream", base=base)
    events = fn(context, *args)
    while True:
        try:
            event = await events.__anext__()
        except StopAsyncIteration:
            return
        except ProviderError:
            raise
        except Exception as exc:  # user code: any failure is the request's
            raise failed(provider, "stream", f"{type(exc).__name__}: {exc}") from None
        if not isinstance(event, EVENT_TYPES):
            raise failed(provider, "stream", f"it yielded a {type(event).__name__}, not an event")
        yield cast(StreamEvent, event)
