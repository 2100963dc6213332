from __future__ import annotations
import time
from collections import defaultdict
from typing import Any
import pytest
from django.db import connection
from agents_app.services.retention import retention_apply
from tests.agents_app.retention_support import fill, make_agent, make_threads, make_effects
from tests.agents_app.test_retention import policy  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

def test_profile(policy: Any) -> None:
    agent = make_agent()
    old = make_threads(agent, 1000, idle_days=100)
    recent = make_threads(agent, 200, idle_days=1)
    fill(old, messages=40, logs={100: 40}, values=2)
    fill(recent, messages=40, logs={90: 20, 30: 10, 1: 10}, values=2)
    make_effects(recent, each=3, status="completed", done_days=30)
    with connection.cursor() as c:
        c.execute("ANALYZE")
    times: dict[str, list[float]] = defaultdict(list)
    def wrap(execute, sql, params, many, context):
        t = time.monotonic()
        try:
            return execute(sql, params, many, context)
        finally:
            key = sql[:90]
            times[key].append(time.monotonic() - t)
    t0 = time.monotonic()
    with connection.execute_wrapper(wrap):
        r = retention_apply()
    total = time.monotonic() - t0
    print(f"\nTOTAL {total:.2f}s, in SQL {sum(sum(v) for v in times.values()):.2f}s")
    for k, v in sorted(times.items(), key=lambda kv: -sum(kv[1]))[:12]:
        print(f"{sum(v):7.2f}s {len(v):5d}  {k}")
