"""When a remote A2A agent's card is asked for again (docs/api.md "The A2A client").

A failed card fetch starts a backoff per remote agent (its name and URL), kept in Django's
cache so every worker sees it (Redis in production, the in-process cache in the embedded
mode): no step asks a dead remote again before the window ends, and each failure in a row
doubles the window (``BACKOFF_FIRST_SECONDS`` up to ``BACKOFF_MAX_SECONDS``). A cached card
is used as it is; once older than ``CARD_REFRESH`` it is fetched again, at most once per
``CARD_REFRESH`` across workers, in the background of the step that found it old.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.cache import cache

from runtime.core.a2a_agents import A2aAgentDefinition

log = logging.getLogger(__name__)

BACKOFF_FIRST_SECONDS = 30
BACKOFF_MAX_SECONDS = 15 * 60
CARD_REFRESH = timedelta(hours=1)


@dataclass(frozen=True)
class Backoff:
    """A remote whose card is not asked for again before ``until`` (epoch seconds)."""

    error: str
    until: float

    def words(self) -> str:
        wait = max(int(self.until - time.time()), 1)
        return f"{self.error} (not tried again for {wait} s)"


def _key(d: A2aAgentDefinition, what: str) -> str:
    # The URL is part of the key: a definition pointed elsewhere starts afresh.
    digest = hashlib.sha256(f"{d.name}\n{d.url}".encode()).hexdigest()[:32]
    return f"a2a-card-{what}:{digest}"


async def backoff(d: A2aAgentDefinition) -> Backoff | None:
    """The backoff ``d`` is in, if any."""
    value = await _cached(cache.aget(_key(d, "backoff")))
    if isinstance(value, dict) and float(value.get("until", 0)) > time.time():
        return Backoff(str(value.get("error", "")), float(value["until"]))
    return None


async def failed(d: A2aAgentDefinition, error: str) -> Backoff:
    """Start (or lengthen) ``d``'s backoff after a fetch that failed with ``error``."""
    key = _key(d, "backoff")
    before = await _cached(cache.aget(key))
    failures = int(before.get("failures", 0)) + 1 if isinstance(before, dict) else 1
    wait = min(BACKOFF_FIRST_SECONDS * 2 ** min(failures - 1, 10), BACKOFF_MAX_SECONDS)
    until = time.time() + wait
    # Kept past the window, so the next failure in a row knows how many came before.
    value = {"failures": failures, "until": until, "error": error}
    await _cached(cache.aset(key, value, timeout=wait + BACKOFF_MAX_SECONDS))
    return Backoff(error, until)


async def succeeded(d: A2aAgentDefinition) -> None:
    await _cached(cache.adelete(_key(d, "backoff")))


async def claim_refresh(d: A2aAgentDefinition) -> bool:
    """Whether this worker refreshes ``d``'s old card now (one per ``CARD_REFRESH``)."""
    seconds = int(CARD_REFRESH.total_seconds())
    return bool(await _cached(cache.aadd(_key(d, "refresh"), 1, timeout=seconds)))


async def _cached(call: Any) -> Any:
    """A cache call whose failure (Redis down) means "no backoff known", not a failed step."""
    try:
        return await call
    except Exception:  # noqa: BLE001 - any cache backend's error
        log.warning("the A2A card backoff could not reach the cache", exc_info=True)
        return None
