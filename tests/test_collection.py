"""What the root conftest leaves out of collection (``pytest_ignore_collect``): the
integration and browser folders only when ``-m`` deselects every test they could hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import _leaves_out, pytest_ignore_collect

INTEGRATION = {"integration"}
BROWSER = {"integration", "browser"}


@pytest.mark.parametrize(
    ("markexpr", "marks", "left_out"),
    [
        ("not integration", INTEGRATION, True),
        ("not integration", BROWSER, True),
        ("not browser", BROWSER, True),
        ("not browser", INTEGRATION, None),
        ("", INTEGRATION, None),
        ("integration", INTEGRATION, None),
        # A test of the integration folder may carry a browser mark of its own.
        ("browser", INTEGRATION, None),
        ("not integration and not postgresql", INTEGRATION, True),
        # A test of the folder with another mark could match: collected.
        ("not integration or postgresql", INTEGRATION, None),
        ("not integration or postgresql(reason='x')", INTEGRATION, None),
        ("postgresql", INTEGRATION, None),
    ],
)
def test_the_slow_folders_are_left_out_only_when_no_test_of_theirs_can_match(
    markexpr: str, marks: set[str], left_out: bool | None
) -> None:
    assert _leaves_out(markexpr, marks=marks) is left_out


def test_only_the_top_level_slow_folders_are_considered(pytestconfig: pytest.Config) -> None:
    tests = Path(__file__).resolve().parent
    pytestconfig.option.markexpr, before = "not integration", pytestconfig.option.markexpr
    try:
        assert pytest_ignore_collect(tests / "integration", pytestconfig) is True
        assert pytest_ignore_collect(tests / "browser", pytestconfig) is True
        assert pytest_ignore_collect(tests / "agents_app" / "integration", pytestconfig) is None
        assert pytest_ignore_collect(tests / "agents_app", pytestconfig) is None
    finally:
        pytestconfig.option.markexpr = before


@pytest.mark.sweep
def test_a_sweep_counts_as_integration(request: pytest.FixtureRequest) -> None:
    """This test is itself a sweep by its mark. Were a sweep not counted as integration, the
    fast loop (``-m "not integration"``) would select it, and it would fail there."""
    assert request.node.get_closest_marker("integration") is not None
    assert "integration" in {mark.name for mark in request.node.iter_markers()}
