"""Fetching a URL the model chose without reaching private, loopback, link-local or metadata
addresses (SSRF), unless the operator allow-listed them.

Three checks, each at the point where it cannot be bypassed:

- every URL (the first and each redirect hop, followed here, not by aiohttp) must be http(s)
  without user info, and an IP-literal host must pass the address policy;
- the connector's resolver drops addresses the policy refuses, so a name resolving to
  127.0.0.1 fails before any connection ("no addresses left");
- the connector's socket factory checks the exact address it is about to connect to, so
  neither an IP literal (aiohttp skips the resolver for those), nor a DNS answer that changes
  between checks (rebinding), nor an IPv4-mapped IPv6 form can reach a refused address.

Proxies from the environment are ignored (`trust_env=False`): a proxy would connect for us.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

__all__ = [
    "AddressPolicy",
    "BlockedAddress",
    "FetchError",
    "FetchLimits",
    "Fetched",
    "GuardedResolver",
    "fetch",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Cloud metadata services: refused even when an allow-list entry covers them.
METADATA = tuple(ipaddress.ip_network(n) for n in (
    "169.254.169.254/32", "169.254.170.2/32", "100.100.100.200/32", "fd00:ec2::254/128",
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class FetchError(Exception):
    """A fetch failed for a reason the model may read (no secrets, no internal detail)."""


class BlockedAddress(OSError):
    """An address the policy refuses; raised inside the connector so nothing connects."""


def _unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped, 6to4 or NAT64 IPv6 address, else `ip`."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses fetches may reach: public (global) ones, plus the operator's
    `allow_private` entries (host names, addresses, CIDR blocks). Metadata addresses never."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def of(cls, allow: Iterable[str] = ()) -> AddressPolicy:
        nets: list[IPNetwork] = []
        hosts: set[str] = set()
        for entry in allow:
            text = entry.strip().lower().rstrip(".")
            try:
                nets.append(ipaddress.ip_network(text.strip("[]"), strict=False))
            except ValueError:
                if text:
                    hosts.add(text)
        return cls(tuple(nets), frozenset(hosts))

    def host_allowed(self, host: str) -> bool:
        """True when `host` (a name) is allow-listed by name: its addresses may be private."""
        return host.lower().rstrip(".") in self.hosts

    def refusal(self, ip: IPAddress, *, host_allowed: bool = False) -> str | None:
        """Why `ip` may not be reached, or None when it may. Must not raise."""
        inner = _unwrap(ip)
        if any(inner in net for net in METADATA if net.version == inner.version):
            return "a cloud metadata address"
        if host_allowed or any(inner in n for n in self.networks if n.version == inner.version):
            return None
        if inner.is_loopback:
            return "a loopback address"
        if inner.is_link_local:
            return "a link-local address"
        if inner.is_unspecified or inner.is_multicast or inner.is_reserved:
            return "a reserved address"
        if not inner.is_global:
            return "a private address"
        return None


class GuardedResolver(AbstractResolver):
    """Resolves with `inner` (the default resolver) and keeps only addresses the policy
    allows; raises `BlockedAddress` when none remain. Records the addresses it vetted for a
    name allow-listed by name, for the socket factory's check."""

    def __init__(self, policy: AddressPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner if inner is not None else DefaultResolver()
        self.vetted: set[str] = set()

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results = await self._inner.resolve(host, port, family)
        by_name = self._policy.host_allowed(host)
        kept: list[ResolveResult] = []
        reason = "no address"
        for res in results:
            ip = _parse_ip(res["host"])
            why = "an unparsable address" if ip is None else self._policy.refusal(
                ip, host_allowed=by_name)
            if why is None:
                kept.append(res)
                if by_name:
                    self.vetted.add(res["host"])
            else:
                reason = why
        if not kept:
            raise BlockedAddress(f"{host} resolves to {reason}")
        return kept

    async def close(self) -> None:
        await self._inner.close()


@dataclass(frozen=True, slots=True)
class FetchLimits:
    timeout_s: float = 20.0
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    user_agent: str = "HermesGateway/0.1 (+web_extract)"


@dataclass(slots=True)
class Fetched:
    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    redirects: list[str] = field(default_factory=list)


def check_url(url: str, policy: AddressPolicy) -> URL:
    """The parsed URL when its form may be fetched (http/https, a host, no user info, and an
    IP-literal host the policy allows). Raises FetchError."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        raise FetchError(f"not a valid URL: {url[:200]!r}") from None
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise FetchError(f"only http:// and https:// URLs can be fetched: {url[:200]!r}")
    if parsed.user is not None or parsed.password is not None:
        raise FetchError("URLs with user names or passwords are not fetched")
    ip = _parse_ip(parsed.raw_host)
    if ip is not None and (why := policy.refusal(ip)) is not None:
        raise FetchError(f"refused: {parsed.raw_host} is {why} (not allowed by tools.web.allow_private)")
    return parsed


def _socket_factory(policy: AddressPolicy, resolver: GuardedResolver) -> Any:
    def make(addr_info: Any) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        ip = _parse_ip(str(sockaddr[0]))
        if ip is None:
            raise BlockedAddress("refused: unparsable address")
        why = policy.refusal(ip, host_allowed=str(sockaddr[0]) in resolver.vetted)
        if why is not None:
            raise BlockedAddress(f"refused: {sockaddr[0]} is {why}")
        return socket.socket(family, type_, proto)

    return make


def guarded_session(policy: AddressPolicy, limits: FetchLimits, *,
                    resolver: AbstractResolver | None = None) -> aiohttp.ClientSession:
    """A session whose connections reach only addresses `policy` allows. Close it."""
    guard = GuardedResolver(policy, resolver)
    connector = aiohttp.TCPConnector(resolver=guard, socket_factory=_socket_factory(policy, guard),
                                     use_dns_cache=False, limit=8)
    return aiohttp.ClientSession(
        connector=connector, trust_env=False,
        timeout=aiohttp.ClientTimeout(total=limits.timeout_s),
        headers={"User-Agent": limits.user_agent},
    )


def _blocked_reason(exc: BaseException) -> str | None:
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return None
        if isinstance(seen, BlockedAddress):
            return str(seen)
        inner = getattr(seen, "os_error", None)
        seen = inner if isinstance(inner, BaseException) else (seen.__cause__ or seen.__context__)
    return None


async def _read_capped(resp: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The whole body, or FetchError as soon as it grows past `max_bytes`."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(256 * 1024):
        size += len(chunk)
        if size > max_bytes:
            raise FetchError(f"too large: more than {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def fetch(url: str, policy: AddressPolicy, limits: FetchLimits, *,
                accept: str = "*/*", resolver: AbstractResolver | None = None) -> Fetched:
    """GET `url` under the policy, following redirects itself (each hop checked), all within
    `limits.timeout_s`. Reads at most `limits.max_bytes` (a longer body is an error). Raises
    FetchError for every failure (refused address, HTTP error status, too large, timeout,
    network)."""
    current = check_url(url, policy)
    hops: list[str] = []
    try:
        async with asyncio.timeout(limits.timeout_s), \
                guarded_session(policy, limits, resolver=resolver) as session:
            for _ in range(limits.max_redirects + 1):
                async with session.get(current, allow_redirects=False,
                                       headers={"Accept": accept}) as resp:
                    if resp.status in _REDIRECTS and "Location" in resp.headers:
                        nxt = current.join(URL(resp.headers["Location"]))
                        hops.append(str(nxt))
                        current = check_url(str(nxt), policy)
                        continue
                    if resp.status >= 400:
                        raise FetchError(f"HTTP {resp.status} from {current.host}")
                    size = resp.content_length
                    if size is not None and size > limits.max_bytes:
                        raise FetchError(f"too large: {size} bytes (limit {limits.max_bytes})")
                    body = await _read_capped(resp, limits.max_bytes)
                    return Fetched(str(current), resp.status, resp.content_type, resp.charset,
                                   body, hops)
            raise FetchError(f"too many redirects (more than {limits.max_redirects})")
    except FetchError:
        raise
    except TimeoutError:
        raise FetchError(f"timed out after {limits.timeout_s:g}s") from None
    except aiohttp.InvalidURL:
        raise FetchError(f"not a valid URL: {str(current)[:200]!r}") from None
    except (aiohttp.ClientError, OSError) as exc:
        if (why := _blocked_reason(exc)) is not None:
            raise FetchError(f"{why} (not allowed by tools.web.allow_private)") from None
        raise FetchError(f"could not fetch {current.host}: {type(exc).__name__}") from None
