"""The posting flood: many concurrent ``POST /api/threads/{id}/messages`` against a database
that takes fewer connections than there are requests.

    .venv/bin/python bench/post_flood.py [--posts 200] [--threads 20] [--connections 20] [--smoke]

Starts the integration stack (a throw-away PostgreSQL database owned by a throw-away role,
Redis, Daphne; no worker, so posted messages stay queued and are easy to count), creates
``--threads`` threads, limits the role to ``--connections`` connections (PostgreSQL's
per-role limit: the shared server's own 100 stay free for everything else), and sends
``--posts`` posts at once, each with its own ``Idempotency-Key``. Prints the answers by
status (HTML answers apart), how many accepted posts were stored once, not at all or more
than once, and how many refused posts were stored anyway; then sends every refused post
again with its key (one at a time) and prints the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.flood import FloodStack, flood, retry_refused  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args()
    if args.smoke:  # fewer connections than posts: some are refused, then retried
        args.posts, args.threads, args.connections = 10, 2, 3
    with tempfile.TemporaryDirectory() as tmp:
        stack = FloodStack(Path(tmp))
        try:
            stack.start()
            with stack.client("alice") as client:
                ids = [
                    client.post("/api/threads", json={"agent_id": "greeter"}).json()["threadId"]
                    for _ in range(args.threads)
                ]
            stack.limit(args.connections)
            result = flood(stack, "alice", ids, args.posts)
            print("flood:", json.dumps(result.figures(), indent=2))
            samples = {p.status: p.body for p in result.posts if p.status != 202}
            print("sample refusals:", json.dumps(samples, default=str)[:1500])
            retry_refused(stack, "alice", result)
            print("after retrying refused posts:", json.dumps(result.figures(), indent=2))
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
