"""Development defaults for secrets: generated once per checkout, never committed.

Production must set ``SECRET_KEY`` and ``STUDIO_ENCRYPTION_KEYS``; without them we
generate values into ``var/dev-secrets.json`` (git-ignored) and warn loudly, so a
fresh clone runs without set-up but nobody mistakes it for a real deployment.
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
from pathlib import Path


def load_or_create(path: Path) -> dict[str, str]:
    if path.exists():
        data: dict[str, str] = json.loads(path.read_text())
        return data
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "STUDIO_ENCRYPTION_KEYS": "k1:"
        + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
    }
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)
    print(
        f"WARNING: generated development secrets in {path}. "
        "Set SECRET_KEY and STUDIO_ENCRYPTION_KEYS in production.",
        file=sys.stderr,
    )
    return data
