"""Sign-in with the organisation's identity provider, end to end (docs/identity.md, issue #56).

A real OpenID provider (panva's certified ``oidc-provider``, tests/integration/oidc_provider.py)
runs on 127.0.0.1 beside a real stack (PostgreSQL, Redis, Daphne) configured for it by
settings alone; chromium goes through the whole redirect flow: our sign-in page, the
provider's, the code's way back. Checked: the account, groups and staff status made here, the
agent picker following group audiences, a group removed upstream removed here at the next
sign-in, each refused sign-in with a page that says why, signing out at the provider too, and
SCIM (scim2-client over HTTP) creating a person who then signs in, and deactivating them:
their open chat socket closes and their API key answers 401 within seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import shot
from tests.integration.oidc_provider import OidcProvider
from tests.integration.scim import scim_client
from tests.integration.stack import Stack, wait_until

USERS: dict[str, dict[str, Any]] = {
    "erin": {
        "sub": "idp-erin-0001",
        "password": "erin-idp-pw",
        "email": "erin@example.com",
        "email_verified": True,
        "name": "Erin Analyst",
        "groups": ["analysts"],
    },
    # Holds the name of the seeded local account "alice": a sub collision.
    "alice": {"sub": "idp-alice-9999", "password": "alice-idp-pw", "groups": []},
    "gail@example.com": {
        "sub": "idp-gail-0003",
        "password": "gail-idp-pw",
        "email": "gail@example.com",
        "email_verified": True,
        "groups": [],
    },
}


@dataclass
class SsoSite:
    stack: Stack
    provider: OidcProvider

    @property
    def url(self) -> str:
        return self.stack.http

    def python(self, code: str) -> str:
        return self.stack.python(code)

    def groups_of(self, username: str) -> set[str]:
        rows = self.stack.sql(
            "SELECT g.name FROM auth_group g JOIN auth_user_groups ug ON ug.group_id = g.id "
            "JOIN auth_user u ON u.id = ug.user_id WHERE u.username = %s",
            username,
        )
        return {r[0] for r in rows}

    def account(self, username: str) -> tuple[Any, ...] | None:
        rows = self.stack.sql(
            "SELECT u.is_staff, u.is_active, u.email, l.subject FROM auth_user u "
            "LEFT JOIN agents_app_identitylink l ON l.user_id = u.id WHERE u.username = %s",
            username,
        )
        return rows[0] if rows else None


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SsoSite]:
    tmp = tmp_path_factory.mktemp("sso-stack")
    stack = Stack(tmp, setup=[["collectstatic", "--noinput", "-v", "0"]])
    provider = OidcProvider(
        tmp,
        redirect_uris=[f"{stack.http}/oidc/callback/"],
        post_logout_redirect_uris=[f"{stack.http}/login/"],
        users=USERS,
    ).start()
    stack.env.update(provider.settings(STUDIO_OIDC_ADMIN_GROUPS="studio-admins"))
    try:
        stack.start()
        # The seeded "sleeper" agent is offered only to the group "field-team".
        SsoSite(stack, provider).python(
            "from django.contrib.auth.models import Group\n"
            "from agents_app.models import Agent\n"
            "Agent.objects.get(name='sleeper').audience_groups.set("
            "[Group.objects.get_or_create(name='field-team')[0]])"
        )
        yield SsoSite(stack, provider)
    finally:
        stack.stop()
        provider.stop()
    # Neither the client secret nor any SCIM token reached a log line.
    logs = "".join(p.read_text(errors="replace") for p in Path(tmp).glob("*.log"))
    assert provider.client_secret not in logs and "scim_" not in logs


@pytest.fixture
def idp(sso: SsoSite) -> Iterator[OidcProvider]:
    sso.provider.set_users(USERS)
    yield sso.provider
    sso.provider.set_users(USERS)
    sso.provider.tamper("")


def sso_sign_in(
    page: Page, sso: SsoSite, username: str, password: str, then: str = "/chat/"
) -> None:
    """Our sign-in page → "Sign in with Test IdP" → the provider's form → back here."""
    page.goto(f"{sso.url}/login/?next={then}")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.wait_for_url(re.compile(rf"^{re.escape(sso.provider.issuer)}/interaction/.*"))
    page.get_by_label("Provider username").fill(username)
    page.get_by_label("Provider password").fill(password)
    page.get_by_role("button", name="Continue to the studio").click()


def offered_agents(page: Page) -> set[str]:
    picker = page.get_by_label("Agent")
    expect(picker).to_be_visible()
    wait_until(lambda: picker.locator("option").count() > 1, "the agent picker to fill", timeout=15)
    return set(picker.locator("option").evaluate_all("os => os.map(o => o.value)")) - {""}


def test_sign_in_lands_in_the_chat_with_the_providers_groups_and_follows_them(
    page: Page, sso: SsoSite, idp: OidcProvider
) -> None:
    login_page = page.goto(f"{sso.url}/login/")
    assert login_page is not None and idp.client_secret not in login_page.text()
    sso_sign_in(page, sso, "erin", "erin-idp-pw")
    page.wait_for_url(f"{sso.url}/chat/")
    assert sso.account("erin") == (False, True, "erin@example.com", "idp-erin-0001")
    assert sso.groups_of("erin") == {"analysts"}
    assert "sleeper" not in offered_agents(page) and "greeter" in offered_agents(page)
    shot(page, "sso-signed-in-analyst")

    # Upstream: erin joins field-team and the admin group; a local group is added here.
    sso.python(
        "from django.contrib.auth.models import Group, User\n"
        "User.objects.get(username='erin').groups.add(Group.objects.get_or_create(name='local-only')[0])"
    )
    idp.set_users(
        {**USERS, "erin": {**USERS["erin"], "groups": ["analysts", "field-team", "studio-admins"]}}
    )
    page.context.clear_cookies()
    sso_sign_in(page, sso, "erin", "erin-idp-pw")
    page.wait_for_url(f"{sso.url}/chat/")
    assert "sleeper" in offered_agents(page)
    assert sso.groups_of("erin") == {
        "analysts",
        "field-team",
        "studio-admins",
        "local-only",
        "Studio administrators",
    }
    assert sso.account("erin")[0] is True  # type: ignore[index]
    page.goto(f"{sso.url}/admin/")
    expect(page.locator("#site-name")).to_contain_text("Standard Agents Studio")
    expect(page.get_by_role("link", name="Agents", exact=True).first).to_be_visible()
    # The audit log, readable by the provider's admins: the sign-in's own changes.
    page.goto(f"{sso.url}/admin/agents_app/auditevent/?actor_kind__exact=sign_in&q=erin")
    rows = page.locator("#result_list tbody tr")
    expect(rows.first).to_contain_text("sign-in via Test IdP")
    expect(page.locator("#result_list")).to_contain_text("+field-team")
    shot(page, "sso-audit-log")

    # Upstream: removed from field-team and the admins: gone here at the next sign-in.
    idp.set_users(USERS)
    page.context.clear_cookies()
    sso_sign_in(page, sso, "erin", "erin-idp-pw")
    page.wait_for_url(f"{sso.url}/chat/")
    assert "sleeper" not in offered_agents(page)
    assert sso.groups_of("erin") == {"analysts", "local-only"}
    assert sso.account("erin")[0] is False  # type: ignore[index]
    kinds = sso.stack.sql(
        "SELECT DISTINCT actor_kind FROM agents_app_auditevent WHERE target = 'erin' AND target_type = 'user'"
    )
    assert ("sign_in",) in kinds
    assert not page.console_errors  # type: ignore[attr-defined]


def test_signing_out_in_the_chat_signs_out_at_the_provider(
    page: Page, sso: SsoSite, idp: OidcProvider
) -> None:
    sso_sign_in(page, sso, "erin", "erin-idp-pw")
    page.wait_for_url(f"{sso.url}/chat/")
    page.get_by_role("button", name=re.compile("Sign out", re.I)).click()
    # The provider's end-session page (RP-initiated logout with our ID token as the hint).
    page.wait_for_url(re.compile(rf"^{re.escape(idp.issuer)}/session/end.*"))
    page.locator("button[autofocus], button[type=submit]").first.click()
    page.wait_for_url(re.compile(rf"^{re.escape(sso.url)}/login/.*"))
    # Signed out here and there: the next sign-in asks the provider's password again.
    page.get_by_role("link", name="Sign in with Test IdP").click()
    expect(page.get_by_label("Provider password")).to_be_visible()


@pytest.mark.parametrize(
    ("case", "heading"),
    [
        ("state", "The sign-in could not be checked"),
        ("nonce", "The sign-in token does not match this sign-in"),
        ("expired", "The sign-in token has expired"),
        ("signature", "The sign-in token's signature is wrong"),
        ("collision", "Account already exists"),
    ],
)
def test_a_spoiled_sign_in_is_refused_with_a_page_that_says_why(
    page: Page, sso: SsoSite, idp: OidcProvider, case: str, heading: str
) -> None:
    before = sso.stack.sql("SELECT count(*) FROM auth_user")[0][0]
    if case != "collision":
        idp.tamper(case)
    user, password = ("alice", "alice-idp-pw") if case == "collision" else ("erin", "erin-idp-pw")
    sso_sign_in(page, sso, user, password)
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    expect(page.get_by_role("alert")).to_be_visible()
    shot(page, f"sso-refused-{case}")
    # Nothing was signed in, and no account was made.
    assert (
        httpx.get(
            f"{sso.url}/api/auth/me",
            cookies={c["name"]: c["value"] for c in page.context.cookies()},
        ).status_code
        == 401
    )
    assert sso.stack.sql("SELECT count(*) FROM auth_user")[0][0] == before
    if case == "collision":
        assert sso.account("alice")[3] is None  # type: ignore[index]  # the local alice stays unlinked


def test_scim_provisions_the_person_and_deactivation_closes_their_socket_and_key(
    page: Page, sso: SsoSite, idp: OidcProvider
) -> None:
    from scim2_models import (
        Email,
        Group,
        GroupMember,
        Name,
        PatchOp,
        PatchOperation,
        SearchRequest,
        User,
    )

    raw_token = (
        sso.python(
            "from agents_app.services.access import scim\n"
            "from django.contrib.auth.models import User\n"
            "print(scim.token_create(name='okta', by=User.objects.get(username='ops'))[1])"
        )
        .strip()
        .splitlines()[-1]
    )
    client = scim_client(f"{sso.url}/scim/v2", raw_token)
    made = client.create(
        User(
            user_name="gail@example.com",
            name=Name(given_name="Gail", family_name="Hart"),
            emails=[Email(value="gail@example.com", primary=True)],
            external_id="okta-00u-gail",
            active=True,
        )
    )
    assert made.user_name == "gail@example.com" and made.active is True
    found = client.query(
        User, query_parameters=SearchRequest(filter='userName eq "gail@example.com"')
    )
    assert [u.id for u in found.resources] == [made.id]
    # The person signs in through the provider: the SCIM account is theirs (linked by sub).
    sso_sign_in(page, sso, "gail@example.com", "gail-idp-pw")
    page.wait_for_url(f"{sso.url}/chat/")
    assert sso.account("gail@example.com")[3] == "idp-gail-0003"  # type: ignore[index]
    assert sso.stack.sql("SELECT count(*) FROM auth_user WHERE username LIKE 'gail%%'")[0][0] == 1
    # Groups patched over SCIM: the audience follows at once.
    assert "sleeper" not in offered_agents(page)
    [field_team] = client.query(
        Group, query_parameters=SearchRequest(filter='displayName eq "field-team"')
    ).resources
    client.modify(
        Group,
        field_team.id,
        PatchOp[Group](
            operations=[
                PatchOperation(op="add", path="members", value=[GroupMember(value=made.id)])
            ]
        ),
    )
    page.reload()
    assert "sleeper" in offered_agents(page)
    # An open chat socket and an API key of theirs.
    raw_key = (
        sso.python(
            "from django.contrib.auth.models import User\n"
            "from agents_app.services.access.api_keys import api_key_create\n"
            "print(api_key_create(user=User.objects.get(username='gail@example.com'), name='robot')[1])"
        )
        .strip()
        .splitlines()[-1]
    )
    key = {"Authorization": f"Bearer {raw_key}"}
    assert httpx.get(f"{sso.url}/api/auth/me", headers=key).status_code == 200
    thread = httpx.post(f"{sso.url}/api/threads", headers=key, json={"agent_id": "greeter"}).json()[
        "threadId"
    ]
    closed: list[float] = []
    page.on("websocket", lambda ws: ws.on("close", lambda _ws: closed.append(time.monotonic())))
    page.goto(f"{sso.url}/chat/t/{thread}")
    wait_until(
        lambda: page.evaluate(
            "() => performance.getEntriesByType('resource').some(e => e.name.includes('websocket-ticket'))"
        ),
        "the thread socket to open",
        timeout=15,
    )
    page.wait_for_timeout(500)  # Playwright delivers events while the test calls into it
    assert not closed
    deactivated_at = time.monotonic()
    off = client.modify(
        User,
        made.id,
        PatchOp[User](operations=[PatchOperation(op="replace", path="active", value=False)]),
    )
    assert off is None or off.active is False
    wait_until(lambda: page.wait_for_timeout(50) or closed, "the chat socket to close", timeout=10)
    assert closed[0] - deactivated_at < 10
    wait_until(
        lambda: httpx.get(f"{sso.url}/api/auth/me", headers=key).status_code == 401,
        "the API key to answer 401",
        timeout=10,
    )
    assert (
        httpx.get(
            f"{sso.url}/api/auth/me",
            cookies={c["name"]: c["value"] for c in page.context.cookies()},
        ).status_code
        == 401
    )
    # And they can no longer sign in.
    page.context.clear_cookies()
    sso_sign_in(page, sso, "gail@example.com", "gail-idp-pw")
    expect(page.get_by_role("heading", name="Account deactivated")).to_be_visible()
    kinds = sso.stack.sql(
        "SELECT DISTINCT actor_kind FROM agents_app_auditevent WHERE target = 'gail@example.com'"
    )
    assert ("scim",) in kinds
