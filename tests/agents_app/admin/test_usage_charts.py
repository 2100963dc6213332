"""The dashboard's chart figures (pages.usage_charts), computed in the database and
checked against figures computed here from the seeded rows; and the dashboard page."""

from __future__ import annotations

import random
import statistics
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from agents_app.base.errors import Invalid
from agents_app.models import Agent, LanguageModel, Log, Prompt, Thread, ThreadSession
from agents_app.pages.usage_charts import (
    DateRange,
    latency_percentiles_portable,
    latency_percentiles_postgres,
    model_health,
    parse_range,
    series,
    sessions_by_day,
    usage_by_day,
)

pytestmark = pytest.mark.django_db
TODAY = date(2026, 3, 10)
RANGE = DateRange(date(2026, 3, 8), date(2026, 3, 10))


def _us(day: int, hour: int = 12) -> int:
    return int(datetime(2026, 3, day, hour, tzinfo=UTC).timestamp() * 1_000_000)


@pytest.fixture
def threads() -> dict[str, Thread]:
    model = LanguageModel.objects.create(name="alpha", provider="test", model="t")
    prompt = Prompt.objects.create(name="p", model=model, text="Hi.")
    out = {}
    for name in ("shop", "desk"):
        agent = Agent.objects.create(name=name, side_a_prompt=prompt)
        out[name] = Thread.objects.create(agent=agent, origin_agent=agent)
    return out


def _log(thread: Thread, model: str, day: int, **fields: Any) -> Log:
    return Log.objects.create(
        thread=thread,
        model=model,
        kind=fields.pop("kind", Log.Kind.LLM),
        created_at=_us(day, fields.pop("hour", 12)),
        **fields,
    )


@pytest.fixture
def seeded(threads: dict[str, Thread]) -> None:
    shop, desk = threads["shop"], threads["desk"]
    _log(shop, "alpha", 8, cost_total=Decimal("0.10"), total_tokens=100, latency_ms=100)
    _log(shop, "alpha", 8, hour=23, cost_total=Decimal("0.05"), total_tokens=200, latency_ms=300)
    _log(
        desk,
        "alpha",
        9,
        hour=0,
        cost_total=Decimal("0.20"),
        total_tokens=50,
        latency_ms=500,
        error="boom",
    )
    for latency in (1000, 2000, 4000):
        _log(shop, "beta", 9, cost_total=Decimal("0.01"), total_tokens=10, latency_ms=latency)
    _log(shop, "beta", 10, error="timeout")  # a failed request with no latency
    # Outside the range or not a model request: never counted.
    _log(shop, "alpha", 7, hour=23, cost_total=Decimal("9"), total_tokens=9999, latency_ms=9)
    _log(shop, "alpha", 11, hour=0, cost_total=Decimal("9"), total_tokens=9999, latency_ms=9)
    _log(shop, "alpha", 9, kind=Log.Kind.TOOL, tool_name="x", latency_ms=99999)


def test_usage_per_day_per_model_and_per_agent(seeded: None) -> None:
    by_model = {
        (r.day.day, r.key): (r.cost, r.tokens, r.requests) for r in usage_by_day(RANGE, "model")
    }
    assert by_model == {
        (8, "alpha"): (Decimal("0.15"), 300, 2),
        (9, "alpha"): (Decimal("0.20"), 50, 1),
        (9, "beta"): (Decimal("0.03"), 30, 3),
        (10, "beta"): (Decimal("0"), 0, 1),
    }
    by_agent = {(r.day.day, r.key): (r.cost, r.requests) for r in usage_by_day(RANGE, "agent")}
    assert by_agent == {
        (8, "shop"): (Decimal("0.15"), 2),
        (9, "desk"): (Decimal("0.20"), 1),
        (9, "shop"): (Decimal("0.03"), 3),
        (10, "shop"): (Decimal("0"), 1),
    }
    per_day = series(usage_by_day(RANGE, "agent"), RANGE.days, "requests")
    assert per_day == {"shop": [2.0, 3.0, 1.0], "desk": [0.0, 1.0, 0.0]}


def test_error_rate_and_latency_percentiles_per_model(seeded: None) -> None:
    health = {h.model: h for h in model_health(RANGE)}
    assert [(h.model, h.requests, h.errors) for h in model_health(RANGE)] == [
        ("beta", 4, 1),
        ("alpha", 3, 1),
    ]
    assert health["beta"].error_rate == 0.25
    # percentile_cont: position f·(n−1) of the sorted values, linearly interpolated.
    assert health["alpha"].p50_ms == 300 and health["alpha"].p95_ms == pytest.approx(480)
    assert health["beta"].p50_ms == 2000 and health["beta"].p95_ms == pytest.approx(3800)


@pytest.mark.parametrize("compute", [latency_percentiles_postgres, latency_percentiles_portable])
def test_both_percentile_paths_agree_with_statistics_on_many_rows(
    threads: dict[str, Thread], compute: Any
) -> None:
    if compute is latency_percentiles_postgres and connection.vendor != "postgresql":
        pytest.skip("percentile_cont exists only on PostgreSQL (the portable path is tested)")
    rng = random.Random(20)
    expected = {}
    for model, count in (("alpha", 37), ("beta", 2), ("gamma", 1)):
        values = [rng.randint(20, 9000) for _ in range(count)]
        for value in values:
            _log(threads["shop"], model, rng.choice((8, 9, 10)), latency_ms=value)
        cuts = (
            statistics.quantiles(values, n=20, method="inclusive")
            if count > 1
            else [values[0]] * 19
        )
        expected[model] = (cuts[9], cuts[18])
    got = compute(RANGE)
    assert set(got) == set(expected)
    for model, (p50, p95) in expected.items():
        assert got[model][0] == pytest.approx(p50), model
        assert got[model][1] == pytest.approx(p95), model


def test_sessions_started_per_day(threads: dict[str, Thread]) -> None:
    for day, status in ((8, "completed"), (9, "failed"), (9, "completed"), (12, "completed")):
        session = ThreadSession.objects.create(thread=threads["desk"], status=status)
        ThreadSession.objects.filter(pk=session.pk).update(
            created_at=datetime(2026, 3, day, 9, tzinfo=UTC)
        )
    assert sessions_by_day(RANGE) == {date(2026, 3, 8): 1, date(2026, 3, 9): 2}


def test_date_range_defaults_and_plain_word_errors() -> None:
    assert parse_range(None, None, TODAY) == DateRange(date(2026, 2, 25), TODAY)
    assert parse_range("2026-03-01", "", TODAY) == DateRange(date(2026, 3, 1), TODAY)
    assert parse_range("", "2026-03-05", TODAY) == DateRange(date(2026, 2, 20), date(2026, 3, 5))
    cases = {
        ("2026-03-09", "2026-03-01"): "The start date is after the end date: swap them.",
        (
            "yesterday",
            "",
        ): "The start date “yesterday” is not a date: write it as year-month-day, for example 2026-03-01.",
        ("2026-03-11", "2026-03-20"): "The start date is in the future: nothing has happened yet.",
        ("2024-01-01", "2026-03-10"): "Choose at most 366 days at a time.",
    }
    for (start, end), message in cases.items():
        with pytest.raises(Invalid) as caught:
            parse_range(start, end, TODAY)
        assert caught.value.message == message


def test_dashboard_draws_the_charts_and_explains_a_bad_range(
    seeded: None, admin_client: Client
) -> None:
    page = admin_client.get("/admin/?from=2026-03-08&to=2026-03-10").content.decode()
    for chart in (
        "cost-by-model",
        "tokens-by-agent",
        "requests-by-model",
        "error-rate",
        "latency",
        "sessions",
    ):
        assert f'id="chart-{chart}"' in page
    assert '<svg class="studio-chart-svg"' in page
    assert 'id="range-spend">$0.38<' in page  # 0.15 + 0.20 + 0.03
    assert 'id="range-requests">7<' in page
    assert "25.0% (1 of 4)" in page and "p95 3.8 s" in page
    bad = admin_client.get("/admin/?from=2026-03-09&to=2026-03-01").content.decode()
    assert "The start date is after the end date: swap them." in bad
    assert " style=" not in page.split("<body")[1]


def test_chart_text_is_escaped_and_numbers_read_for_people(
    threads: dict[str, Thread], admin_client: Client
) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    _log(threads["shop"], hostile, 9, cost_total=Decimal("1234.5"), total_tokens=1_234_567)
    page = admin_client.get("/admin/?from=2026-03-08&to=2026-03-10").content.decode()
    assert hostile not in page
    assert "&lt;img src=x onerror=" in page
    assert 'id="range-spend">$1,234.50<' in page
    assert 'id="range-tokens">1,234,567<' in page


def test_axis_steps_and_formats() -> None:
    from agents_app.admin.charts import axis_top
    from agents_app.admin.dashboard_charts import compact, duration

    assert axis_top(0.063, 0.01) == pytest.approx(0.08)  # $0.02 steps: whole cents
    assert axis_top(0.001, 0.01) == pytest.approx(0.04)  # never a step under a cent
    assert axis_top(3, 1) == 4 and axis_top(4500, 1) == 8000 and axis_top(0, 1) == 4
    assert [compact(v) for v in (950, 12_000, 1_500_000)] == ["950", "12k", "1.5M"]
    assert [duration(v) for v in (None, 850, 1234.0)] == ["–", "850 ms", "1.2 s"]


def test_a_first_visit_shows_no_empty_charts(admin_client: Client) -> None:
    """Issue #40 item 11: a new instance's dashboard was seven empty charts with the
    shortcuts 1,550 px down; with no model requests in the range it says so in one line."""
    page = admin_client.get("/admin/").content.decode()
    assert 'id="usage-empty"' in page and "nothing to chart yet" in page
    assert 'id="chart-' not in page and '<svg class="studio-chart-svg"' not in page
    # Issue #55 item 7: what to do comes first, the figures after it.
    assert page.index('id="studio-shortcuts"') < page.index('id="usage-empty"')
    assert page.index('id="studio-attention"') < page.index('id="usage-empty"')
