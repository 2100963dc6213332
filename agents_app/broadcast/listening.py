"""Keep a server process's Redis Pub/Sub readers awake between sockets.

channels_redis' Pub/Sub layer (4.3.0) reads each shard's subscriptions in a loop
(``RedisSingleShardConnection._do_receiving``): while the shard holds a subscription it
waits for data (``get_message(timeout=0.1)``), and while it holds none it *sleeps* 0.1 s
before looking again. So once a server process's last socket closed, the next socket's
frames sat unread in the Redis connection's buffer until that sleep ended: up to 100 ms,
50 on average. That is the wait of a new chat's first reply (the page opens its socket and
posts at once): ``bench/first_token_bench.py`` measured the relay from the provider's first
token to the client's frame at 47-55 ms p50 with every frame of the reply arriving in one
burst, and strace showed the Pub/Sub messages read off the socket 24 ms before the frames
left (issue #39).

``keep_listening`` subscribes each shard of the running loop's layer to one channel of
its own, once, and never leaves it: no one publishes to it, and the reader stays in its
waiting read, which answers as soon as data arrives. The cost is the reader's 0.1 s poll
that the sleep loop already paid. Not a patch: ``subscribe`` is the shard's own method,
reached through the layer's shards (``pubsub_loop_layer``, as the publisher does), and
``RELIES_ON`` pins the version whose reader loop this was written against
(``tests/agents_app/broadcast/test_listening.py`` fails on another).
"""

from __future__ import annotations

import uuid
import weakref
from typing import Any

from agents_app.broadcast.publisher import pubsub_loop_layer

# What this module reaches into -> (the distribution, the version it was written for).
# Re-read ``_do_receiving`` and re-run bench/first_token_bench.py before moving the pin.
RELIES_ON: dict[str, tuple[str, str]] = {
    "the Pub/Sub reader sleeps while a shard has no subscription": ("channels_redis", "4.3.0"),
}

KEEP_PREFIX = "keep-listening."

# Shard -> the Pub/Sub client our channel is subscribed on (a flushed shard builds a new one).
_kept: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


async def keep_listening(layer: Any) -> None:
    """Subscribe every shard of ``layer``'s loop layer to a channel of this process's own,
    once per Pub/Sub client; nothing for other layers (in-memory, the core Redis layer)."""
    loop_layer = pubsub_loop_layer(layer)
    if loop_layer is None:
        return
    for shard in loop_layer._shards:
        pubsub = getattr(shard, "_pubsub", None)
        if pubsub is not None and _kept.get(shard) is pubsub:
            continue
        await shard.subscribe(f"{loop_layer.prefix}{KEEP_PREFIX}{uuid.uuid4().hex}")
        _kept[shard] = shard._pubsub
