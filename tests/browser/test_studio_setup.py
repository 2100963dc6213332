"""Issue #40 item 5: set-up that cannot lock anyone out. Real processes: ``scripts/run.sh``
against a port another process holds, ``load_demo`` with ``STUDIO_ADMIN_PASSWORD`` on an
existing admin, ``manage.py set_admin_password``; then the studio's login in Chromium."""

from __future__ import annotations

import socket
import subprocess

from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot
from tests.integration.stack import BIN, ROOT

expect.set_options(timeout=20_000)


def test_a_busy_port_is_said_before_any_url(tmp_path) -> None:  # type: ignore[no-untyped-def]
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        done = subprocess.run(
            ["bash", "scripts/run.sh"],
            cwd=ROOT,
            env={
                "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
                "HOME": str(tmp_path),
                "PORT": str(port),
                "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        holder.close()
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"Port {port} is already in use" in said
    assert f"PORT={port + 1} ./scripts/run.sh" in said  # what to do instead
    assert "http://" not in said  # no URL that leads nowhere


def _run(site: Site, args: list[str], env: dict[str, str], stdin: str = "") -> str:
    done = subprocess.run(
        [str(BIN / "python"), "manage.py", *args],
        cwd=ROOT,
        env={**site.stack.env, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_lost_admin_password_is_set_again(site: Site, page: Page) -> None:
    try:
        # The password from STUDIO_ADMIN_PASSWORD is applied to the existing admin, and said.
        out = _run(site, ["load_demo"], {"STUDIO_ADMIN_PASSWORD": "lost-and-found-pw-40"})
        assert "Set the password of 'admin' from STUDIO_ADMIN_PASSWORD" in out
        assert "applied on every run" in out
        assert "lost-and-found-pw-40" not in out
        admin_login(page, site, password="lost-and-found-pw-40")
        expect(page.locator("#site-name")).to_be_visible()
        page.context.clear_cookies()

        # The documented command, without the variable: asked for (here piped), then in.
        out = _run(
            site, ["set_admin_password"], {"STUDIO_ADMIN_PASSWORD": ""}, "a-brand-new-pw-40\n"
        )
        assert "Set the password of 'admin'" in out
        admin_login(page, site, password="a-brand-new-pw-40")
        shot(page, "studio-setup-back-in-1440")
        # Without the variable a rerun leaves it alone and says how to set a new one.
        out = _run(site, ["load_demo"], {"STUDIO_ADMIN_PASSWORD": ""})
        assert "manage.py set_admin_password" in out
    finally:
        site.manage("load_demo")  # the stack's own STUDIO_ADMIN_PASSWORD, for later tests
