"""The session task's publish: Celery's ``send_task`` against the direct ``LPUSH``.

    .venv/bin/python bench/publish_bench.py [--blocks 20] [--per-block 50] [--smoke]

Publishes ``run_session`` messages to a queue of its own on ``TEST_REDIS_URL`` (default the
local Redis), alternating blocks of ``send_task`` and of
``agents_app/orchestration/session_publish.py``, and prints the CPU of one publish
(``time.process_time``, median of the blocks) and its Python calls. Alternating blocks keep
a shared machine's load changes out of the comparison; the queue is deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

import django  # noqa: E402
from django.apps import apps  # noqa: E402

if not apps.ready:  # a caller with Django set up already (the test suite) keeps its own
    django.setup()

import redis  # noqa: E402
from celery import Celery  # noqa: E402

from agents_app.base.task_names import RUN_SESSION  # noqa: E402
from agents_app.orchestration.executor import _PUBLISH_RETRY  # noqa: E402
from agents_app.orchestration.session_publish import TaskPublisher  # noqa: E402
from tests.agents_app.start_meter import CallCounter  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--per-block", type=int, default=50)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.blocks, args.per_block = 1, 2
    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    queue = f"publish-bench-{uuid.uuid4().hex[:8]}"
    app = Celery("publish-bench", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.update(CELERY_BROKER_URL=url, CELERY_TASK_DEFAULT_QUEUE=queue)
    direct = TaskPublisher(app)

    def celery() -> None:
        app.send_task(RUN_SESSION, ("bench",), retry=True, retry_policy=_PUBLISH_RETRY)

    def ours() -> None:
        direct.publish(RUN_SESSION, ("bench",))

    ways = {"send_task": celery, "direct": ours}
    for publish in ways.values():
        publish()  # connected, imported
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for _ in range(args.blocks):
            for name, publish in ways.items():
                began = time.process_time()
                for _ in range(args.per_block):
                    publish()
                times[name].append((time.process_time() - began) / args.per_block)
        for name, publish in ways.items():
            with CallCounter() as counter:
                publish()
            median = statistics.median(times[name]) * 1000
            print(f"{name:>10}: {median:.3f} ms CPU per publish, {counter.total} Python calls")
    finally:
        redis.Redis.from_url(url).delete(queue)
        app.close()
    print(f"load average {os.getloadavg()[0]:.2f} (a shared machine: compare within one run)")


if __name__ == "__main__":
    main()
