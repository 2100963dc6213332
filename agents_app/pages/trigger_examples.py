"""A ready-to-run request for a new trigger (issue #55): a JSON body with every field its
template uses, and a curl command that posts it (signed, when the trigger checks
signatures). Shown once, with the URL, when the trigger is created."""

from __future__ import annotations

import json
import shlex
from typing import Any

from agents_app.services.automation.triggers import _FIELD


def example_body(template: str) -> dict[str, Any]:
    """``Order {{ order.id }} for {{ customer }}`` → ``{"order": {"id": "…"}, "customer": "…"}``:
    the fields the template reads, each with a placeholder value (a number in a path is a list
    index)."""
    body: dict[str, Any] = {}
    for name in _FIELD.findall(template):
        parts = name.split(".")
        node: Any = body
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            child: Any = (
                f"example {parts[-1]}" if last else ([] if parts[index + 1].isdigit() else {})
            )
            if isinstance(node, list):
                position = int(part) if part.isdigit() else 0
                while len(node) <= position:
                    node.append(child if last else type(child)())
                node = node[position]
            elif isinstance(node, dict):
                node = node.setdefault(part, child)
            else:  # the same name used as text and as an object: keep the first
                break
    return body


def curl_example(url: str, template: str, secret_env: str = "") -> str:
    """A shell command that posts the example body to ``url``; with a signing secret, the
    signature the trigger checks (``Webhook-Timestamp``, ``Webhook-Signature``) is computed
    with openssl from ``$SECRET``."""
    body = json.dumps(example_body(template) or {"text": "example"}, ensure_ascii=False)
    if not secret_env:
        return (
            f"curl -X POST {shlex.quote(url)} \\\n"
            "  -H 'Content-Type: application/json' \\\n"
            f"  --data-raw {shlex.quote(body)}"
        )
    return (
        f"# SECRET is the value of the env value {secret_env}\n"
        f"BODY={shlex.quote(body)}\n"
        "TS=$(date +%s)\n"
        'SIG=$(printf \'%s.%s\' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" '
        "| sed 's/^.* //')\n"
        f"curl -X POST {shlex.quote(url)} \\\n"
        "  -H 'Content-Type: application/json' \\\n"
        '  -H "Webhook-Timestamp: $TS" \\\n'
        '  -H "Webhook-Signature: v1=$SIG" \\\n'
        '  --data-raw "$BODY"'
    )
