"""Where a conversation start's CPU goes, from a profile of ``service_bench.py --cprofile``.

    .venv/bin/python bench/service_bench.py --levels 1,200 --seconds 1 --rate 4 --cprofile DIR
    .venv/bin/python bench/start_profile.py DIR/daphne-200-server-<pid>.prof --sessions 200
    .venv/bin/python bench/start_profile.py DIR/daphne-200-worker-<pid>.prof --sessions 200

The hook (``bench/cprofile_hook``) times every thread by its own CPU clock, so the total is
the process's CPU over the level, inflated by the profiler's own cost per call (about 4x on
this code): read the shares, and scale them to the unprofiled CPU per session that
``service_bench.py`` prints (``--scale-ms``). Each part is a function's cumulative time
(overlapping parts are nested: the post's view includes the publish).
"""

from __future__ import annotations

import argparse
import pstats

# (what people call it, the profile's function as ``path:line(name)`` suffix or infix)
PARTS = {
    "server": [
        ("the whole post view (auth to response, in the thread pool)", "base.py(_get_response)"),
        ("  ninja: parse, auth, validate, run, serialize", "ninja/operation.py(run)"),
        ("    API key check", "agents_app/api/security.py(authenticate)"),
        ("    the view's own work", "agents_app/api/messages.py(message_post)"),
        (
            "      the service: lock, queue, session (8 statements)",
            "threads/messages.py(message_post)",
        ),
        ("      the Celery publish (send_task)", "celery/app/base.py(send_task)"),
        (
            "        kombu's Redis client built per message",
            "kombu/transport/redis.py(_create_client)",
        ),
        ("      the direct publish (session_publish)", "session_publish.py(publish)"),
        ("  Django's ASGI request and response", "django/core/handlers/asgi.py(handle)"),
        ("  Daphne's HTTP parsing and reply", "daphne/http_protocol.py(process)"),
        ("all SQL statements (Django cursor)", "django/db/backends/utils.py(execute)"),
        (
            "the sockets: frames relayed to the clients",
            "agents_app/sockets/consumers.py(thread_frame)",
        ),
        ("the sockets: Redis Pub/Sub receive", "channels_redis/pubsub.py(_do_receiving)"),
    ],
    "worker": [
        (
            "kombu: the task's delivery (BRPOP read, decode)",
            "kombu/transport/redis.py(_brpop_read)",
        ),
        ("kombu: unacked bookkeeping at delivery", "kombu/transport/redis.py(append)"),
        ("kombu: the ack", "kombu/transport/redis.py(ack)"),
        ("  kombu's Redis clients built per message", "kombu/transport/redis.py(_create_client)"),
        ("Celery's task trace", "celery/app/trace.py(trace_task)"),
        ("the claim", "orchestration/runner.py(_claim)"),
        ("the plan (queue head, thread record)", "orchestration/runner.py(plan_session)"),
        ("definition loading (pins and the stamp)", "definitions/versions.py(session_pins)"),
        ("the thread's secrets (redaction)", "env/redaction.py(secret_values_for_thread)"),
        ("building the engine", "orchestration/engines.py(build_engine)"),
        ("the engine's session (steps, commits, frames)", "runtime/engine.py(run_session)"),
        ("  the commits (one statement each)", "async_commit.py(commit_in_one_statement)"),
        ("frame publishing (batched PUBLISH)", "broadcast/publisher.py(_run)"),
        ("the release (session end)", "sessions/lifecycle.py(session_end)"),
        ("all SQL through Django's cursor", "django/db/backends/utils.py(execute)"),
    ],
}


def cumulative(stats: pstats.Stats, needle: str) -> float:
    """The largest cumulative time of a function whose ``path(name)`` ends with ``needle``
    (line numbers left out: they move with every edit)."""
    found = 0.0
    for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if f"{path}({name})".endswith(needle):
            found = max(found, ct)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--sessions", type=int, required=True)
    parser.add_argument("--scale-ms", type=float, default=0.0, help="unprofiled ms per session")
    args = parser.parse_args()
    stats = pstats.Stats(args.profile)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    role = "worker" if "-worker-" in args.profile else "server"
    per = 1000 * total / args.sessions
    calls = stats.total_calls / args.sessions  # type: ignore[attr-defined]
    print(f"{role}: {per:.1f} profiled ms per session ({calls:,.0f} calls)")
    for label, needle in PARTS[role]:
        share = cumulative(stats, needle) / total if total else 0.0
        if share == 0.0:
            continue
        scaled = f"  ~{share * args.scale_ms:5.2f} ms" if args.scale_ms else ""
        print(f"  {share:6.1%}{scaled}  {label}")


if __name__ == "__main__":
    main()
