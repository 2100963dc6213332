"""The egress policy: where the platform may connect with credentials or on a user's behalf.

Model base URLs, model discovery, MCP servers and webhook receivers are addresses users
type, so a request to them could reach the host's own services (loopback, the cloud's metadata address, the
private network). By default such addresses are refused; the operator's allow-list
(hosts or CIDRs, ``STUDIO_EGRESS_ALLOW``) lets self-hosted vendors and MCP servers
through. The check runs after DNS resolution, on every request a client sends (so on
every redirect hop), and the connection is pinned to the address that was checked: the
URL's host is replaced by that IP and the name kept for the Host header and TLS (SNI and
certificate check), so a name that resolves differently a moment later cannot slip past.

``client()`` (async) and ``sync_client()`` apply it to every request;
``refusal(url)`` is the save-time check.

The policy is configured once per process (``configure``, from agents_app's settings);
this module imports no Django.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# The vendors' own hosts: an instance key may always go there.
OFFICIAL_HOSTS: dict[str, frozenset[str]] = {
    "openai": frozenset({"api.openai.com"}),
    "openrouter": frozenset({"openrouter.ai"}),
    "anthropic": frozenset({"api.anthropic.com"}),
    "google": frozenset({"generativelanguage.googleapis.com"}),
}


def register_official_hosts(provider: str, hosts: Iterable[str]) -> None:
    """The vendor hosts of a provider added at start-up (the OpenAI-compatible vendors and
    ``define_provider`` definitions, ``runtime.providers.registry.sync_defined``)."""
    OFFICIAL_HOSTS[provider] = frozenset(h.lower().rstrip(".") for h in hosts)


def forget_official_hosts(provider: str) -> None:
    OFFICIAL_HOSTS.pop(provider, None)


# Metadata services answer on these even where the ranges below would not say "private".
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254")
)

# IPv6 forms whose last 32 bits are an IPv4 address that a translator (or the host's own
# stack) delivers to: so ``64:ff9b::7f00:1`` can reach 127.0.0.1 although it looks public.
_LAST_32_BITS = tuple(
    (form, ipaddress.IPv6Network(net))
    for form, net in (
        ("NAT64", "64:ff9b::/96"),
        ("IPv4-translated", "::ffff:0:0:0/96"),
        ("IPv4-compatible", "::/96"),
    )
)
# Local-use NAT64 (RFC 8215): where the IPv4 sits depends on a prefix length only that
# network's operator knows, so the whole range is refused, like unique-local addresses.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_NOT_PUBLIC = "is a loopback, private, link-local or metadata address"


class EgressRefused(httpx.TransportError):
    """The address is not one the platform may connect to (a transport error for httpx,
    so callers that report network failures report this one in the same words)."""


@dataclass(frozen=True)
class EgressPolicy:
    """Refuse non-public addresses unless the host or its address is allowed."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = field(default_factory=tuple)

    @classmethod
    def from_allow_list(cls, items: Iterable[str]) -> EgressPolicy:
        """``items``: host names or CIDRs (a bare IP is a /32 or /128); ``ValueError`` names
        an item that is neither."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in items:
            item = raw.strip().lower()
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
                continue
            except ValueError:
                pass
            if "/" in item or any(c.isspace() for c in item) or ":" in item:
                raise ValueError(f"{raw!r} is neither a host name nor an IP address or CIDR")
            hosts.add(item.rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows_address(self, host: str, address: IPAddress) -> bool:
        if host.lower().rstrip(".") in self.hosts:
            return True
        if any(address in net for net in self.networks):
            return True
        return is_public(address)

    async def check(self, host: str, port: int) -> IPAddress:
        """The first resolved address of ``host`` after checking every one of them."""
        return self.checked(host, await resolve(host, port))

    def check_sync(self, host: str, port: int) -> IPAddress:
        """``check`` for synchronous callers (save-time checks)."""
        return self.checked(host, resolve_sync(host, port))

    def checked(self, host: str, addresses: Sequence[IPAddress]) -> IPAddress:
        """The first of ``addresses`` when the policy allows every one (a name with one
        refused address is refused: the connection could go to any of them)."""
        for address in addresses:
            if not self.allows_address(host, address):
                literal = _literal(host) == address
                subject = str(address) if literal else f"{host} resolves to {address}, which"
                raise EgressRefused(
                    f"{subject} {refusal_reason(address) or _NOT_PUBLIC}: refused by the "
                    "egress policy (an operator may allow it with STUDIO_EGRESS_ALLOW)"
                )
        return addresses[0]


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses ``address`` carries, each with its form's name: IPv4-mapped, 6to4,
    Teredo (server and client), NAT64, IPv4-translated and IPv4-compatible."""
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    for form, network in _LAST_32_BITS:
        if address in network and int(address) > 1:  # :: and ::1 are themselves, not IPv4
            found.append((form, ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)))
    return found


def refusal_reason(address: IPAddress) -> str | None:
    """Why the default policy refuses ``address``, as words that follow it in a sentence
    ("is a loopback …", "embeds 127.0.0.1 (NAT64), which is …"); ``None``: public."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return "is a local-use NAT64 address (64:ff9b:1::/48)"
        for form, ipv4 in embedded_ipv4(address):
            inner = refusal_reason(ipv4)
            if inner is not None:
                return f"embeds {ipv4} ({form}), which {inner}"
        if address.ipv4_mapped is not None:
            return None  # the IPv4 itself, which is public (ipaddress calls the range private)
    if address in _METADATA or not address.is_global or address.is_multicast:
        return _NOT_PUBLIC
    return None


def is_public(address: IPAddress) -> bool:
    """A globally routable address that is not a metadata service, nor an IPv6 form of an
    IPv4 address that is not public."""
    return refusal_reason(address) is None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


async def resolve(host: str, port: int) -> list[IPAddress]:
    literal = _literal(host)
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpx.ConnectError(f"could not resolve {host}: {exc.strerror}") from None
    return _addresses(host, infos)


def resolve_sync(host: str, port: int) -> list[IPAddress]:
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpx.ConnectError(f"could not resolve {host}: {exc.strerror}") from None
    return _addresses(host, infos)


def _addresses(host: str, infos: Sequence[Any]) -> list[IPAddress]:
    found: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    if not found:
        raise httpx.ConnectError(f"could not resolve {host}")
    return found


_policy = EgressPolicy()


def configure(allow: Sequence[str]) -> EgressPolicy:
    """Set this process's policy from the operator's allow-list; returns it."""
    global _policy
    _policy = EgressPolicy.from_allow_list(allow)
    return _policy


def current_policy() -> EgressPolicy:
    return _policy


class EgressTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks each request's address and connects to that address."""

    def __init__(self, policy: EgressPolicy | None = None, **options: Any) -> None:
        self._policy = policy
        self._inner = httpx.AsyncHTTPTransport(**options)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        policy = self._policy or _policy
        host, port = _host_port(request)
        _pin(request, host, await policy.check(host, port))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class SyncEgressTransport(httpx.BaseTransport):
    """``EgressTransport`` for ``httpx.Client`` (synchronous callers)."""

    def __init__(self, policy: EgressPolicy | None = None, **options: Any) -> None:
        self._policy = policy
        self._inner = httpx.HTTPTransport(**options)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        policy = self._policy or _policy
        host, port = _host_port(request)
        _pin(request, host, policy.check_sync(host, port))
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class EgressRefusedHttpx2(httpx2.TransportError):
    """``EgressRefused`` raised inside an httpx2 client (the MCP SDK's HTTP library)."""


class EgressTransportHttpx2(httpx2.AsyncBaseTransport):
    """``EgressTransport`` for ``httpx2.AsyncClient`` (the MCP SDK 2.x takes only those)."""

    def __init__(self, policy: EgressPolicy | None = None, **options: Any) -> None:
        self._policy = policy
        self._inner = httpx2.AsyncHTTPTransport(**options)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        policy = self._policy or _policy
        host, port = _host_port(request)
        try:
            address = await policy.check(host, port)
        except EgressRefused as exc:
            raise EgressRefusedHttpx2(str(exc)) from None
        except httpx.ConnectError as exc:
            raise httpx2.ConnectError(str(exc)) from None
        _pin(request, host, address)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _host_port(request: httpx.Request | httpx2.Request) -> tuple[str, int]:
    return request.url.host, request.url.port or (443 if request.url.scheme == "https" else 80)


def _pin(request: httpx.Request | httpx2.Request, host: str, address: IPAddress) -> None:
    if str(address) != host.strip("[]"):
        # Pin: connect to the checked address, keep the name for Host and TLS.
        request.url = request.url.copy_with(host=str(address))
        if request.url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": host}


def client(policy: EgressPolicy | None = None, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every request (and redirect hop) obeys the policy."""
    return httpx.AsyncClient(transport=EgressTransport(policy), **options)


def client_httpx2(policy: EgressPolicy | None = None, **options: Any) -> httpx2.AsyncClient:
    """``client`` for the MCP SDK 2.x, which takes ``httpx2`` clients only."""
    return httpx2.AsyncClient(transport=EgressTransportHttpx2(policy), **options)


def sync_client(policy: EgressPolicy | None = None, **options: Any) -> httpx.Client:
    """An ``httpx.Client`` whose every request (and redirect hop) obeys the policy."""
    return httpx.Client(transport=SyncEgressTransport(policy), **options)


def refusal(url: str, policy: EgressPolicy | None = None) -> str | None:
    """Why the policy refuses ``url``'s host today (``None``: allowed, or the name does not
    resolve now; requests are checked again when sent). For save-time checks."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        (policy or _policy).check_sync(host, port)
    except EgressRefused as exc:
        return str(exc)
    except (httpx.ConnectError, ValueError):
        return None
    return None


def host_of(url: str | None) -> str:
    return (urlsplit(url or "").hostname or "").lower().rstrip(".")


def is_official_host(provider: str, base_url: str | None) -> bool:
    """No base URL (the adapter's default) or one on the vendor's own host."""
    if not base_url:
        return True
    return host_of(base_url) in OFFICIAL_HOSTS.get(provider, frozenset())
