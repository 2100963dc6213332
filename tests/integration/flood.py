"""Real concurrent message posts against a stack whose database takes few connections.

``FloodStack`` is the integration stack with its database owned by a throw-away
non-superuser role (PostgreSQL's connection limits skip superusers), so ``limit()``
can make "too many connections" happen with 200 posts without exhausting the shared
server. ``flood()`` sends the posts at once, each with its own ``Idempotency-Key``, and
``Flood`` tells what came back and what was stored. Used by ``bench/post_flood.py`` and
``tests/integration/test_post_flood.py``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from tests.integration.stack import PG_ADMIN_URL, Stack


class FloodStack(Stack):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        role = f"flood_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER')
        # The flood measures connection overload, not the per-user request rates (which
        # would answer part of 200 posts from one user with 429 first).
        rates_off = {f"STUDIO_RATE_{a}": "off" for a in ("MESSAGE_POST", "THREAD_CREATE")}
        kwargs["extra_env"] = {**rates_off, **kwargs.get("extra_env", {})}
        super().__init__(*args, db_owner=role, **kwargs)

    def admin_sql(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        """``query`` in the stack's database as the superuser (not counted by the limit)."""
        url = f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{self.db_name}"
        with psycopg.connect(url) as conn:
            return list(conn.execute(query, args).fetchall())

    def limit(self, connections: int) -> None:
        """At most ``connections`` sessions of the stack's role (-1: no limit)."""
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'ALTER ROLE "{self.db_owner}" CONNECTION LIMIT {int(connections)}')

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP ROLE IF EXISTS "{self.db_owner}"')


@dataclass
class Post:
    thread_id: str
    content: str
    key: str
    status: int = 0
    content_type: str = ""
    retry_after: str | None = None
    body: Any = None
    error: str = ""

    @property
    def json_503(self) -> bool:
        return (
            self.status == 503
            and self.content_type.startswith("application/json")
            and isinstance(self.body, dict)
            and isinstance(self.body.get("error"), str)
            and bool(self.retry_after)
        )


@dataclass
class Flood:
    posts: list[Post] = field(default_factory=list)
    stored: Counter[str] = field(default_factory=Counter)  # content -> rows holding it

    def statuses(self) -> Counter[str]:
        """Answers by status, HTML and transport errors apart (``"500 html"``)."""
        out: Counter[str] = Counter()
        for p in self.posts:
            if p.error:
                out[f"error {p.error}"] += 1
            elif "html" in p.content_type:
                out[f"{p.status} html"] += 1
            elif p.status == 503 and not p.json_503:
                out["503 without Retry-After/JSON"] += 1
            else:
                out[str(p.status)] += 1
        return out

    def figures(self) -> dict[str, Any]:
        accepted = [p for p in self.posts if p.status == 202]
        refused = [p for p in self.posts if p.status != 202]
        return {
            "posts": len(self.posts),
            "answers": dict(sorted(self.statuses().items())),
            "accepted stored once": sum(self.stored[p.content] == 1 for p in accepted),
            "accepted not stored": sum(self.stored[p.content] == 0 for p in accepted),
            "stored more than once": sum(self.stored[p.content] > 1 for p in self.posts),
            "refused but stored": sum(self.stored[p.content] > 0 for p in refused),
            # What the first few refusals said (a failing test's message shows them).
            "refusals": [(p.status, p.error, str(p.body)[:120]) for p in refused[:3]],
        }


async def _send(client: httpx.AsyncClient, post: Post, start: asyncio.Event) -> None:
    await start.wait()
    try:
        answer = await client.post(
            f"/api/threads/{post.thread_id}/messages",
            json={"role": "user", "content": post.content},
            headers={"Idempotency-Key": post.key},
        )
    except httpx.HTTPError as exc:
        post.error = type(exc).__name__
        return
    post.status = answer.status_code
    post.content_type = answer.headers.get("content-type", "")
    post.retry_after = answer.headers.get("retry-after")
    try:
        post.body = answer.json()
    except ValueError:
        post.body = answer.text[:200]


async def send_all(stack: Stack, user: str, posts: list[Post]) -> None:
    """Send ``posts`` at once (all connections opened, then released together)."""
    limits = httpx.Limits(max_connections=len(posts) + 10, max_keepalive_connections=0)
    headers = {"Authorization": f"Bearer {stack.keys[user]}"}
    async with httpx.AsyncClient(
        base_url=stack.http, headers=headers, limits=limits, timeout=120
    ) as client:
        start = asyncio.Event()
        tasks = [asyncio.create_task(_send(client, p, start)) for p in posts]
        await asyncio.sleep(0)
        start.set()
        await asyncio.gather(*tasks)


def stored_counts(stack: FloodStack, marker: str) -> Counter[str]:
    """How many message rows (queued or taken by a session) hold each posted content."""
    rows = stack.admin_sql(
        "SELECT content FROM agents_app_queuedmessage WHERE content LIKE %s "
        "UNION ALL SELECT content FROM agents_app_message WHERE content LIKE %s",
        f"{marker}%",
        f"{marker}%",
    )
    return Counter(r[0] for r in rows)


def flood(stack: FloodStack, user: str, thread_ids: list[str], posts: int) -> Flood:
    """``posts`` concurrent posts spread over ``thread_ids``; answers and stored rows."""
    marker = f"flood-{uuid.uuid4().hex[:8]}-"
    result = Flood(
        posts=[
            Post(thread_ids[i % len(thread_ids)], f"{marker}{i}", str(uuid.uuid4()))
            for i in range(posts)
        ]
    )
    asyncio.run(send_all(stack, user, result.posts))
    result.stored = stored_counts(stack, marker)
    return result


def retry_refused(stack: FloodStack, user: str, result: Flood, *, rounds: int = 5) -> None:
    """Send every refused post again (same key, same body), one at a time, as a client that
    honours ``Retry-After`` would: a post refused again (the limit still holds, and the
    stack's sessions hold connections of it too) waits and is sent again, up to ``rounds``
    times."""
    for _ in range(rounds):
        refused = [p for p in result.posts if p.status != 202]
        if not refused:
            break
        wait = 0.0
        with stack.client(user) as client:
            for post in refused:
                answer = client.post(
                    f"/api/threads/{post.thread_id}/messages",
                    json={"role": "user", "content": post.content},
                    headers={"Idempotency-Key": post.key},
                )
                post.status, post.error = answer.status_code, ""
                post.content_type = answer.headers.get("content-type", "")
                post.retry_after = answer.headers.get("retry-after")
                post.body = answer.text[:200]
                if post.retry_after and post.retry_after.isdigit():
                    wait = max(wait, min(float(post.retry_after), 2.0))
        if wait:
            time.sleep(wait)
    marker = result.posts[0].content.rsplit("-", 1)[0] + "-"
    result.stored = stored_counts(stack, marker)
