"""Every bench runs, in seconds, in its smoke mode (issue #58): ``python bench/<name>.py
--smoke``. A bench nothing runs rots unnoticed: ``messages_page_bench.py``'s COPY failed on a
NOT NULL column added after it was written, and nobody knew. Each case checks that the bench
ends well and prints the figures it prints at full size; the figures themselves are the
bench's business.

How each runs, to keep the file within its budget (60 s on one worker; a process start with
Django's imports costs 3 to 4 s of CPU here, a server or a worker as much again):

- the benches that start processes of their own or a database of their own: as a person
  runs them, ``python bench/<name>.py --smoke`` in a process of its own;
- the benches that start nothing (the engine's, and two that need only Django's settings and
  Redis): their ``main(["--smoke"])`` in this process;
- the three that need a stack with Daphne (the messages page, the first token, the service
  bench): ``measure(stack, parse(["--smoke"]))`` one after another on one stack started with
  the settings all three ask for (``stack_env``), and one worker for the two that start one.

A new file in ``bench/`` fails ``test_every_bench_has_a_smoke_case`` until it has a case here
(or a line in ``NOT_BENCHES`` saying why it is not a bench).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.integration.stack import PG_ADMIN_URL, ROOT, Process, Stack

pytestmark = pytest.mark.timeout(120)

BENCH = ROOT / "bench"
NUMBER = r"-?[\d.]+"

# What each bench's smoke run must print: one pattern per figure (re.MULTILINE).
SMOKE: dict[str, list[str]] = {
    "engine_bench.py": [
        rf"ms per step:\s+p50 {NUMBER}\s+p90 {NUMBER}",
        rf"p50 by position:\s+steps 1-20 {NUMBER}\s+steps 2-21 {NUMBER}",
        rf"store calls/step: {NUMBER}",
    ],
    "tracing_bench.py": [
        rf"round 1 tracing off p50 {NUMBER} ms/step\s+p90 {NUMBER}",
        rf"round 1 tracing on\s+p50 {NUMBER} ms/step\s+p90 {NUMBER}",
    ],
    "image_request_bench.py": [
        rf"^\s+{vendor}\s+total\s+{NUMBER} ms .*body {NUMBER} MB$"
        for vendor in ("openai", "responses", "anthropic", "google")
    ],
    "provider_bench.py": [
        rf"^{vendor}\s+{NUMBER}\s+{NUMBER}\s+\d+$"
        for vendor in ("openai", "openrouter", "anthropic", "google")
    ],
    "run_code_bench.py": [
        rf"^trivial module\s+n=1\s+p50=\s*{NUMBER} ms",
        rf"^bridged async import\s+n=1\s+p50=\s*{NUMBER} ms",
    ],
    "langgraph_compare.py": [
        # LangGraph's side where it is installed, else our side, saying so.
        r"^LangGraph \+ AsyncPostgresSaver|^LangGraph is not installed .*: our side only",
        rf"ms per step:\s+p50 {NUMBER}\s+p90 {NUMBER}",
    ],
    "publish_bench.py": [
        rf"send_task: {NUMBER} ms CPU per publish, \d+ Python calls",
        rf"direct: {NUMBER} ms CPU per publish, \d+ Python calls",
    ],
    "token_path_bench.py": [rf"CPU {NUMBER} µs per token .* {NUMBER} frames per token"],
    "django_engine_bench.py": [
        r"DjangoStore on PostgreSQL, LiveSink \(redis layer\)",
        rf"ms per step:\s+p50 {NUMBER}\s+p90 {NUMBER}",
        rf"SQL statements/step: {NUMBER}",
    ],
    "knowledge_bench.py": [
        rf"^\| {ranking} \| {NUMBER} \| {NUMBER} \|$"
        for ranking in ("full_text", "vectors", "hybrid")
    ]
    + [
        rf"ingestion, corpus: {NUMBER} passages/s",
        rf"ingestion, 1-page PDF: {NUMBER} pages/s",
        rf"search over 20 synthetic chunks: p50 {NUMBER} ms, p99 {NUMBER} ms",
    ],
    "effects_bench.py": [
        rf"claim SELECT, nothing due: +p50 {NUMBER} ms",
        rf"claim SELECT, 1,000 due: +p50 {NUMBER} ms",
        rf"recovery query: +p50 {NUMBER} ms",
        r"^ran 3 of 3 effects",
        rf"lateness, handler start - due: p50 {NUMBER} ms, p99 {NUMBER} ms",
    ],
    "messages_page_bench.py": [
        rf"newest 100 of +3 messages: p50 {NUMBER} ms, p99 {NUMBER} ms",
        rf"thread list, 2 threads: p50 {NUMBER} ms",
        rf"floor: GET /api/auth/csrf: p50 {NUMBER} ms",
    ],
    "first_token_bench.py": [
        rf"^\s+{part}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$"
        for part in ("post", "claim", "start", "relay", "total", "answer")
    ],
    "service_bench.py": [
        # Level 1: every token arrived, no error.
        rf"^\s+1\s+yes\s+0\s+1\s+20/20\s+{NUMBER}\s+{NUMBER}",
        rf"start \(post to first token\) p50 {NUMBER} ms",
        r"t=\s*\d+s\s+\d+ tokens",
    ],
    "post_flood.py": [
        r"^flood: \{",
        r"^after retrying refused posts: \{",
        r'"stored more than once": 0',
    ],
    "schedules_bench.py": [
        r"^runs: [1-9]\d*, .*duplicated due times: 0",
        rf"claim - due: p50 {NUMBER} ms",
        rf"started - due: p50 {NUMBER} ms",
    ],
}

# Files in bench/ that measure nothing themselves.
NOT_BENCHES = {
    "clocked_provider.py": "the provider the streaming benches load into their workers",
    "profile_summary.py": "prints a py-spy recording that a bench's --profile wrote",
    "start_profile.py": "prints a cProfile that service_bench.py --cprofile wrote",
    "engine_ratio.py": "runs django_engine_bench.py and langgraph_compare.py by turns; their"
    " smoke cases hold the 'ms per step' line it reads",
}


def test_every_bench_has_a_smoke_case() -> None:
    files = {path.name for path in BENCH.glob("*.py")}
    missing = sorted(files - SMOKE.keys() - NOT_BENCHES.keys())
    assert not missing, (
        f"bench/{missing[0]} has no smoke case: give it a --smoke flag and add it to SMOKE in "
        "tests/integration/test_bench_smoke.py (or to NOT_BENCHES, saying why it is not a bench)"
    )
    assert SMOKE.keys() | NOT_BENCHES.keys() <= files, "a case names a bench that is gone"


# Benches that start no process and no database: ``main(["--smoke"])`` here (publish and
# token path set Django up only where nobody has: here they run on the suite's settings).
IN_THIS_PROCESS = {
    "engine_bench.py",
    "tracing_bench.py",
    "image_request_bench.py",
    "provider_bench.py",
    "run_code_bench.py",
    "langgraph_compare.py",
    "publish_bench.py",
    "token_path_bench.py",
}
# Benches that run on a started stack: ``measure(stack, parse(["--smoke"]))`` on one shared
# stack (``stack_env`` says what each starts it with).
ON_ONE_STACK = {"messages_page_bench.py", "first_token_bench.py", "service_bench.py"}
IN_A_PROCESS = SMOKE.keys() - IN_THIS_PROCESS - ON_ONE_STACK


def _bench(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name.removesuffix('.py')}")


def _check(name: str, output: str, shown: str = "") -> None:
    absent = [p for p in SMOKE[name] if not re.search(p, output, re.MULTILINE)]
    assert not absent, f"bench/{name} --smoke did not print {absent}\n{shown or output}"


class OneWorkerStack(Stack):
    """The shared stack, where every bench's ``worker(...)`` is one worker: a second start
    costs seconds and runs nothing the first did not (each bench seeds its own agent, and
    the worker reads definitions per session). It starts with the database, beside the
    server (both starts are mostly imports); the benches wait for it as for their own."""

    shared: Process | None = None

    def create_database(self) -> None:
        super().create_database()
        self.shared = super().worker("bench")

    def worker(
        self, name: str, *, beat: bool = False, env: dict[str, str] | None = None
    ) -> Process:
        if self.shared is None or self.shared.popen.poll() is not None:
            self.shared = super().worker(name, beat=beat, env=env)
        return self.shared


@pytest.fixture(scope="module")
def bench_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    wanted: dict[str, tuple[str, str]] = {}
    for name in sorted(ON_ONE_STACK):
        bench = _bench(name)
        for setting, value in bench.stack_env(bench.parse(["--smoke"])).items():
            first, earlier = wanted.setdefault(setting, (name, value))
            assert earlier == value, f"{first} and {name} cannot share a stack: {setting}"
    stack = OneWorkerStack(tmp_path_factory.mktemp("bench-stack"))
    stack.env.update({setting: value for setting, (_, value) in wanted.items()})
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


@pytest.mark.parametrize("name", sorted(IN_A_PROCESS), ids=lambda name: name.removesuffix(".py"))
def test_the_bench_runs_in_smoke_mode_in_a_process_of_its_own(name: str, tmp_path: Path) -> None:
    redis = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        # A bench that sets Django up in its own process keeps the development secrets it
        # generates here, not in the checkout's var/.
        "STUDIO_VAR_DIR": str(tmp_path / "var"),
        "BENCH_POSTGRES_URL": PG_ADMIN_URL,
        "TEST_REDIS_URL": redis,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the test suite's: each bench picks its own
    extra = ["--redis", redis] if name == "django_engine_bench.py" else []
    done = subprocess.run(
        [sys.executable, str(BENCH / name), "--smoke", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    shown = f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"bench/{name} --smoke ended with {done.returncode}\n{shown}"
    _check(name, done.stdout, shown)


@pytest.mark.parametrize("name", sorted(IN_THIS_PROCESS), ids=lambda name: name.removesuffix(".py"))
def test_the_bench_runs_in_smoke_mode_in_this_process(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _bench(name).main(["--smoke"])
    _check(name, capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(ON_ONE_STACK), ids=lambda name: name.removesuffix(".py"))
def test_the_bench_runs_in_smoke_mode_on_the_shared_stack(
    name: str, bench_stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = _bench(name)
    try:
        bench.measure(bench_stack, bench.parse(["--smoke"]))
    except Exception:
        print(bench_stack.tails())  # the server's and the worker's logs
        raise
    _check(name, capsys.readouterr().out)
