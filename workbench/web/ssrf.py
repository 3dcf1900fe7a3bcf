"""The SSRF guard every web read goes through (a port of ai-kit's `ssrf`).

- `is_private_address(addr)`: anything that does not parse as an IP is private (refused).
  IPv4 is judged by the seed's ranges; IPv6 by the seed's prefixes, judged on the parsed
  value (so `0:0:0:0:0:ffff:7f00:1` is caught like `::ffff:127.0.0.1`), plus — stricter
  than the seed — anything Python's `ipaddress` does not call global (2001:db8::/32, …).
- `validate_fetch_target(url, resolver, allow=...)` returns a `FetchTarget` or raises
  `WebFetchBlocked` (code WEB_FETCH_BLOCKED) carrying the seed's reason sentence. Shape
  checks run before any DNS lookup; a literal IP is never resolved; a name is resolved and
  refused when ANY answer is private (a rebinding answer hides behind a public one).
- Hosts are read the way a browser reads them (WHATWG): `2130706433`, `0x7f.1`, `0177.0.0.1`
  and `127.1` are 127.0.0.1, because the system resolver would connect there too.
- The fetch is pinned: `FetchTarget.connect_url` names the validated address, so the DNS
  answer we judged is the one we connect to (no second lookup to rebind).

`allow` is an explicit allow-list, for tests that reach a local fake and for deployments
that mean to read an intranet host: entries are `(host_or_network, port)` (port None = any
port), or a bare host / network. An entry lifts the port rule for its port and accepts the
addresses it covers (a host entry covers whatever that host resolves to, a network entry
the addresses inside it). The default (no entries) refuses loopback, private, link-local
and metadata addresses and every port but 80 and 443.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import httpx

from workbench.errors import WorkbenchError, scrub

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
AllowEntry = tuple[str | IPNetwork, int | None] | str | IPNetwork

STANDARD_PORTS = frozenset({80, 443})
_DEFAULT_PORT = {"http": 80, "https": 443}

NOT_A_URL = "That is not a valid URL."
CREDENTIALS = "A URL carrying credentials is never fetched."
NO_HOST = "That URL has no host."
NOT_PUBLIC = "That address is not on the public internet."


class WebError(WorkbenchError):
    """Base of the web errors (`workbench.web` documents the codes)."""

    code = "WEB_ERROR"
    status = 502


class WebFetchError(WebError):
    """A page could not be read. `.kind` is the seed's failure kind, `.url` the page."""

    code = "WEB_FETCH_FAILED"
    status = 502

    def __init__(
        self,
        reason: str,
        *,
        kind: str,
        url: str = "",
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        self.reason = scrub(reason)
        self.kind = kind
        self.url = scrub(url)
        merged = {"kind": kind, "reason": self.reason, "url": self.url, **(details or {})}
        super().__init__(self.reason, code=code, status=status, details=merged)


class WebFetchBlocked(WebFetchError):
    """The SSRF guard refused a target (before any byte was sent to it)."""

    code = "WEB_FETCH_BLOCKED"
    status = 403

    def __init__(self, reason: str, *, url: str = "") -> None:
        super().__init__(reason, kind="blocked", url=url)


class Resolver(Protocol):
    """Every address a host name resolves to, in the resolver's order. Raises when it cannot."""

    async def __call__(self, host: str) -> Sequence[str]: ...


async def system_resolver(host: str) -> list[str]:
    """The default resolver: the system's, through asyncio's getaddrinfo, all records."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


@dataclass(frozen=True)
class FetchTarget:
    """A URL the guard accepted: `url` as the page is named, `addresses` as judged."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]

    @property
    def host_is_ip(self) -> bool:
        return _parse_ip(self.host) is not None

    @property
    def connect_url(self) -> httpx.URL:
        """The same URL, aimed at the first validated address (the pin)."""
        return httpx.URL(self.url).copy_with(host=self.addresses[0])

    @property
    def host_header(self) -> str:
        return httpx.URL(self.url).netloc.decode("ascii")


# --- addresses --------------------------------------------------------------------------


def _parse_ip(text: str) -> IPAddress | None:
    text = text.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        text = text.split("%", 1)[0]  # the seed drops any %zone
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    # Strict dotted quad: four decimal octets, no leading zeros (an octal-looking "010" is
    # ambiguous, and anything ambiguous is private).
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None


def _ipv4_private(ip: ipaddress.IPv4Address) -> bool:
    a, b, _, _ = ip.packed
    return (
        a in (0, 10, 127)
        or a >= 224
        or (a == 169 and b == 254)
        or (a == 172 and 16 <= b <= 31)
        or (a == 192 and b in (0, 168))
        or (a == 198 and b in (18, 19, 51))
        or (a == 203 and b == 0)
        or (a == 100 and 64 <= b <= 127)
        # Stricter than the seed: 192.88.99.0/24 (6to4 relays) and the rest Python knows.
        or not ip.is_global
    )


_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/32")  # the seed's "64:ff9b:" prefix: /96 and /48
_LINK_LOCAL = ipaddress.IPv6Network("fe80::/10")
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")  # fd00:ec2::254 (AWS metadata) included
_MULTICAST = ipaddress.IPv6Network("ff00::/8")


def _ip_private(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv4Address):
        return _ipv4_private(ip)
    value = int(ip)
    if value <= 1:  # :: and ::1
        return True
    if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d, however it is spelled
        return _ipv4_private(ip.ipv4_mapped)
    if value >> 32 == 0:  # ::a.b.c.d (IPv4-compatible), judged by the embedded IPv4
        return _ipv4_private(ipaddress.IPv4Address(value))
    if any(ip in net for net in (_SIX_TO_FOUR, _NAT64, _LINK_LOCAL, _UNIQUE_LOCAL, _MULTICAST)):
        return True
    # Stricter than the seed ("everything else is public"): documentation, discard,
    # Teredo and the other special ranges are not on the public internet either.
    return not ip.is_global


def is_private_address(addr: str) -> bool:
    """True when `addr` is not a public IP. Anything that does not parse is private."""
    if not isinstance(addr, str):
        return True
    ip = _parse_ip(addr)
    return True if ip is None else _ip_private(ip)


# --- hosts, read as a browser reads them ------------------------------------------------

_IPV4_NUMBER = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")
_HOST_NAME = re.compile(r"^[a-z0-9_\-.]+$")
_FORBIDDEN_IN_URL = re.compile(r"[\x00-\x20\x7f\\]")


def _ipv4_number(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        digits, radix = part[2:], 16
        if not digits:
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, radix = part[1:], 8
    else:
        digits, radix = part, 10
    try:
        return int(digits, radix) if digits.isascii() and digits.isalnum() else None
    except ValueError:
        return None


def _ends_in_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    return bool(parts[-1]) and bool(_IPV4_NUMBER.match(parts[-1]))


def _whatwg_ipv4(host: str) -> str | None:
    """The WHATWG IPv4 parser: `127.1`, `0x7f.0.0.1`, `017700000001` → dotted quad."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4 or any(p == "" for p in parts):
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    total = values[-1]
    for i, n in enumerate(values[:-1]):
        total += n * 256 ** (3 - i)
    return str(ipaddress.IPv4Address(total))


def _canonical_host(raw_host: str) -> str | None:
    """The host a fetch would really reach, in canonical spelling; None when invalid."""
    if raw_host.startswith("["):
        if not raw_host.endswith("]"):
            return None
        inner = unquote(raw_host[1:-1]).split("%", 1)[0]
        try:
            return str(ipaddress.IPv6Address(inner))
        except ValueError:
            return None
    host = unquote(raw_host).lower()
    if not host.isascii():
        try:
            import idna

            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    if not _HOST_NAME.match(host):
        return None
    if _ends_in_number(host):
        return _whatwg_ipv4(host)
    return host


# --- allow-list -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Allowed:
    name: str | None
    network: IPNetwork | None
    port: int | None

    def covers(self, host: str, address: IPAddress | None, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.name is not None:
            return host == self.name
        return address is not None and self.network is not None and address in self.network


def _allow_entries(allow: Iterable[AllowEntry] | None) -> list[_Allowed]:
    entries: list[_Allowed] = []
    for entry in allow or ():
        where, port = entry if isinstance(entry, tuple) else (entry, None)
        if isinstance(where, ipaddress.IPv4Network | ipaddress.IPv6Network):
            entries.append(_Allowed(None, where, port))
            continue
        text = str(where).strip().lower().strip("[]")
        try:
            entries.append(_Allowed(None, ipaddress.ip_network(text, strict=False), port))
        except ValueError:
            entries.append(_Allowed(_canonical_host(text) or text, None, port))
    return entries


def _covered(entries: list[_Allowed], host: str, ip: IPAddress | None, port: int) -> bool:
    return ip is not None and any(e.covers(host, ip, port) for e in entries)


# --- the guard --------------------------------------------------------------------------


def _split(raw: str) -> tuple[str, str, str, int | None, str]:
    """(scheme, userinfo, raw_host, port, path+query) or WebFetchBlocked."""
    if not isinstance(raw, str):
        raise WebFetchBlocked(NOT_A_URL)
    text = raw.strip()
    # Spaces, controls and backslashes are read differently by different parsers: a URL
    # that two parsers could disagree on is not fetched.
    if not text or _FORBIDDEN_IN_URL.search(text):
        raise WebFetchBlocked(NOT_A_URL, url=raw)
    try:
        parts = urlsplit(text)
    except ValueError:
        raise WebFetchBlocked(NOT_A_URL, url=raw) from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise WebFetchBlocked(NOT_A_URL, url=raw)
    if scheme not in _DEFAULT_PORT:
        raise WebFetchBlocked(f"Only http and https can be fetched, not {scheme}:", url=raw)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    if hostport.startswith("["):
        close = hostport.find("]")
        raw_host, rest = hostport[: close + 1], hostport[close + 1 :]
        if close < 0 or (rest and not rest.startswith(":")):
            raise WebFetchBlocked(NOT_A_URL, url=raw)
        port_text = rest[1:] if rest else ""
    else:
        raw_host, _, port_text = hostport.partition(":")
    port: int | None = None
    if port_text:
        if not port_text.isdigit() or int(port_text) > 65535:
            raise WebFetchBlocked(NOT_A_URL, url=raw)
        port = int(port_text)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return scheme, userinfo, raw_host, port, path


async def validate_fetch_target(
    raw: str,
    resolver: Resolver | None = None,
    *,
    allow: Iterable[AllowEntry] | None = None,
) -> FetchTarget:
    """Accept `raw` as a fetch target or raise `WebFetchBlocked` with the seed's reason."""
    scheme, userinfo, raw_host, port, path = _split(raw)
    effective_port = port if port is not None else _DEFAULT_PORT[scheme]
    entries = _allow_entries(allow)
    allowed_ports = {e.port for e in entries}
    if effective_port not in STANDARD_PORTS and not (
        None in allowed_ports or effective_port in allowed_ports
    ):
        raise WebFetchBlocked(
            f"Only the standard web ports are allowed, not {effective_port}.", url=raw
        )
    if userinfo:
        raise WebFetchBlocked(CREDENTIALS, url=raw)
    if not raw_host.strip("[]"):
        raise WebFetchBlocked(NO_HOST, url=raw)
    host = _canonical_host(raw_host)
    if host is None:
        raise WebFetchBlocked(NOT_A_URL, url=raw)

    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORT[scheme]:
        netloc += f":{port}"
    url = f"{scheme}://{netloc}{path}"

    literal = _parse_ip(host)
    if literal is not None:
        answers: Sequence[str] = [host]
        private_reason = NOT_PUBLIC
    else:
        try:
            answers = list(await (resolver or system_resolver)(host))
        except Exception:  # any failure of the lookup is "could not be resolved"
            raise WebFetchBlocked(f"The host {host} could not be resolved.", url=raw) from None
        if not answers:
            raise WebFetchBlocked(f"The host {host} resolved to no addresses.", url=raw)
        private_reason = f"The host {host} resolves inside a private network."

    judged = [(_parse_ip(a) if isinstance(a, str) else None) for a in answers]
    uncovered = [ip for ip in judged if not _covered(entries, host, ip, effective_port)]
    # Every answer is checked, and a private one wins over a port reason.
    if any(ip is None or _ip_private(ip) for ip in uncovered):
        raise WebFetchBlocked(private_reason, url=raw)
    if uncovered and effective_port not in STANDARD_PORTS:
        raise WebFetchBlocked(
            f"Only the standard web ports are allowed, not {effective_port}.", url=raw
        )
    addresses = [str(ip) for ip in judged if ip is not None]
    return FetchTarget(url, scheme, host, effective_port, tuple(addresses))
