"""A misconfigured keyring or duplicated code names stop start-up with a clear message."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from agents_app.base import code_registry
from agents_app.checks import (
    check_code_registry,
    check_encryption_keyring,
    check_retired_environment,
)
from tests.agents_app.process.manage_support import check_at_start


def test_valid_keyring_passes() -> None:
    assert check_encryption_keyring() == []


def test_malformed_keyring_is_reported_by_id() -> None:
    with override_settings(STUDIO_ENCRYPTION_KEYS="not-a-key"):
        errors = check_encryption_keyring()
    assert [e.id for e in errors] == ["agents.E001"]
    assert "id:base64key" in errors[0].msg


def test_duplicate_tool_names_are_a_startup_error(tmp_path: Path) -> None:
    tools = tmp_path / "agents" / "tools"
    tools.mkdir(parents=True)
    body = (
        "from runtime.tools.registry import define_tool\n"
        "@define_tool('Say hi', None, name='hello')\n"
        "async def {fn}(state):\n    return 'hi'\n"
    )
    (tools / "one.py").write_text(body.format(fn="one"))
    (tools / "two.py").write_text(body.format(fn="two"))
    code_registry.reset_registry()
    try:
        with override_settings(STUDIO_AGENTS_DIRS=[str(tmp_path)]):
            errors = check_code_registry()
    finally:
        code_registry.reset_registry()
    assert [e.id for e in errors] == ["agents.E002"]
    assert "hello" in errors[0].msg


def test_a_retired_variable_stops_the_start_up_with_what_replaced_it() -> None:
    """``CELERY_VISIBILITY_TIMEOUT`` tuned a redelivery the broker no longer does: set, it
    stops ``manage.py check`` (and so ``migrate``, compose's first step) instead of being
    read by nothing."""
    done = check_at_start(CELERY_VISIBILITY_TIMEOUT="600")
    assert done.returncode != 0
    assert "agents.E021" in done.stderr
    assert "CELERY_VISIBILITY_TIMEOUT is no longer used" in done.stderr
    assert "STUDIO_SESSION_REDISPATCH_SECONDS" in done.stderr
    assert "Traceback" not in done.stderr


def test_without_retired_variables_the_check_is_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CELERY_VISIBILITY_TIMEOUT", raising=False)
    assert check_retired_environment() == []
