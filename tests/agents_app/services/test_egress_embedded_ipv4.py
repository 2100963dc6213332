"""The egress policy on IPv6 addresses that carry an IPv4 address (issue #52): NAT64, 6to4,
Teredo, IPv4-mapped, IPv4-translated and IPv4-compatible forms reach the IPv4 they embed
(through a translator, a relay or the host's own stack), so one that embeds a refused IPv4
is refused as that IPv4 would be, unless STUDIO_EGRESS_ALLOW lists it."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from runtime.core import egress

# (address, the IPv4 it carries, the form's name in the refusal)
EMBEDDING_REFUSED = [
    ("64:ff9b::7f00:1", "127.0.0.1", "NAT64"),
    ("64:ff9b::a9fe:a9fe", "169.254.169.254", "NAT64"),  # the cloud metadata service
    ("64:ff9b::a00:1", "10.0.0.1", "NAT64"),
    ("2002:7f00:1::", "127.0.0.1", "6to4"),
    ("2002:a9fe:a9fe::1", "169.254.169.254", "6to4"),
    ("::127.0.0.1", "127.0.0.1", "IPv4-compatible"),
    ("::10.0.0.1", "10.0.0.1", "IPv4-compatible"),
    ("::ffff:127.0.0.1", "127.0.0.1", "IPv4-mapped"),
    ("::ffff:169.254.169.254", "169.254.169.254", "IPv4-mapped"),
    ("::ffff:0:10.0.0.1", "10.0.0.1", "IPv4-translated"),
    ("::ffff:0:127.0.0.1", "127.0.0.1", "IPv4-translated"),
    # Teredo: the server's IPv4 in bits 32-64, the client's in the last 32 bits, inverted.
    ("2001:0:7f00:1::", "127.0.0.1", "Teredo server"),
    ("2001:0:808:808::f5ff:fffe", "10.0.0.1", "Teredo client"),
]

PUBLIC_EMBEDDED = [
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "::ffff:8.8.8.8",
    "::ffff:0:8.8.8.8",
]


@pytest.fixture
def strict_egress() -> Iterator[None]:
    """The production default: no allow-list (the suite's loopback allowance removed; the
    suite's autouse fixture puts it back for the next test)."""
    egress.configure([])
    yield


@pytest.mark.parametrize(("address", "ipv4", "form"), EMBEDDING_REFUSED)
def test_an_ipv6_form_of_a_refused_ipv4_is_refused(address: str, ipv4: str, form: str) -> None:
    policy = egress.EgressPolicy()
    with pytest.raises(egress.EgressRefused) as refused:
        policy.check_sync(address, 80)
    assert f"embeds {ipv4} ({form})" in str(refused.value), str(refused.value)
    assert "STUDIO_EGRESS_ALLOW" in str(refused.value)
    assert not egress.is_public(ipaddress.ip_address(address))


def test_the_local_use_nat64_prefix_is_refused_whatever_it_embeds() -> None:
    """64:ff9b:1::/48 (RFC 8215): where the IPv4 sits depends on the local prefix length."""
    for address in ("64:ff9b:1::7f00:1", "64:ff9b:1:7f00:1::", "64:ff9b:1::808:808"):
        with pytest.raises(egress.EgressRefused, match="local-use NAT64"):
            egress.EgressPolicy().check_sync(address, 80)


@pytest.mark.parametrize("address", PUBLIC_EMBEDDED)
def test_an_ipv6_form_of_a_public_ipv4_is_allowed(address: str) -> None:
    assert egress.EgressPolicy().allows_address(address, ipaddress.ip_address(address))


def test_the_allow_list_lets_an_embedded_form_through_when_it_lists_it() -> None:
    policy = egress.EgressPolicy.from_allow_list(["64:ff9b::/96", "2002:7f00:1::1"])
    assert policy.check_sync("64:ff9b::7f00:1", 80) == ipaddress.ip_address("64:ff9b::7f00:1")
    assert policy.check_sync("2002:7f00:1::1", 80) == ipaddress.ip_address("2002:7f00:1::1")
    with pytest.raises(egress.EgressRefused):
        policy.check_sync("::ffff:0:10.0.0.1", 80)


def test_the_loopback_itself_is_not_called_an_embedded_ipv4() -> None:
    for address in ("::1", "::"):
        with pytest.raises(egress.EgressRefused, match="is a loopback, private") as refused:
            egress.EgressPolicy().check_sync(address, 80)
        assert "embeds" not in str(refused.value)


class _Listener:
    def __init__(self) -> None:
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                owner.hits += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_request_to_an_embedded_loopback_never_leaves(strict_egress: None) -> None:
    """The same check on the wire: the clients refuse before connecting, so a stack that
    would route ``::ffff:127.0.0.1`` to the local listener never gets the chance."""
    listener = _Listener()
    mapped = r"embeds 127\.0\.0\.1 \(IPv4-mapped\)"
    try:
        with egress.sync_client() as client, pytest.raises(egress.EgressRefused, match=mapped):
            client.post(f"http://[::ffff:127.0.0.1]:{listener.port}/hook")
        assert listener.hits == 0
    finally:
        listener.server.shutdown()
        listener.server.server_close()
