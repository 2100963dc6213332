"""Documents these tests upload are stored under a temporary media root."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings


@pytest.fixture(scope="package", autouse=True)
def knowledge_media(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with override_settings(MEDIA_ROOT=str(tmp_path_factory.mktemp("knowledge-media"))):
        yield
