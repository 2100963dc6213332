"""The ``run_session`` task's publish onto a Redis broker: one ``LPUSH`` on a kept client.

Every conversation start publishes one task from the web process. Through
``current_app.send_task`` kombu's Redis transport builds a new ``redis.Redis`` (and its
table of 169 response callbacks) for every message and runs Celery's routing, signals and
retry wrapper around it: 11% of the web process's CPU per start at 200 starts at once
(bench/profiles/README.md). This module pushes the same message, built by Celery's own
``app.amqp.as_task_v2`` and wrapped in the envelope kombu's transport writes, with one
client kept per process: 0.10 ms of CPU and 144 Python calls a publish against 0.45 ms and
669 (``bench/publish_bench.py``, alternating blocks on a loaded machine).
``tests/agents_app/orchestration/test_session_publish.py`` holds the envelope equal to
kombu's, key for key, so a kombu upgrade that changes it fails there.

Only for what the envelope covers: a ``redis://`` or ``rediss://`` broker, the default
queue, tracing off (with tracing on, Celery's publish signals carry the trace context
into the task, so ``send_task`` publishes). Anything else goes through ``send_task``.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from typing import Any

from celery import Celery

_REDIS_SCHEMES = ("redis://", "rediss://")


class TaskPublisher:
    """LPUSHes tasks sent by name onto the app's default queue with one Redis client."""

    def __init__(self, app: Celery) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        conf = app.conf
        options = conf.broker_transport_options or {}
        self.app = app
        self.queue = str(conf.task_default_queue)
        self.serializer = str(conf.task_serializer)
        self.client = redis.Redis.from_url(
            str(conf.broker_url),
            socket_timeout=options.get("socket_timeout"),
            socket_connect_timeout=options.get("socket_connect_timeout"),
            socket_keepalive=bool(options.get("socket_keepalive", False)),
            health_check_interval=int(options.get("health_check_interval", 0)),
            # As ``send_task``'s policy in executor.dispatch: one more attempt at once, then
            # the caller's error (the sweep dispatches the session), never a request held.
            retry=Retry(NoBackoff(), 1),
        )

    def message(self, name: str, args: tuple[Any, ...]) -> str:
        """The broker's JSON of the task ``name(*args)``, as kombu's Redis transport writes it."""
        from kombu.serialization import dumps

        task_id = str(uuid.uuid4())
        task = self.app.amqp.as_task_v2(
            task_id, name, args=args, kwargs={}, reply_to=self.app.thread_oid
        )
        content_type, encoding, body = dumps(task.body, serializer=self.serializer)
        raw = body.encode(encoding) if isinstance(body, str) else body
        properties = {
            **task.properties,
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": self.queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": str(uuid.uuid4()),
        }
        return json.dumps(
            {
                "body": base64.b64encode(raw).decode("ascii"),
                "content-encoding": encoding,
                "content-type": content_type,
                "headers": task.headers,
                "properties": properties,
            }
        )

    def publish(self, name: str, args: tuple[Any, ...]) -> None:
        self.client.lpush(self.queue, self.message(name, args))


_lock = threading.Lock()
_publishers: dict[int, TaskPublisher] = {}


def direct_publisher(app: Celery) -> TaskPublisher | None:
    """This process's publisher for ``app``, or ``None`` when its broker or routing is not
    what the envelope covers (then ``send_task`` publishes)."""
    key = id(app)
    found = _publishers.get(key)
    if found is not None and found.app is app:  # not another app at a freed address
        return found
    conf = app.conf
    url = conf.broker_url
    # One plain Redis URL (not a failover list), no key prefix, no routes or declared queues
    # (their exchanges route elsewhere), JSON: the cases whose message the envelope test
    # compares with kombu's.
    if not isinstance(url, str) or not url.startswith(_REDIS_SCHEMES) or ";" in url:
        return None
    options = conf.broker_transport_options or {}
    if conf.task_routes or conf.task_queues or options.get("global_keyprefix"):
        return None
    if conf.task_serializer != "json":
        return None
    with _lock:
        found = _publishers.get(key)
        if found is None or found.app is not app:
            found = _publishers[key] = TaskPublisher(app)
    return found
