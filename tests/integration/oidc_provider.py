"""A real OpenID provider for the sign-in tests: panva's certified ``oidc-provider`` (npm,
pinned in ``tests/oidc_provider/package-lock.json``, installed by
``scripts/ensure-oidc-provider.sh``), run by ``tests/oidc_provider/provider.mjs`` with Node on
127.0.0.1. Its users, their groups and a one-shot tampering of the next ID token are set
through two loopback-only control routes (see provider.mjs)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.integration.stack import ROOT, Process, free_port, wait_until

PROVIDER_DIR = ROOT / "tests" / "oidc_provider"


@dataclass
class OidcProvider:
    tmp: Path
    redirect_uris: list[str]
    post_logout_redirect_uris: list[str]
    users: dict[str, dict[str, Any]]
    client_id: str = "studio-tests"
    client_secret: str = field(default_factory=lambda: "client-secret-" + os.urandom(12).hex())
    port: int = field(default_factory=free_port)
    process: Process | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> OidcProvider:
        node = shutil.which("node")
        if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").exists():
            raise RuntimeError(
                "node or oidc-provider is missing: run scripts/ensure-oidc-provider.sh"
            )
        import json

        log = self.tmp / "oidc-provider.log"
        popen = subprocess.Popen(
            [node, "provider.mjs"],
            cwd=PROVIDER_DIR,
            env={
                "PATH": os.environ.get("PATH", ""),
                "PORT": str(self.port),
                "CLIENT_ID": self.client_id,
                "CLIENT_SECRET": self.client_secret,
                "REDIRECT_URIS": ",".join(self.redirect_uris),
                "POST_LOGOUT_REDIRECT_URIS": ",".join(self.post_logout_redirect_uris),
                "USERS": json.dumps(self.users),
            },
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.process = Process("oidc-provider", popen, log)
        wait_until(
            lambda: (
                httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2).status_code
                == 200
            ),
            "the OpenID provider to answer",
            timeout=30,
        )
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def set_users(self, users: dict[str, dict[str, Any]]) -> None:
        """Replace the provider's users (their groups, "upstream")."""
        self.users = users
        httpx.post(f"{self.issuer}/test/users", json=users, timeout=5).raise_for_status()

    def tamper(self, mode: str) -> None:
        """Spoil the next sign-in: ``state`` (the redirect back), or the ID token: ``nonce``,
        ``expired`` or ``signature``."""
        httpx.post(f"{self.issuer}/test/tamper", json={"mode": mode}, timeout=5).raise_for_status()

    def settings(self, **extra: str) -> dict[str, str]:
        """The studio's settings for this provider."""
        return {
            "STUDIO_OIDC_ISSUER": self.issuer,
            "STUDIO_OIDC_CLIENT_ID": self.client_id,
            "STUDIO_OIDC_CLIENT_SECRET": self.client_secret,
            "STUDIO_OIDC_SCOPES": "openid email profile groups",
            "STUDIO_OIDC_PROVIDER_NAME": "Test IdP",
            **extra,
        }
