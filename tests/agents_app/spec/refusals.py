"""What the save-time refusal tests share: an import that must fail (the staff client is in conftest)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command


def import_refused(root: Path, files: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """Write ``kind/name.json`` files and import them: (stderr lines, the CommandError)."""
    for label, data in files.items():
        path = root / f"{label}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_definitions", str(root), stdout=StringIO(), stderr=err)
    return err.getvalue(), str(exc.value)
