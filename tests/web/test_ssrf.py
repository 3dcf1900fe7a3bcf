"""The SSRF guard: every spelling of a private address is refused, public ones pass.

The guard reads hosts the way a browser (and the system resolver) reads them, so the
properties below spell each address many ways — decimal, octal, hex, short dotted forms,
IPv6 compressed / expanded / upper-case, IPv4-mapped, 6to4, NAT64 — and require the same
verdict for all of them. Literal IPs are never resolved: the resolver used here fails the
test if it is called.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import WorkbenchError
from workbench.web import FetchTarget, WebFetchBlocked, is_private_address, validate_fetch_target
from workbench.web.ssrf import NOT_PUBLIC, system_resolver

# --- helpers ----------------------------------------------------------------------------


class Resolver:
    """A scripted resolver that records every host it was asked about."""

    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = answers or {}
        self.asked: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.answers[host])


def validate(url: str, resolver: Resolver | None = None, **kw: object) -> FetchTarget:
    return asyncio.run(validate_fetch_target(url, resolver or Resolver(), **kw))  # type: ignore[arg-type]


def refusal(url: str, resolver: Resolver | None = None, **kw: object) -> str:
    with pytest.raises(WebFetchBlocked) as info:
        validate(url, resolver, **kw)
    err = info.value
    assert err.code == "WEB_FETCH_BLOCKED" and err.status == 403
    assert isinstance(err, WorkbenchError) and err.details["reason"] == err.reason
    return err.reason


def net_ints(*cidrs: str) -> st.SearchStrategy[int]:
    nets = [ipaddress.ip_network(c) for c in cidrs]
    return st.sampled_from(nets).flatmap(
        lambda n: st.integers(int(n.network_address), int(n.broadcast_address))
    )


PRIVATE_V4 = net_ints(
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",  # CGNAT
    "127.0.0.0/8",
    "169.254.0.0/16",  # link-local, metadata 169.254.169.254 included
    "172.16.0.0/12",
    "192.0.0.0/16",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.0.0/16",
    "203.0.0.0/16",
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",
)
# Whole /8s that are allocated, routed and hold nothing special.
PUBLIC_V4 = net_ints(
    *(f"{a}.0.0.0/8" for a in (1, 2, 8, 9, 13, 23, 31, 45, 52, 66, 77, 80, 91, 104, 151, 185, 212))
)
PRIVATE_V6 = net_ints(
    "::/128",
    "::1/128",
    "fe80::/10",  # link-local
    "fc00::/7",  # unique local, fd00:ec2::254 (AWS metadata) included
    "ff00::/8",  # multicast
    "2002::/16",  # 6to4: 2002:7f00:0001:: embeds 127.0.0.1
    "64:ff9b::/96",  # NAT64: 64:ff9b::7f00:1 is 127.0.0.1
    "64:ff9b:1::/48",  # local-use NAT64
    "2001:db8::/32",  # documentation (stricter than the seed)
)
PUBLIC_V6 = net_ints("2a00::/12", "2600::/12", "2400::/12")


@st.composite
def ipv4_spelling(draw: st.DrawFn, value: int) -> str:
    """One of the spellings a browser and inet_aton accept for `value`."""
    octets = list(value.to_bytes(4, "big"))
    count = draw(st.integers(1, 4))  # a.b.c.d, a.b.c (16-bit tail), a.b (24-bit), a (32-bit)
    head = octets[: count - 1]
    tail = int.from_bytes(bytes(octets[count - 1 :]), "big")

    def number(n: int) -> str:
        radix = draw(st.sampled_from(["dec", "oct", "hex", "HEX"]))
        if radix == "oct":
            return "0" + format(n, "o")
        if radix == "hex":
            return "0x" + format(n, "x")
        if radix == "HEX":
            return "0X" + format(n, "X")
        return str(n)

    spelled = ".".join([*map(number, head), number(tail)])
    return spelled + draw(st.sampled_from(["", "."]))  # a trailing dot is the same host


@st.composite
def ipv6_spelling(draw: st.DrawFn, value: int) -> str:
    ip = ipaddress.IPv6Address(value)
    forms = [ip.compressed, ip.exploded, ip.compressed.upper(), ip.exploded.upper()]
    if ip.ipv4_mapped is not None or value >> 32 == 0:
        v4 = ipaddress.IPv4Address(value & 0xFFFFFFFF)
        prefix = "::ffff:" if ip.ipv4_mapped is not None else "::"
        forms += [f"{prefix}{v4}", f"0:0:0:0:0:{prefix.strip(':') or '0'}:{v4}"]
    return draw(st.sampled_from(forms))


def mapped(v4: int) -> int:
    return (0xFFFF << 32) | v4


# --- is_private_address -----------------------------------------------------------------


@pytest.mark.parametrize(
    "addr",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "100.127.255.255",
        "0.0.0.0",
        "0.1.2.3",
        "224.0.0.1",
        "255.255.255.255",
        "198.18.0.1",
        "192.0.2.1",
        "203.0.113.5",
        "::",
        "::1",
        "0:0:0:0:0:0:0:1",
        "fe80::1",
        "FE80::1%eth0",
        "fc00::1",
        "fd00:ec2::254",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:7f00:1",
        "::ffff:a9fe:a9fe",
        "::127.0.0.1",
        "2002:7f00:0001::",
        "2002:0808:0808::1",  # every 6to4 is refused, as the seed does
        "64:ff9b::7f00:1",
        "64:ff9b::808:808",
        "[::1]",
        # Not a dotted quad / not an IP at all: private by definition.
        "127.1",
        "2130706433",
        "0x7f.0.0.1",
        "010.0.0.1",
        "localhost",
        "",
        "1.2.3",
        "256.1.1.1",
        "::ffff:999.0.0.1",
    ],
)
def test_private_or_unparseable_addresses_are_private(addr: str) -> None:
    assert is_private_address(addr) is True


@pytest.mark.parametrize(
    "addr", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2a00:1450:4001::200e", "::ffff:8.8.8.8"]
)
def test_public_addresses_are_not_private(addr: str) -> None:
    assert is_private_address(addr) is False


def test_non_strings_are_private() -> None:
    assert is_private_address(None) is True  # type: ignore[arg-type]
    assert is_private_address(2130706433) is True  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_spelling_of_a_private_ipv4_is_refused(data: st.DataObject) -> None:
    value = data.draw(PRIVATE_V4)
    spelled = data.draw(ipv4_spelling(value))
    resolver = Resolver()
    assert refusal(f"http://{spelled}/", resolver) == NOT_PUBLIC
    assert resolver.asked == []  # a literal IP is never resolved
    assert is_private_address(spelled)  # a canonical one by its range, the rest as unparseable
    assert is_private_address(str(ipaddress.IPv4Address(value)))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_spelling_of_a_public_ipv4_is_accepted_as_itself(data: st.DataObject) -> None:
    value = data.draw(PUBLIC_V4)
    spelled = data.draw(ipv4_spelling(value))
    canonical = str(ipaddress.IPv4Address(value))
    resolver = Resolver()
    target = validate(f"http://{spelled}/p?q=1", resolver)
    assert target.addresses == (canonical,) and target.host == canonical
    assert target.url == f"http://{canonical}/p?q=1"
    assert resolver.asked == []
    assert not is_private_address(canonical)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_spelling_of_a_private_ipv6_is_refused(data: st.DataObject) -> None:
    value = data.draw(
        st.one_of(PRIVATE_V6, PRIVATE_V4.map(mapped), PRIVATE_V4.filter(lambda v: v > 1))
    )
    spelled = data.draw(ipv6_spelling(value))
    assert is_private_address(spelled), spelled
    resolver = Resolver()
    assert refusal(f"https://[{spelled}]/", resolver) == NOT_PUBLIC
    assert resolver.asked == []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_every_spelling_of_a_public_ipv6_is_accepted(data: st.DataObject) -> None:
    value = data.draw(st.one_of(PUBLIC_V6, PUBLIC_V4.map(mapped)))
    spelled = data.draw(ipv6_spelling(value))
    assert not is_private_address(spelled), spelled
    target = validate(f"https://[{spelled}]/")
    assert target.addresses == (str(ipaddress.IPv6Address(value)),)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.1/",
        "http://2130706433/",
        "http://017700000001/",
        "http://0x7f000001/",
        "http://0x7f.1/",
        "http://0177.0.0.1/",
        "http://127.0.0.1./",
        "http://%31%32%37.0.0.1/",  # percent-encoded host
        "http://\uff11\uff12\uff17.0.0.1/",  # full-width digits, mapped by IDNA
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[2002:7f00:0001::]/",
        "http://[64:ff9b::7f00:1]/",
        "http://[fe80::1%25eth0]/",
        "http://0.0.0.0/",
        "http://0/",
        "https://100.64.0.1/",
        "https://[ff02::1]/",
    ],
)
def test_named_tricks_are_refused_as_not_public(url: str) -> None:
    assert refusal(url) == NOT_PUBLIC


# --- shape checks (before any lookup) ---------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("not a url", "That is not a valid URL."),
        ("", "That is not a valid URL."),
        ("//example.com/", "That is not a valid URL."),
        ("http://evil.example\\@127.0.0.1/", "That is not a valid URL."),
        ("http://1.2.3.4.5/", "That is not a valid URL."),
        ("http://256.256.256.256/", "That is not a valid URL."),
        ("http://example.123/", "That is not a valid URL."),
        ("http://[::1/", "That is not a valid URL."),
        ("http://a.example:99999/", "That is not a valid URL."),
        ("ftp://example.com/", "Only http and https can be fetched, not ftp:"),
        ("file:///etc/passwd", "Only http and https can be fetched, not file:"),
        ("gopher://127.0.0.1:6379/", "Only http and https can be fetched, not gopher:"),
        ("http://example.com:8080/", "Only the standard web ports are allowed, not 8080."),
        ("http://example.com:22/", "Only the standard web ports are allowed, not 22."),
        ("http://user:pw@example.com/", "A URL carrying credentials is never fetched."),
        ("http://user@example.com/", "A URL carrying credentials is never fetched."),
        ("http:///path", "That URL has no host."),
        ("http://[]/", "That is not a valid URL."),  # as a browser: an empty IPv6 literal
    ],
)
def test_shape_checks_refuse_before_any_lookup(url: str, reason: str) -> None:
    resolver = Resolver({"example.com": ["93.184.216.34"]})
    assert refusal(url, resolver) == reason
    assert resolver.asked == []


def test_standard_ports_and_default_ports_are_accepted() -> None:
    resolver = Resolver({"example.com": ["93.184.216.34"]})
    assert validate("http://example.com:80/", resolver).url == "http://example.com/"
    assert validate("https://example.com:443/", resolver).port == 443
    assert validate("https://example.com:80/x", resolver).url == "https://example.com:80/x"
    assert validate("HTTP://EXAMPLE.com/A#frag", resolver).url == "http://example.com/A"


# --- DNS: every answer is checked -------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    public=st.lists(PUBLIC_V4.map(lambda v: str(ipaddress.IPv4Address(v))), max_size=4),
    private=st.one_of(
        PRIVATE_V4.map(lambda v: str(ipaddress.IPv4Address(v))),
        PRIVATE_V6.map(lambda v: str(ipaddress.IPv6Address(v))),
    ),
    where=st.integers(0, 4),
)
def test_a_name_with_any_private_answer_is_refused(
    public: list[str], private: str, where: int
) -> None:
    answers = list(public)
    answers.insert(min(where, len(answers)), private)
    resolver = Resolver({"rebind.example": answers})
    reason = refusal("https://rebind.example/", resolver)
    assert reason == "The host rebind.example resolves inside a private network."
    assert resolver.asked == ["rebind.example"]


def test_a_name_with_only_public_answers_keeps_them_all_in_order() -> None:
    resolver = Resolver({"docs.example": ["93.184.216.34", "2a00:1450:4001::200e", "8.8.4.4"]})
    target = validate("https://Docs.Example/guide", resolver)
    assert target.addresses == ("93.184.216.34", "2a00:1450:4001::200e", "8.8.4.4")
    assert target.host == "docs.example" and target.host_header == "docs.example"
    assert str(target.connect_url) == "https://93.184.216.34/guide"  # pinned to what was judged


def test_a_garbage_answer_counts_as_private() -> None:
    resolver = Resolver({"odd.example": ["93.184.216.34", "not-an-ip"]})
    assert refusal("http://odd.example/", resolver).endswith("resolves inside a private network.")


def test_lookup_failures_and_empty_answers_are_refused() -> None:
    assert refusal("http://nowhere.example/") == "The host nowhere.example could not be resolved."
    empty = Resolver({"empty.example": []})
    assert (
        refusal("http://empty.example/", empty)
        == "The host empty.example resolved to no addresses."
    )


async def test_the_default_resolver_reads_the_system_and_localhost_is_refused() -> None:
    addresses = await system_resolver("localhost")
    assert addresses and all(is_private_address(a) for a in addresses)
    with pytest.raises(WebFetchBlocked) as info:
        await validate_fetch_target("http://localhost/")
    assert info.value.reason == "The host localhost resolves inside a private network."


# --- the explicit allow-list ------------------------------------------------------------


def test_an_allow_entry_lets_exactly_its_host_and_port_through() -> None:
    resolver = Resolver({"fake.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    allow = [("fake.test", 8123)]
    assert validate("http://fake.test:8123/", resolver, allow=allow).addresses == ("127.0.0.1",)
    # The same address under another name, the literal address, or another port: refused.
    assert refusal("http://other.test:8123/", resolver, allow=allow).endswith("private network.")
    assert refusal("http://127.0.0.1:8123/", resolver, allow=allow) == NOT_PUBLIC
    assert refusal("http://fake.test:8124/", resolver, allow=allow).startswith("Only the standard")
    assert refusal("http://fake.test/", resolver, allow=allow).endswith("private network.")


def test_a_network_entry_covers_addresses_inside_it_only() -> None:
    allow = [("127.0.0.0/8", 9000), ipaddress.ip_network("10.1.0.0/16")]
    assert validate("http://127.0.0.2:9000/", allow=allow).addresses == ("127.0.0.2",)
    assert validate("http://10.1.2.3/", allow=allow).addresses == ("10.1.2.3",)
    assert refusal("http://10.2.0.1/", allow=allow) == NOT_PUBLIC
    assert refusal("http://[::1]:9000/", allow=allow) == NOT_PUBLIC
    mixed = Resolver({"half.test": ["127.0.0.1", "192.168.1.1"]})
    assert refusal("http://half.test:9000/", mixed, allow=allow).endswith("private network.")


def test_a_public_address_on_an_allowed_odd_port_is_still_refused() -> None:
    # The entry lifts the port rule for its own host only.
    reason = refusal("http://8.8.8.8:8123/", allow=[("fake.test", 8123)])
    assert reason == "Only the standard web ports are allowed, not 8123."


def test_without_allow_entries_loopback_is_refused_on_every_port() -> None:
    for url in ("http://127.0.0.1/", "http://127.0.0.1:80/", "https://[::1]/"):
        assert refusal(url) == NOT_PUBLIC
    assert refusal("http://127.0.0.1:8080/").startswith("Only the standard web ports")
