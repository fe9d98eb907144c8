"""The SSRF guard of page fetching: only public addresses are ever connected to.

Unless ``[research.fetch] allow_private_networks`` is set, ``PageFetcher`` opens every TCP
connection (first request and each redirect hop alike) through ``VettedTransport``, whose
``_VettingBackend`` resolves the host once per connection with ``resolve_host`` (an IP-literal
host is judged as it is, without DNS), refuses the page when any address is loopback, private,
carrier-grade NAT, unique-local, site-local, link-local, multicast, reserved, unspecified, a
cloud metadata address or otherwise not public (IPv4-mapped, 6to4, Teredo and NAT64 IPv6
addresses are also refused when the IPv4 address they carry is), and otherwise connects to those
vetted addresses, never to the name. Nothing resolves the name a second time, so a DNS answer
that changes after the check (DNS rebinding) cannot steer the connection, and a refused host
receives no byte, not even a TCP handshake. The Host header, TLS SNI and the certificate check
still use the host name. A kept-alive connection serves only its own origin (scheme, host,
port), vetted when it opened.

Tests replace ``resolve_host`` (and ``address_refusal``) on this module.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterable

import anyio
import httpcore
import httpx

METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Not covered by is_private on Python 3.11 (CGNAT) or named explicitly for a clear reason.
_CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_PRIVATE_HINT = "set [research.fetch] allow_private_networks = true to read such pages"


class FetchRefusedError(Exception):
    """A page that will not be read; the message says why (no URL secrets, no traceback)."""


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (tests replace this function)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_refusal(address: str | IPAddress) -> str | None:
    """Why a connection to ``address`` is not allowed, or None when it is a public address."""
    if isinstance(address, str):
        try:
            ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return "not an IP address"
    else:
        ip = address
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            reason = address_refusal(embedded)
            if reason is not None:
                return reason
    checks = (
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip in _CARRIER_GRADE_NAT, "a carrier-grade NAT address"),
        (ip in _UNIQUE_LOCAL, "a unique-local address"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "a site-local address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (not ip.is_global, "not a public address"),
    )
    for failed, reason in checks:
        if failed:
            return reason
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


async def _vetted_addresses(host: str, port: int) -> list[str]:
    """The addresses a connection to ``host`` may use; FetchRefusedError when any is not public.

    An IP-literal host is judged as it is; a name is resolved once, with ``resolve_host``.
    """
    try:
        addresses = [str(ipaddress.ip_address(host))]
        literal = True
    except ValueError:
        literal = False
        try:
            addresses = await resolve_host(host, port)
        except (OSError, ValueError):  # ValueError: a name IDNA cannot encode
            raise FetchRefusedError(f"cannot resolve the host {host}") from None
    if not addresses:
        raise FetchRefusedError(f"cannot resolve the host {host}")
    for address in addresses:
        reason = address_refusal(address)
        if reason is None:
            continue
        where = f"{address} is" if literal else f"{host} resolves to {address},"
        raise FetchRefusedError(f"refused: {where} {reason} ({_PRIVATE_HINT})")
    return addresses


class _VettingBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections only to addresses that ``_vetted_addresses`` accepted.

    httpcore passes the origin's host name here and, separately, as ``server_hostname`` to the
    TLS handshake; connecting to the vetted IP therefore keeps SNI and the certificate check on
    the name, and the Host header is untouched.
    """

    def __init__(self) -> None:
        self._plain = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in await _vetted_addresses(host, port):
            try:
                return await self._plain.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc  # try the next vetted address
        assert failure is not None  # _vetted_addresses never returns an empty list
        raise failure

    async def sleep(self, seconds: float) -> None:
        await self._plain.sleep(seconds)


class VettedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool opening connections through _VettingBackend."""

    def __init__(self, verify: ssl.SSLContext | bool, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, trust_env=False, limits=limits)
        # httpx offers no public way to choose the network backend: replace the pool it built.
        # Fail loudly (every guarded PageFetcher) if httpx stops keeping it in ``_pool``.
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError(
                "httpx.AsyncHTTPTransport has no _pool connection pool any more; "
                "the SSRF guard cannot install its network backend"
            )
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_VettingBackend(),
        )
