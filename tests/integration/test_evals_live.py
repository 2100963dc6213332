"""An eval run on real Celery (issue #42): beat and two workers advance it; one worker is
killed with ``kill -9`` while cases run on it; the run completes, every case scored once and
answered once."""

from __future__ import annotations

import json

import pytest

from tests.integration.stack import Stack, wait_until

pytestmark = pytest.mark.integration

CASES = 6
SETUP = f"""
from django.contrib.auth import get_user_model
from agents_app.models import EvalDataset
from agents_app.services.evals import checks as evals
from agents_app.orchestration.eval_runs import run_start
dataset = EvalDataset.objects.create(name="live-set")
for i in range({CASES}):
    evals.case_save(dataset=dataset, name=f"case {{i}}",
                    messages=[{{"role": "user", "content": f"Question {{i}}?"}}],
                    checks=[{{"type": "contains", "text": "42"}}])
run = run_start(dataset="live-set", agent="eval-slow", concurrency=3,
                user=get_user_model().objects.get(username="alice"))
print(run.pk)
"""


def _results(stack: Stack, run_id: str) -> list[tuple[str, str | None]]:
    return [
        (status, str(thread) if thread else None)
        for status, thread in stack.sql(
            "SELECT status, thread_id FROM agents_app_evalresult WHERE run_id = %s", run_id
        )
    ]


# A run_session task the doomed worker had received but not yet claimed dies with it (the
# broker keeps no copy of a delivered task); the session sweep dispatches its queued
# session again after STUDIO_SESSION_REDISPATCH_SECONDS (120 s in production: as long as this
# test waits). The workers here use a shorter limit, as the stack's heartbeat limits are.
LOST_TASK = {"STUDIO_SESSION_REDISPATCH_SECONDS": "5"}


def test_an_eval_run_completes_once_through_a_worker_kill(stack: Stack, worker) -> None:  # type: ignore[no-untyped-def]
    doomed = worker("evals-doomed", env=LOST_TASK)
    worker("evals-beat", beat=True, env=LOST_TASK)
    out = stack.python(SETUP)
    run_id = out.strip().splitlines()[-1]

    def in_flight_on_the_doomed_worker() -> bool:
        rows = stack.sql(
            "SELECT count(*) FROM agents_app_threadsession s JOIN agents_app_evalresult r"
            " ON r.thread_id = s.thread_id WHERE r.run_id = %s AND s.status = 'running'"
            " AND s.owner LIKE %s",
            run_id,
            f"%:{doomed.popen.pid}:%",  # services.sessions.lifecycle.owner_id: host:pid:suffix
        )
        return rows[0][0] > 0

    wait_until(in_flight_on_the_doomed_worker, "a case running on the doomed worker", timeout=60)
    doomed.kill_hard()

    def finished() -> str | None:
        status = stack.sql("SELECT status FROM agents_app_evalrun WHERE id = %s", run_id)[0][0]
        return status if status != "running" else None

    assert wait_until(finished, "the run to finish", timeout=120) == "completed"
    results = _results(stack, run_id)
    assert len(results) == CASES and {status for status, _ in results} == {"passed"}, results
    threads = [thread for _, thread in results]
    assert len(set(threads)) == CASES  # one thread per case: no case started twice
    for thread in threads:
        answers = stack.sql(
            "SELECT content FROM agents_app_message WHERE thread_id = %s AND role = 'assistant'",
            thread,
        )
        assert [a for (a,) in answers] == ["The answer is 42."], (thread, answers)
    with stack.client("alice") as alice:
        refused = alice.get(f"/api/evals/runs/{run_id}")
        assert refused.status_code == 403  # alice holds no eval permission
    detail = stack.sql("SELECT checks FROM agents_app_evalresult WHERE run_id = %s", run_id)
    assert all(json.loads(c) if isinstance(c, str) else c for (c,) in detail)
