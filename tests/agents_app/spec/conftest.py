"""Fixtures the spec tests of this folder share."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    """The test client logged in as staff (``ops`` comes from the test module's fixtures)."""
    client.force_login(ops)
    return client
