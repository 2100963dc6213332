"""What the few reads written as plain SQL share (issue #21): a UUID as the driver's value.

PostgreSQL takes a ``uuid.UUID``; SQLite stores the 32-digit hex text Django writes. The
field's own conversion gives the right one for whichever database is connected.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection, models

_UUID = models.UUIDField()


def db_uuid(value: Any) -> Any:
    """``value`` (a UUID or its text) as the connected database stores it; ``ValueError``
    for text that is not a UUID."""
    parsed = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    return _UUID.get_db_prep_value(parsed, connection, prepared=False)
