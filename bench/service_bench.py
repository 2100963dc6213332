"""The service bench: live streaming through the real stack.

    .venv/bin/python bench/service_bench.py [--levels 1,100,200,300,500] [--rate 50]
        [--seconds 15] [--server daphne|uvicorn] [--coalesce-ms N] [--profile DIR] [--smoke]

Starts the integration stack (a throw-away PostgreSQL database, Redis, Daphne, one
Celery worker with the threads pool) with a clocked ``test`` provider in the worker
(``bench/clocked_provider.py``): every token carries the microsecond at which it
left the provider, so WebSocket clients on this machine measure its trip:
provider → engine → LiveSink → Redis channel layer → Daphne consumer → socket.

(a) token latency, p50/p99: one session alone (level 1) and under each load level;
(b) for each level N: N threads streaming at once (``--rate`` tokens/s each, for
    ``--seconds``), each watched by its own WebSocket; a level passes when every
    session ends, every token arrives and no socket errors. ``peak`` is the most
    sessions streaming at the same moment, ``tok/s/session`` the median rate a
    client received; with the peak RSS of Daphne and of the worker;
(c) what each level cost on the wire: chunk frames per token and bytes per chunk frame
    as the clients received them (coalescing shows here, independent of machine noise).

``--server uvicorn`` serves the same application with uvicorn instead of Daphne;
``--coalesce-ms`` sets ``STUDIO_STREAM_COALESCE_MS`` in the worker (0 turns the window
off); ``--env NAME=VALUE`` sets any setting for every process of the stack; ``--profile DIR`` records every level of Daphne and the worker with py-spy
(``DIR/<server>-<level>-{daphne,worker}.txt``, collapsed stacks; ``bench/profile_summary.py``
prints where the time went). The messages page and the thread list have their own bench
(``bench/messages_page_bench.py``). ``--smoke`` (the test suite's): level 1 at 20 tokens/s for
a second, with ``--timeline``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from tests.integration.edge import start_daphne, start_nginx  # noqa: E402
from tests.integration.stack import Stack, wait_until  # noqa: E402


def speed_probe_ms() -> float:
    """A fixed pure-Python loop, best of three: this VM's speed differs up to 2x between
    days, so figures from different runs compare only beside this probe."""
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.perf_counter() - began)
    return best * 1000


def now_us() -> int:
    return time.time_ns() // 1000


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, MB (from /proc)."""
    total = 0
    pids = [pid]
    while pids:
        current = pids.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += next(int(x.split()[1]) for x in status.splitlines() if x.startswith("VmRSS"))
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
            pids += [int(c) for c in children]
        except (OSError, StopIteration):
            continue
    return total / 1024


def box_busy_seconds() -> float:
    """CPU time the whole machine has been busy so far, all cores (from /proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, all its threads (from /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def services_seconds() -> tuple[float, float]:
    """CPU time the machine's PostgreSQL and Redis servers have used so far (every process
    named postgres or redis-server, plus what their exited children used), and PostgreSQL's
    part of it: one pass over /proc."""
    total = postgres = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, _, rest = stat.partition(" (")[2].rpartition(")")
        if name.startswith(("postgres", "redis-server")):
            used = sum(int(x) for x in rest.split()[11:15])
            total += used
            if name.startswith("postgres"):
                postgres += used
    tick = os.sysconf("SC_CLK_TCK")
    return total / tick, postgres / tick


SEED = """
from agents_app.services.definitions.saves import save_definitions
from runtime.core.spec import AgentDefinition, ModelDefinition, PromptDefinition, SideConfig
model = ModelDefinition(name="clocked", provider="test", model="clocked-{rate}x{tokens}")
prompt = PromptDefinition(name="streamer-prompt", model="clocked", prompt="Stream.")
agent = AgentDefinition(name="streamer", side_a=SideConfig(prompt="streamer-prompt"))
save_definitions([("m", model), ("p", prompt), ("a", agent)], strict_code_names=False)
"""


# Requests (and WebSocket handshakes) in flight at once: every concurrent request holds a
# database connection in Daphne (one thread per request), and PostgreSQL allows 100 by
# default. The bench measures streaming, not a thundering herd of handshakes.
HTTP_CONCURRENCY = 24


@dataclass
class Result:
    first: float = 0.0  # monotonic time of the first and last token received
    last: float = 0.0
    tokens: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    received_at: list[float] = field(default_factory=list)  # monotonic time of each token
    ended: bool = False
    error: str | None = None
    frames: int = 0
    chunk_frames: int = 0
    chunk_bytes: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # connected (or failed)
    posted: float = 0.0  # monotonic time the message was posted (its first token: ``first``)


async def watch_session(
    stack: Stack,
    http: httpx.AsyncClient,
    thread_id: str,
    result: Result,
    go: asyncio.Event,
    gate: asyncio.Semaphore,
) -> None:
    headers = {"Authorization": f"Bearer {stack.keys['alice']}"}
    try:
        async with gate:  # connections open CONNECT_CONCURRENCY at a time, then all stream
            socket = await connect(
                f"{getattr(stack, 'ws_edge', stack.ws)}/api/threads/{thread_id}/stream",
                additional_headers=headers,
                max_size=None,
                open_timeout=60,
            )
        result.ready.set()
        async with socket:
            await go.wait()
            async with gate:
                result.posted = time.monotonic()
                posted = await http.post(
                    f"/api/threads/{thread_id}/messages", json={"content": "stream please"}
                )
            if posted.status_code != 202:
                raise RuntimeError(f"post answered {posted.status_code}")
            async for raw in socket:
                received = now_us()
                frame = json.loads(raw)
                result.frames += 1
                if frame.get("type") == "message_chunk":
                    result.chunk_frames += 1
                    result.chunk_bytes += len(raw)
                    result.first = result.first or time.monotonic()
                    result.last = time.monotonic()
                    arrived = time.monotonic()
                    for token in frame["chunk"].split():
                        result.tokens += 1
                        result.latencies_ms.append((received - int(token)) / 1000)
                        result.received_at.append(arrived)
                elif frame.get("type") == "stopped":
                    result.ended = True
                    return
                elif frame.get("type") in ("resync", "error"):
                    raise RuntimeError(f"{frame['type']} frame: {frame}")
    except Exception as exc:  # counted as an error of this level
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        result.ready.set()


def start_http_server(stack: Stack, edge: bool) -> None:
    """The same application on a port of its own for the clients' HTTP requests; with
    ``edge``, nginx with docker/nginx/edge.conf in front of both, as docker/compose.yaml runs
    them (the clients then use the edge's port only)."""
    stack.http_server, port = start_daphne(stack, "http")  # type: ignore[attr-defined]
    stack.http_split = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    if edge:
        folder = Path(tempfile.mkdtemp(prefix="bench-edge-"))
        edge_port = start_nginx(stack, folder, web_port=port, sockets_port=stack.port)
        stack.http_split = f"http://127.0.0.1:{edge_port}"  # type: ignore[attr-defined]
        stack.ws_edge = f"ws://127.0.0.1:{edge_port}"  # type: ignore[attr-defined]


def renice(pid: int, niceness: int) -> None:
    """Every thread of ``pid`` (Linux's niceness is per thread; threads made later inherit
    their maker's)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.setpriority(os.PRIO_PROCESS, int(task.name), niceness)


def server_pids(stack: Stack) -> list[int]:
    """The server processes: the ASGI server holding the sockets, the HTTP one if split, and
    nginx's processes with ``--edge`` (their CPU counts as the server's)."""
    split = getattr(stack, "http_server", None)
    pids = [stack.daphne.popen.pid] + ([split.popen.pid] if split else [])
    for process in stack.processes:
        if process.name == "edge":  # nginx: its master and its worker
            master = process.popen.pid
            children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
            pids += [master, *map(int, children)]
    return pids


def start_profiles(stack: Stack, folder: Path | None, label: str, seconds: float) -> list[Any]:
    """py-spy on Daphne and the worker for ``seconds`` (collapsed stacks, one file each)."""
    if folder is None:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).parent / "py-spy"
    targets = {"daphne": stack.daphne.popen.pid, "worker": stack.bench_workers[0].popen.pid}  # type: ignore[attr-defined]
    if getattr(stack, "http_server", None) is not None:
        targets["http"] = stack.http_server.popen.pid  # type: ignore[attr-defined]
    return [
        subprocess.Popen(
            [
                str(spy),
                "record",
                "--format",
                "raw",
                "--rate",
                "200",
                "--nonblocking",
                "--gil",  # only the thread holding the GIL: where the CPU goes
                "--duration",
                str(int(seconds)),
                "--pid",
                str(pid),
                "--output",
                str(folder / f"{label}-{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in targets.items()
    ]


async def cprofile_mark(folder: Path, what: str, label: str) -> None:
    """Ask every process of the stack (``bench/cprofile_hook``) to clear its profile or to
    write it; a dump waits until the server and the worker wrote theirs."""
    (folder / f"{what}-{label}").touch()
    if what == "reset":
        await asyncio.sleep(0.5)  # the hook looks every 0.1 s
        return
    deadline = time.monotonic() + 30
    while len(list(folder.glob(f"{label}-*.tottime.txt"))) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.2)


async def run_level(
    stack: Stack,
    sessions: int,
    tokens: int,
    timeout: float,
    profile: Path | None = None,
    label: str = "",
    seconds: float = 0,
    http_concurrency: int = HTTP_CONCURRENCY,
    cprofile: Path | None = None,
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=400)
    async with httpx.AsyncClient(
        base_url=getattr(stack, "http_split", stack.http),
        headers={"Authorization": f"Bearer {stack.keys['alice']}"},
        timeout=120,
        limits=limits,
    ) as http:
        gate = asyncio.Semaphore(http_concurrency)

        async def create() -> str:
            async with gate:
                response = await http.post("/api/threads", json={"agent_id": "streamer"})
            if response.status_code != 200:
                raise RuntimeError(f"create answered {response.status_code}: {response.text}")
            return str(response.json()["threadId"])

        thread_ids = list(await asyncio.gather(*(create() for _ in range(sessions))))
        results = [Result() for _ in thread_ids]
        go = asyncio.Event()
        tasks = [
            asyncio.create_task(watch_session(stack, http, t, r, go, gate))
            for t, r in zip(thread_ids, results, strict=True)
        ]
        # Every socket connects (and joins its group) first; then all sessions start at once.
        await asyncio.wait([asyncio.create_task(r.ready.wait()) for r in results], timeout=300)
        started = time.monotonic()
        workers = stack.bench_workers  # type: ignore[attr-defined]
        servers = server_pids(stack)
        http_server = getattr(stack, "http_server", None)
        http_pid = http_server.popen.pid if http_server else 0

        def cpu_now() -> tuple[float, ...]:
            """CPU seconds so far: the servers, the worker(s), these clients, the whole box,
            the server holding the sockets (the relay) alone, and the HTTP one (if split)."""
            return (
                sum(cpu_seconds(pid) for pid in servers),
                sum(cpu_seconds(w.popen.pid) for w in workers),
                time.process_time(),
                box_busy_seconds(),
                cpu_seconds(stack.daphne.popen.pid),
                cpu_seconds(http_pid) if http_pid else 0.0,
                *services_seconds(),
            )

        cpu_before = cpu_now()
        peak = {"daphne": 0.0, "worker": 0.0}

        async def sample_memory() -> None:
            while True:
                peak["daphne"] = max(peak["daphne"], rss_mb(stack.daphne.popen.pid))
                for worker in stack.bench_workers:  # type: ignore[attr-defined]
                    peak["worker"] = max(peak["worker"], rss_mb(worker.popen.pid))
                await asyncio.sleep(0.5)

        cores: dict[int, tuple[float, ...]] = {}

        async def sample_cpu() -> None:
            # Cores the server, the worker(s), the clients and the whole box used in each
            # second of the level: shows which part the box ran short for, and when.
            last, at = cpu_now(), time.monotonic()
            while True:
                await asyncio.sleep(1.0)
                current, now = cpu_now(), time.monotonic()
                span = now - at
                cores[int(at - started)] = tuple(
                    (c - b) / span for c, b in zip(current, last, strict=True)
                )
                last, at = current, now

        sampler = asyncio.create_task(sample_memory())
        cpu_sampler = asyncio.create_task(sample_cpu())
        spies = start_profiles(stack, profile, label, seconds)
        if cprofile is not None:
            await cprofile_mark(cprofile, "reset", label)
        go.set()
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        if cprofile is not None:
            await cprofile_mark(cprofile, "dump", label)
        elapsed = time.monotonic() - started
        # The clients share the machine: a saturated client adds its own queueing to every
        # figure, so its share is printed beside the server's.
        cpu_used = tuple(c - b for c, b in zip(cpu_now(), cpu_before, strict=True))
        sampler.cancel()
        cpu_sampler.cancel()
        for task in pending:
            task.cancel()
        for spy in spies:
            spy.wait()
    latencies = [x for r in results for x in r.latencies_ms]
    errors = [r.error for r in results if r.error] + [
        "did not finish" for r in results if not r.ended and not r.error
    ]
    received = sum(r.tokens for r in results)
    rates = [r.tokens / (r.last - r.first) for r in results if r.last > r.first]
    # Start latency: the post's request to the session's first token at its client.
    starts = [(r.first - r.posted) * 1000 for r in results if r.first and r.posted]
    # While every session streams: from the last session's first token to the first end.
    window = (max(r.first for r in results), min(r.last for r in results)) if starts else (0, 0)
    steady = [
        latency
        for r in results
        for latency, at in zip(r.latencies_ms, r.received_at, strict=True)
        if window[0] <= at <= window[1]
    ]
    return {
        "timeline": timeline(results, started),
        "cores": cores,
        "peak": peak_overlap(results),
        "session_rate": statistics.median(rates) if rates else 0.0,
        "sessions": sessions,
        "ok": not errors and received == sessions * tokens,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "start_p50_ms": pct(starts, 50),
        "start_p99_ms": pct(starts, 99),
        "steady_from_s": window[0] - started if starts else float("nan"),
        "steady_p99_ms": pct(steady, 99),
        "tokens": f"{received}/{sessions * tokens}",
        "tokens_per_s": received / elapsed if elapsed else 0,
        "frames": sum(r.frames for r in results),
        "frames_per_token": sum(r.chunk_frames for r in results) / received if received else 0,
        "bytes_per_frame": sum(r.chunk_bytes for r in results)
        / max(1, sum(r.chunk_frames for r in results)),
        "p50_ms": pct(latencies, 50),
        "p99_ms": pct(latencies, 99),
        "max_ms": max(latencies) if latencies else float("nan"),
        "seconds": elapsed,
        "daphne_cpu": cpu_used[0] / elapsed if elapsed else 0.0,
        "worker_cpu": cpu_used[1] / elapsed if elapsed else 0.0,
        "client_cpu": cpu_used[2] / elapsed if elapsed else 0.0,
        # CPU per session (its post, start and tokens): comparable across loads and runs.
        "server_ms_per_session": 1000 * cpu_used[0] / sessions,
        # The sockets' server over every frame its clients received (with --split-http or
        # --edge it does nothing else once the posts are in: the relay's cost per frame).
        "relay_us_per_frame": 1e6 * cpu_used[4] / max(1, sum(r.frames for r in results)),
        # The HTTP server's CPU over the posts (with --split-http or --edge: all it serves
        # during the level, one post per session).
        "http_ms_per_post": 1000 * cpu_used[5] / sessions,
        "worker_ms_per_session": 1000 * cpu_used[1] / sessions,
        # PostgreSQL and Redis (the machine's, shared with anything else running on it).
        "services_ms_per_session": 1000 * cpu_used[6] / sessions,
        "postgres_ms_per_session": 1000 * cpu_used[7] / sessions,
        "daphne_mb": peak["daphne"],
        "worker_mb": peak["worker"],
    }


def timeline(results: list[Result], started: float) -> list[tuple[int, int, float, float]]:
    """Per second since the sessions were started: tokens received, p50 and p99 latency."""
    buckets: dict[int, list[float]] = {}
    for r in results:
        for at, latency in zip(r.received_at, r.latencies_ms, strict=True):
            buckets.setdefault(int(at - started), []).append(latency)
    return [(s, len(v), pct(v, 50), pct(v, 99)) for s, v in sorted(buckets.items())]


def peak_overlap(results: list[Result]) -> int:
    """The most sessions that were streaming (between first and last token) at one moment."""
    edges = [(r.first, 1) for r in results if r.first] + [(r.last, -1) for r in results if r.first]
    current = best = 0
    for _, step in sorted(edges, key=lambda e: (e[0], -e[1])):
        current += step
        best = max(best, current)
    return best


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,100,200,300,500")
    parser.add_argument("--rate", type=int, default=50, help="tokens per second per session")
    parser.add_argument("--seconds", type=int, default=15, help="streaming time per session")
    parser.add_argument("--server", choices=("daphne", "uvicorn"), default="daphne")
    parser.add_argument(
        "--http-concurrency",
        type=int,
        default=HTTP_CONCURRENCY,
        help="requests and handshakes the clients keep in flight",
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="Celery worker processes (RSS: the largest)"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the server and the workers (repeatable), e.g. "
        "STUDIO_WEB_VIEW_CONCURRENCY=2",
    )
    parser.add_argument(
        "--coalesce-ms", type=int, default=None, help="STUDIO_STREAM_COALESCE_MS (default: ours)"
    )
    parser.add_argument("--profile", type=Path, default=None, help="py-spy each level into DIR")
    parser.add_argument(
        "--profile-seconds",
        type=int,
        default=0,
        help="how long py-spy records (default: --seconds)",
    )
    parser.add_argument(
        "--split-http",
        action="store_true",
        help="a second server process for HTTP (posts), the first keeps the sockets",
    )
    parser.add_argument(
        "--edge",
        action="store_true",
        help="--split-http behind nginx with docker/nginx/edge.conf (the compose topology)",
    )
    parser.add_argument(
        "--nice-http",
        type=int,
        default=0,
        help="with --split-http/--edge: the HTTP server's CPU niceness (every thread of it)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="per second: tokens, p50 and p99 latency, and the cores each part used",
    )
    parser.add_argument(
        "--cprofile",
        type=Path,
        default=None,
        help="cProfile every thread of the server and the worker during each level, into DIR "
        "(bench/cprofile_hook; no py-spy needed)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="seconds: the smallest sizes that take every path (the test suite's)",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.levels, args.rate, args.seconds, args.timeline = "1", 20, 1, True
    if args.profile and not (Path(sys.executable).parent / "py-spy").exists():
        # Not a locked dependency: `uv sync` (scripts/install.sh) removes it from .venv.
        parser.error(f"--profile needs py-spy: uv pip install --python {sys.executable} py-spy")
    return args


def stack_env(args: argparse.Namespace) -> dict[str, str]:
    """The settings this bench starts the stack with (every process of it)."""
    levels = [int(x) for x in args.levels.split(",")]
    env = {
        "STUDIO_PROVIDER_FACTORIES": "test=bench.clocked_provider.factory",
        "CELERY_WORKER_CONCURRENCY": str(max(levels) + 40),
        "STUDIO_SESSION_HEARTBEAT_SECONDS": "5",
        "STUDIO_SESSION_STALE_SECONDS": "60",
        "STUDIO_SESSION_SWEEP_SECONDS": "10",
        "STUDIO_STOP_POLL_MS": "500",
        "LOG_LEVEL": "WARNING",
        # The bench measures throughput: one user opens hundreds of threads at once.
        "STUDIO_RATE_THREAD_CREATE": "off",
        "STUDIO_RATE_MESSAGE_POST": "off",
        "STUDIO_RATE_WS_TICKET": "off",
    }
    if args.coalesce_ms is not None:
        env["STUDIO_STREAM_COALESCE_MS"] = str(args.coalesce_ms)
    for item in args.env:
        name, _, value = item.partition("=")
        env[name.strip()] = value
    return env


def measure(stack: Stack, args: argparse.Namespace) -> None:
    """The bench on a started stack (its workers of its own; the stack is the caller's)."""
    levels = [int(x) for x in args.levels.split(",")]
    tokens = args.rate * args.seconds
    stack.run(
        [
            str(Path(sys.executable)),
            "-c",
            "import django; django.setup()\n" + SEED.format(rate=args.rate, tokens=tokens),
        ]
    )
    if args.split_http or args.edge:
        start_http_server(stack, edge=args.edge)
        if args.nice_http:
            renice(stack.http_server.popen.pid, args.nice_http)  # type: ignore[attr-defined]
    stack.bench_workers = [  # type: ignore[attr-defined]
        stack.worker(f"bench{n}") for n in range(args.workers)
    ]
    for worker in stack.bench_workers:  # type: ignore[attr-defined]
        wait_until(
            lambda w=worker: "ready" in w.log.read_text(),
            "the worker to start",
            timeout=180 if args.cprofile else 30,  # profiled, its start-up is slower
        )
    print(
        f"machine: {len(os.sched_getaffinity(0))} cores, speed probe {speed_probe_ms():.0f} ms; "
        f"{args.rate} tokens/s per session for {args.seconds}s ({tokens} tokens); "
        f"server {args.server}; workers {args.workers}; STUDIO_STREAM_COALESCE_MS="
        f"{stack.env.get('STUDIO_STREAM_COALESCE_MS', 'default')}"
    )
    print("\n(a)+(b) streaming sessions at once")
    header = (
        f"{'sessions':>8} {'ok':>4} {'errors':>6} {'peak':>5} {'tokens':>15} "
        f"{'tok/s/session':>13} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'server MB':>9} {'worker MB':>9} {'frames/tok':>10} {'B/frame':>7} "
        f"{'server cores':>12} {'worker cores':>12} {'client cores':>12}"
    )
    print(header)
    # The first session of each process pays its imports and cold caches (as
    # first_token_bench's uncounted first post): one session, not counted, so level 1
    # is a warm session's wait and not a deploy's first.
    asyncio.run(run_level(stack, 1, tokens, timeout=args.seconds * 4 + 60))
    for level in levels:
        row = asyncio.run(
            run_level(
                stack,
                level,
                tokens,
                timeout=args.seconds * 4 + 60,
                profile=args.profile,
                label=f"{args.server}-{level}",
                seconds=args.profile_seconds or args.seconds,
                http_concurrency=args.http_concurrency,
                cprofile=args.cprofile,
            )
        )
        print(
            f"{row['sessions']:>8} {'yes' if row['ok'] else 'NO':>4} {row['errors']:>6} "
            f"{row['peak']:>5} {row['tokens']:>15} {row['session_rate']:>13.1f} "
            f"{row['p50_ms']:>7.1f} {row['p99_ms']:>7.1f} {row['max_ms']:>7.1f} "
            f"{row['daphne_mb']:>9.0f} {row['worker_mb']:>9.0f} "
            f"{row['frames_per_token']:>10.2f} {row['bytes_per_frame']:>7.0f} "
            f"{row['daphne_cpu']:>12.2f} {row['worker_cpu']:>12.2f} "
            f"{row['client_cpu']:>12.2f}"
        )
        print(
            f"         start (post to first token) p50 {row['start_p50_ms']:.0f} ms, "
            f"p99 {row['start_p99_ms']:.0f} ms; all streaming from "
            f"t={row['steady_from_s']:.1f}s: p99 {row['steady_p99_ms']:.1f} ms; CPU per "
            f"session: server {row['server_ms_per_session']:.1f} ms, "
            f"worker {row['worker_ms_per_session']:.1f} ms, PostgreSQL and Redis "
            f"{row['services_ms_per_session']:.1f} ms (PostgreSQL "
            f"{row['postgres_ms_per_session']:.1f}); sockets' server "
            f"{row['relay_us_per_frame']:.0f} µs per frame"
            + (
                f", HTTP server {row['http_ms_per_post']:.1f} ms per post"
                if row["http_ms_per_post"]
                else ""
            )
        )
        if row["first_error"]:
            print(f"         first error: {row['first_error']}")
        if args.timeline:
            for second, count, p50, p99 in row["timeline"]:
                used = row["cores"].get(second)
                cores = (
                    f"  cores: server {used[0]:.2f} (relay {used[4]:.2f}) worker "
                    f"{used[1]:.2f} client {used[2]:.2f} db+redis {used[6]:.2f} "
                    f"box {used[3]:.2f}"
                    if used
                    else ""
                )
                print(
                    f"         t={second:>3}s {count:>7} tokens  p50 {p50:>7.1f}  "
                    f"p99 {p99:>7.1f}{cores}"
                )
    print(f"\nafter the run: {args.server} {rss_mb(stack.daphne.popen.pid):.0f} MB")


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    stack = Stack(Path(tempfile.mkdtemp(prefix="service-bench-")), server=args.server)
    stack.env.update(stack_env(args))
    if args.cprofile is not None:
        args.cprofile = args.cprofile.resolve()
        args.cprofile.mkdir(parents=True, exist_ok=True)
        hook = ROOT / "bench" / "cprofile_hook"
        stack.env["PYTHONPATH"] = f"{stack.env['PYTHONPATH']}{os.pathsep}{hook}"
        stack.env["START_CPROFILE_DIR"] = str(args.cprofile)
    stack.start()
    try:
        measure(stack, args)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
