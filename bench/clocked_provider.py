"""A provider for the service bench: streams timestamped tokens at a fixed rate.

Registered for the ``test`` provider name in the worker with
``STUDIO_PROVIDER_FACTORIES=test=bench.clocked_provider.factory``. A model whose
provider model id is ``clocked-<tokens per second>x<tokens>`` streams that many
tokens, each the wall-clock time in microseconds at which it left the provider
(``"1795307680930123 "``), so a WebSocket client on the same machine can measure
how long each token took to reach it. Other ``test`` models keep the scripted
``TestProvider``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from runtime.core.spec import ModelDefinition
from runtime.providers.base import Finish, ProviderRequest, StreamEvent, TextDelta, Usage
from runtime.providers.test_provider import TestProvider

PATTERN = re.compile(r"^clocked-(\d+)x(\d+)$")


class ClockedProvider:
    name = "test"

    def __init__(self, rate: int, tokens: int) -> None:
        self.rate, self.tokens = rate, tokens

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        start = time.monotonic()
        for i in range(self.tokens):
            # Paced against the start, so a late wake-up does not slow the rate down.
            delay = start + i / self.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            yield TextDelta(f"{time.time_ns() // 1000} ")
        yield Finish("stop", Usage(input_tokens=10, output_tokens=self.tokens))


def factory(model: ModelDefinition) -> Any:
    found = PATTERN.match(model.model)
    if found is None:
        return TestProvider.from_model(model)
    return ClockedProvider(int(found.group(1)), int(found.group(2)))
