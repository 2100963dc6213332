"""``studio.process_tuning.settle``: what Daphne and the workers run after start-up (#21)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import pytest

from studio.process_tuning import gc_thresholds, settle, switch_interval_ms
from tests.agents_app.process.manage_support import check_at_start


@pytest.fixture
def interpreter() -> Any:
    interval = sys.getswitchinterval()
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    sys.setswitchinterval(interval)
    gc.set_threshold(*thresholds)


def test_settle_freezes_start_up_objects_and_shortens_the_gil_switch(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STUDIO_GC_FREEZE", raising=False)
    monkeypatch.delenv("STUDIO_GIL_SWITCH_MS", raising=False)
    monkeypatch.delenv("STUDIO_GC_THRESHOLDS", raising=False)
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    settle()
    assert gc.get_freeze_count() > 0
    assert sys.getswitchinterval() == pytest.approx(0.001)
    assert gc.get_threshold() == (700, 10, 10)  # Python's own unless asked


def test_both_settings_can_be_turned_off_or_changed(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUDIO_GC_FREEZE", "false")
    monkeypatch.setenv("STUDIO_GIL_SWITCH_MS", "2.5")
    gc.unfreeze()
    settle()
    assert gc.get_freeze_count() == 0
    assert sys.getswitchinterval() == pytest.approx(0.0025)


def test_collection_thresholds_are_set_when_asked(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUDIO_GC_THRESHOLDS", "2000, 20,50")
    settle()
    assert gc.get_threshold() == (2000, 20, 50)
    monkeypatch.setenv("STUDIO_GC_THRESHOLDS", "5000")
    assert gc_thresholds() == (5000,)


_THRESHOLDS = ("STUDIO_GC_THRESHOLDS", gc_thresholds, "one to three positive")
_SWITCH = ("STUDIO_GIL_SWITCH_MS", switch_interval_ms, "a number")


@pytest.mark.parametrize(
    ("setting", "raw"),
    [(_THRESHOLDS, raw) for raw in ["0", "700,10,-1", "700,,10", "a,b", "1,2,3,4", "700.5"]]
    + [(_SWITCH, raw) for raw in ["-1", "fast", "nan"]],
)
def test_an_interpreter_setting_outside_what_it_takes_is_refused(
    setting: tuple[str, Callable[[], Any], str], raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, read, what = setting
    monkeypatch.setenv(name, raw)
    with pytest.raises(ValueError, match=f"{name} must be {what}"):
        read()


@pytest.mark.parametrize(
    ("name", "raw"), [("STUDIO_GC_THRESHOLDS", "lots"), ("STUDIO_GIL_SWITCH_MS", "soon")]
)
def test_every_process_refuses_a_bad_interpreter_setting_at_start(name: str, raw: str) -> None:
    """The settings check both, so a worker fails at start, not after its imports."""
    done = check_at_start(**{name: raw})
    assert done.returncode != 0
    assert f"ImproperlyConfigured: {name} must be" in done.stderr
