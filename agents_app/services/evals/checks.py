"""Evals: datasets of cases, the checks an answer must pass, scores and the comparison of
two runs (docs/observability.md "Evals"). Running the cases is ``agents_app.orchestration.eval_runs``.

A case's checks are typed (``Check``), refused at save with the field named when they are
malformed, so a dataset never holds a check the scorer would ignore.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal

from django.db.models import Sum
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agents_app.base.errors import Invalid
from agents_app.models import (
    EvalCase,
    EvalDataset,
    EvalResult,
    EvalRun,
    Feedback,
    Log,
    Message,
    Thread,
    ThreadSession,
)


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Contains(_Check):
    type: Literal["contains"]
    text: str = Field(min_length=1)
    case_sensitive: bool = False


class NotContains(_Check):
    type: Literal["not_contains"]
    text: str = Field(min_length=1)
    case_sensitive: bool = False


class Matches(_Check):
    type: Literal["matches"]
    pattern: str = Field(min_length=1)


class JsonSchema(_Check):
    type: Literal["json_schema"]
    json_schema: dict[str, Any] = Field(alias="schema")


class ToolCalled(_Check):
    type: Literal["tool_called"]
    name: str = Field(min_length=1)
    # Each given argument must be in the call with this value (others may be there too).
    arguments: dict[str, Any] | None = None


class ToolNotCalled(_Check):
    type: Literal["tool_not_called"]
    name: str = Field(min_length=1)


class StopReason(_Check):
    type: Literal["stop_reason"]
    equals: str = Field(min_length=1)


class Judge(_Check):
    """A judge agent (any agent, on the model the operator chose for it) scores the answer
    from 0 to 1 against ``criteria``; the check passes at ``pass_at`` or above."""

    type: Literal["judge"]
    agent: str = Field(min_length=1)
    criteria: str = Field(min_length=1)
    pass_at: float = Field(0.5, ge=0, le=1)


Check = Annotated[
    Contains | NotContains | Matches | JsonSchema | ToolCalled | ToolNotCalled | StopReason | Judge,
    Field(discriminator="type"),
]
_CHECKS: TypeAdapter[list[Check]] = TypeAdapter(list[Check])


class CaseMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"] = "user"
    content: str = Field(min_length=1, max_length=100_000)


_MESSAGES: TypeAdapter[list[CaseMessage]] = TypeAdapter(list[CaseMessage])


def parse_checks(data: Any) -> list[Any]:
    """The case's checks, typed; ``Invalid`` naming the first bad one."""
    try:
        checks = _CHECKS.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise Invalid(f"checks.{where}: {first['msg']}") from None
    for index, check in enumerate(checks):
        if isinstance(check, Matches):
            try:
                re.compile(check.pattern)
            except re.error as err:
                raise Invalid(f"checks.{index}.pattern: not a regular expression ({err})") from None
        if isinstance(check, JsonSchema):
            import jsonschema  # on use (runtime.tools.toolset says why)

            try:
                jsonschema.Draft202012Validator.check_schema(check.json_schema)
            except jsonschema.SchemaError as err:
                raise Invalid(f"checks.{index}.schema: {err.message}") from None
    return checks


def parse_messages(data: Any) -> list[CaseMessage]:
    try:
        messages = _MESSAGES.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise Invalid(
            f"messages.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        ) from None
    if not messages or messages[-1].role != "user":
        raise Invalid("messages: the last message must be the user's (it is what the case sends)")
    return messages


def case_save(
    *, dataset: EvalDataset, name: str, messages: Any, checks: Any, env: Any = None, notes: str = ""
) -> EvalCase:
    parse_messages(messages)
    parse_checks(checks)
    if env is not None and not (
        isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
    ):
        raise Invalid("env: an object of text values")
    return EvalCase.objects.create(
        dataset=dataset, name=name, messages=messages, checks=checks, env=env or {}, notes=notes
    )


# --- scoring -------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a case's thread produced, as the checks read it."""

    answer: str
    stop_reason: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    cost: Decimal = Decimal(0)
    latency_ms: int | None = None


def outcome_of(thread: Thread) -> Outcome:
    rows = list(
        Message.objects.filter(thread=thread, depth=0)
        .order_by("created_at")
        .values("role", "content", "tool_calls", "created_at", "response_completed_at", "silent")
    )
    answers = [r for r in rows if r["role"] == "assistant" and (r["content"] or "").strip()]
    asked = [r for r in rows if r["role"] == "user" and not r["silent"]]
    calls = [c for r in rows if r["role"] == "assistant" for c in (r["tool_calls"] or [])]
    session = ThreadSession.objects.filter(thread=thread).order_by("-created_at").first()
    cost = Log.objects.filter(thread=thread).aggregate(total=Sum("cost_total"))["total"]
    latency = None
    if answers and asked and answers[-1]["response_completed_at"]:
        latency = int((answers[-1]["response_completed_at"] - asked[-1]["created_at"]) / 1000)
    return Outcome(
        answer=(answers[-1]["content"] or "") if answers else "",
        stop_reason=session.stop_reason if session else "",
        tool_calls=calls,
        cost=Decimal(str(cost or 0)),
        latency_ms=latency,
    )


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    import json

    raw = (call.get("function") or {}).get("arguments") or "{}"
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def check_one(check: Any, outcome: Outcome) -> tuple[bool, str]:
    """Whether ``outcome`` passes ``check`` (judges are scored elsewhere), and why not."""
    text = outcome.answer
    if isinstance(check, Contains | NotContains):
        hay, needle = (
            (text, check.text) if check.case_sensitive else (text.lower(), check.text.lower())
        )
        found = needle in hay
        if isinstance(check, Contains):
            return found, "" if found else f"the answer does not contain {check.text!r}"
        return not found, "" if not found else f"the answer contains {check.text!r}"
    if isinstance(check, Matches):
        ok = re.search(check.pattern, text) is not None
        return ok, "" if ok else f"the answer does not match /{check.pattern}/"
    if isinstance(check, JsonSchema):
        import json

        import jsonschema

        try:
            jsonschema.validate(json.loads(text), check.json_schema)
        except ValueError:
            return False, "the answer is not JSON"
        except jsonschema.ValidationError as err:
            return False, f"the answer does not satisfy the schema: {err.message}"
        return True, ""
    named = [
        c
        for c in outcome.tool_calls
        if (c.get("function") or {}).get("name") == getattr(check, "name", None)
    ]
    if isinstance(check, ToolCalled):
        wanted = check.arguments or {}
        ok = any(all(_arguments(c).get(k) == v for k, v in wanted.items()) for c in named)
        return ok, "" if ok else f"{check.name} was not called" + (
            " with those arguments" if named else ""
        )
    if isinstance(check, ToolNotCalled):
        return not named, "" if not named else f"{check.name} was called"
    if isinstance(check, StopReason):
        ok = outcome.stop_reason == check.equals
        return (
            ok,
            "" if ok else f"stopped with {outcome.stop_reason or 'nothing'}, not {check.equals}",
        )
    raise TypeError(f"not a direct check: {check!r}")


def score(
    checks: list[Any], outcome: Outcome, judged: float | None = None
) -> tuple[bool, float, list[dict[str, Any]]]:
    """(passed, score, per-check results). ``judged``: the judge's score, when one judged."""
    results = []
    for check in checks:
        if isinstance(check, Judge):
            value = judged if judged is not None else 0.0
            ok = judged is not None and value >= check.pass_at
            detail = (
                ""
                if ok
                else (
                    "the judge gave no score" if judged is None else f"the judge gave {value:.2f}"
                )
            )
            results.append({"check": check.type, "passed": ok, "detail": detail, "score": value})
        else:
            ok, detail = check_one(check, outcome)
            results.append({"check": check.type, "passed": ok, "detail": detail})
    if not results:
        return True, 1.0, []
    passed = sum(1 for r in results if r["passed"])
    return passed == len(results), passed / len(results), results


JUDGE_SCORE = re.compile(r"(?<![\d.])(0(?:\.\d+)?|1(?:\.0+)?)(?![\d.])")


def judge_prompt(check: Judge, question: str, answer: str) -> str:
    return (
        "You judge an assistant's answer.\n\n"
        f"Criteria:\n{check.criteria}\n\n"
        f"The question:\n{question}\n\n"
        f"The answer:\n{answer}\n\n"
        "Reply with one number from 0 (fails the criteria) to 1 (meets them fully)."
    )


def judge_score(reply: str) -> float | None:
    found = JUDGE_SCORE.search(reply or "")
    return float(found.group(1)) if found else None


# --- comparing two runs ----------------------------------------------------------------------


def totals(run: EvalRun) -> dict[str, Any]:
    rows = list(run.results.all())
    done = [r for r in rows if r.status in (EvalResult.Status.PASSED, EvalResult.Status.FAILED)]
    latencies = [r.latency_ms for r in done if r.latency_ms is not None]
    return {
        "cases": len(rows),
        "done": len(done),
        "passed": sum(1 for r in done if r.status == EvalResult.Status.PASSED),
        "errors": sum(1 for r in rows if r.status == EvalResult.Status.ERROR),
        "pass_rate": (sum(1 for r in done if r.status == EvalResult.Status.PASSED) / len(done))
        if done
        else None,
        "cost": sum((r.cost for r in rows), Decimal(0)),
        "latency_p50_ms": statistics.median(latencies) if latencies else None,
        "by_status": {s: sum(1 for r in rows if r.status == s) for s in EvalResult.Status.values},
    }


def compare(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    """Two runs side by side: per case (matched by case) and totals."""
    left = {r.case_id: r for r in a.results.select_related("case")}
    right = {r.case_id: r for r in b.results.select_related("case")}
    cases = sorted(set(left) | set(right))
    rows = []
    for case_id in cases:
        ra, rb = left.get(case_id), right.get(case_id)
        case = (ra or rb).case  # type: ignore[union-attr]
        rows.append(
            {
                "case": case,
                "a": ra,
                "b": rb,
                "changed": (ra.status if ra else None) != (rb.status if rb else None),
            }
        )
    return {
        "a": a,
        "b": b,
        "rows": rows,
        "totals": {"a": totals(a), "b": totals(b)},
        "versions": {"a": versions_text(a), "b": versions_text(b)},
    }


def versions_text(run: EvalRun) -> str:
    """``prompts/support-prompt v4`` for what the run pinned (the rest ran at their newest)."""
    named = [f"{key} v{number}" for key, number in sorted((run.versions or {}).items())]
    return ", ".join(named) or "newest versions"


def result_wire(result: EvalResult) -> dict[str, Any]:
    return {
        "case": result.case.name,
        "caseId": result.case_id,
        "status": result.status,
        "score": result.score,
        "checks": result.checks,
        "answer": result.answer,
        "cost": str(result.cost),
        "latencyMs": result.latency_ms,
        "threadId": str(result.thread_id) if result.thread_id else None,
    }


def run_wire(run: EvalRun, *, results: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(run.pk),
        "dataset": run.dataset.name,
        "agent": run.agent,
        "label": run.label,
        "versions": run.versions,
        "status": run.status,
        "concurrency": run.concurrency,
        "createdAt": run.created_at.isoformat(),
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
        "totals": {k: (str(v) if isinstance(v, Decimal) else v) for k, v in totals(run).items()},
    }
    if results:
        data["results"] = [result_wire(r) for r in run.results.select_related("case")]
    return data


# --- cases from real threads ------------------------------------------------------------------


def case_from_reply(*, dataset: EvalDataset, message: Message, name: str = "") -> EvalCase:
    """A case from a real reply: the conversation up to the question it answered, and (from
    a thumbs-down) the person's comment as notes; the operator adds the checks."""
    history = list(
        Message.objects.filter(
            thread_id=message.thread_id, depth=0, silent=False, created_at__lt=message.created_at
        )
        .filter(role__in=("user", "assistant"))
        .exclude(content__isnull=True)
        .exclude(content="")
        .order_by("created_at")
        .values_list("role", "content")
    )
    while history and history[-1][0] != "user":
        history.pop()
    if not history:
        raise Invalid("That reply answers no question of a person: nothing to make a case of")
    notes = " / ".join(
        f.comment for f in Feedback.objects.filter(message=message).exclude(comment="")
    )
    messages = [{"role": role, "content": content} for role, content in history[-20:]]
    title = name or f"From reply {str(message.pk)[:8]}: {(history[-1][1] or '')[:60]}"
    case = EvalCase.objects.create(
        dataset=dataset, name=title[:200], messages=messages, checks=[], notes=notes
    )
    case.source_message_id = message.pk
    case.save(update_fields=["source_message"])
    return case
