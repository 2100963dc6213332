"""``studio.process_tuning.settle``: what Daphne and the workers run after start-up (#21)."""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest

from studio.process_tuning import settle


@pytest.fixture
def interpreter() -> Any:
    interval = sys.getswitchinterval()
    yield
    gc.unfreeze()
    sys.setswitchinterval(interval)


def test_settle_freezes_start_up_objects_and_shortens_the_gil_switch(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STUDIO_GC_FREEZE", raising=False)
    monkeypatch.delenv("STUDIO_GIL_SWITCH_MS", raising=False)
    gc.unfreeze()
    settle()
    assert gc.get_freeze_count() > 0
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_both_settings_can_be_turned_off_or_changed(
    interpreter: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUDIO_GC_FREEZE", "false")
    monkeypatch.setenv("STUDIO_GIL_SWITCH_MS", "2.5")
    gc.unfreeze()
    settle()
    assert gc.get_freeze_count() == 0
    assert sys.getswitchinterval() == pytest.approx(0.0025)
