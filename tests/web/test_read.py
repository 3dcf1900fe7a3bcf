"""read_page against a real site on loopback, and extract_readable_text.

The fake site is a Starlette app under uvicorn on 127.0.0.1 in a thread. The DEFAULT guard
refuses it — loopback, and a port other than 80/443 — and a test below proves both. The
tests reach it the only two ways a caller can: an injected resolver that names it
(`docs.example.test` → 127.0.0.1) PLUS an explicit allow entry for that name and port.
Nothing here weakens the default guard.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from workbench.web import (
    Page,
    WebFetchBlocked,
    WebFetchError,
    extract_readable_text,
    page_evidence,
    read_page,
)
from workbench.web.ssrf import NOT_PUBLIC

HOST = "docs.example.test"
PAGE = """<!doctype html><html><head><title> The  &amp; Guide </title>
<style>body { color: red }</style><script>alert("x")</script></head>
<body><nav>Home | About</nav><h1>Install</h1><p>Run <b>pip</b> install.</p>
<p>Then &lt;script&gt; is text.</p><footer>© footer</footer></body></html>"""
BIG_CHUNK = b"<p>" + b"x" * (64 * 1024 - 8) + b"</p>\n"
BIG_CHUNKS = 800  # ~50 MB if read whole


class FakeSite:
    """A loopback Starlette site that counts the requests each path received."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.headers: dict[str, str] = {}
        self.big_chunks_sent = 0
        self.port = 0
        self.app = Starlette(routes=[Route("/{path:path}", self.handle)])

    async def handle(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        self.hits[path] += 1
        self.headers = dict(request.headers)
        port = self.port
        if path == "/page":
            return HTMLResponse(PAGE)
        if path.startswith("/r/"):
            n = int(path.rsplit("/", 1)[1])
            to = f"/r/{n - 1}" if n > 0 else "/page"
            return Response(status_code=302, headers={"location": to})
        if path == "/to-loopback":
            return Response(
                status_code=302, headers={"location": f"http://127.0.0.1:{port}/secret"}
            )
        if path == "/to-internal":
            location = f"http://internal.example.test:{port}/secret"
            return Response(status_code=301, headers={"location": location})
        if path == "/nowhere":
            return Response(status_code=302)
        if path == "/pdf":
            return Response(b"%PDF-1.7", media_type="application/pdf")
        if path == "/json":
            return JSONResponse({"hello": "world"})
        if path == "/untyped":
            return Response(b"<p>no type</p>")
        if path.startswith("/status/"):
            return Response(b"no", status_code=int(path.rsplit("/", 1)[1]))
        if path == "/slow":
            await asyncio.sleep(3)
            return HTMLResponse("<p>late</p>")
        if path == "/big":

            async def chunks() -> AsyncIterator[bytes]:
                for _ in range(BIG_CHUNKS):
                    self.big_chunks_sent += 1
                    yield BIG_CHUNK
                    await asyncio.sleep(0.005)  # the whole body takes 4 s or more

            return StreamingResponse(chunks(), media_type="text/html")
        if path == "/latin1":
            return Response(
                "<p>café</p>".encode("latin-1"), media_type="text/html; charset=latin-1"
            )
        return Response(status_code=404)


@pytest.fixture(scope="module")
def site() -> Iterator[FakeSite]:
    fake = FakeSite()
    with LoopbackServer(fake.app) as server:
        fake.port = server.port
        yield fake


@pytest.fixture
def fake(site: FakeSite) -> FakeSite:
    site.hits.clear()
    site.big_chunks_sent = 0
    return site


class MapResolver:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    async def __call__(self, host: str) -> list[str]:
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        return self.answers[host]


RESOLVER = MapResolver(
    {
        HOST: ["127.0.0.1"],
        # Looks public at first; its second answer is the loopback fake: a rebinding name.
        "internal.example.test": ["93.184.216.34", "127.0.0.1"],
    }
)


def url(fake: FakeSite, path: str) -> str:
    return f"http://{HOST}:{fake.port}{path}"


async def read(fake: FakeSite, path: str, **kw: object) -> Page:
    kw.setdefault("resolver", RESOLVER)
    kw.setdefault("allow", [(HOST, fake.port)])
    return await read_page(url(fake, path), **kw)  # type: ignore[arg-type]


async def failure(fake: FakeSite, path: str, **kw: object) -> WebFetchError:
    with pytest.raises(WebFetchError) as info:
        await read(fake, path, **kw)
    return info.value


# --- the default guard refuses the fake -------------------------------------------------


async def test_the_default_guard_refuses_the_loopback_fake(fake: FakeSite) -> None:
    # By address: refused for its odd port, and — with the port allowed for another name —
    # refused for being loopback. No request reached the site.
    with pytest.raises(WebFetchBlocked) as port_refusal:
        await read_page(f"http://127.0.0.1:{fake.port}/page")
    assert port_refusal.value.reason == f"Only the standard web ports are allowed, not {fake.port}."
    with pytest.raises(WebFetchBlocked) as loopback:
        await read_page(f"http://127.0.0.1:{fake.port}/page", allow=[(HOST, fake.port)])
    assert loopback.value.reason == NOT_PUBLIC
    # By name, through the resolver, without the allow entry.
    with pytest.raises(WebFetchBlocked):
        await read_page(url(fake, "/page"), resolver=RESOLVER)
    assert fake.hits["/page"] == 0


async def test_reads_the_fake_through_resolver_and_allow_entry(fake: FakeSite) -> None:
    page = await read(fake, "/page")
    assert page.url == url(fake, "/page")
    assert page.title == "The & Guide"
    assert "Install" in page.text and "Run pip install." in page.text
    assert "Then <script> is text." in page.text
    assert "alert" not in page.text and "color: red" not in page.text
    assert "Home | About" not in page.text and "footer" not in page.text
    assert page.truncated is False
    assert fake.hits["/page"] == 1
    # The pin connects to 127.0.0.1 and still names the site.
    assert fake.headers["host"] == f"{HOST}:{fake.port}"
    assert fake.headers["user-agent"] == "ai-kit/web (+https://github.com/bitbaum/ai-kit)"
    assert fake.headers["accept"] == "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"
    assert fake.headers["accept-language"] == "en,de;q=0.8"


# --- redirects --------------------------------------------------------------------------


async def test_three_redirects_are_followed(fake: FakeSite) -> None:
    page = await read(fake, "/r/2")  # /r/2 → /r/1 → /r/0 → /page
    assert page.url == url(fake, "/page") and page.title == "The & Guide"
    assert [fake.hits[p] for p in ("/r/2", "/r/1", "/r/0", "/page")] == [1, 1, 1, 1]


async def test_a_fourth_redirect_is_refused(fake: FakeSite) -> None:
    err = await failure(fake, "/r/3")
    assert err.code == "WEB_TOO_MANY_REDIRECTS" and err.kind == "blocked"
    assert err.reason == "More than 3 redirects."
    assert fake.hits["/page"] == 0 and fake.hits["/r/0"] == 1


async def test_a_redirect_to_loopback_is_revalidated_and_refused(fake: FakeSite) -> None:
    err = await failure(fake, "/to-loopback")
    assert isinstance(err, WebFetchBlocked) and err.reason == NOT_PUBLIC
    assert fake.hits["/to-loopback"] == 1 and fake.hits["/secret"] == 0


async def test_a_redirect_to_a_name_with_a_private_answer_is_refused(fake: FakeSite) -> None:
    err = await failure(fake, "/to-internal")
    assert isinstance(err, WebFetchBlocked)
    assert err.reason == "The host internal.example.test resolves inside a private network."
    assert fake.hits["/secret"] == 0


async def test_a_redirect_without_location_fails(fake: FakeSite) -> None:
    err = await failure(fake, "/nowhere")
    assert err.code == "WEB_FETCH_FAILED" and err.reason == "Redirect 302 with no destination."


# --- answers, types, sizes, time --------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "kind", "reason"),
    [
        (429, "WEB_FETCH_RATE_LIMITED", "rate_limited", "The site asked us to slow down (429)."),
        (403, "WEB_FETCH_REFUSED", "blocked", "The site refused the request (403)."),
        (401, "WEB_FETCH_REFUSED", "blocked", "The site refused the request (401)."),
        (404, "WEB_FETCH_FAILED", "bad_response", "The site answered 404."),
        (500, "WEB_FETCH_FAILED", "bad_response", "The site answered 500."),
    ],
)
async def test_statuses_map_to_codes(
    fake: FakeSite, status: int, code: str, kind: str, reason: str
) -> None:
    err = await failure(fake, f"/status/{status}")
    assert (err.code, err.kind, err.reason) == (code, kind, reason)
    assert not isinstance(err, WebFetchBlocked)


async def test_only_readable_content_types_are_read(fake: FakeSite) -> None:
    err = await failure(fake, "/pdf")
    assert err.code == "WEB_FETCH_UNSUPPORTED_TYPE"
    assert err.reason == "That is a application/pdf file, not a readable page."
    assert (await read(fake, "/json")).text == '{"hello":"world"}'
    assert (await read(fake, "/untyped")).text == "no type"  # no content-type: read


async def test_a_declared_charset_is_honoured(fake: FakeSite) -> None:
    assert (await read(fake, "/latin1")).text == "café"


async def test_the_body_is_streamed_and_dropped_at_max_bytes(fake: FakeSite) -> None:
    started = time.monotonic()
    page = await read(fake, "/big", max_bytes=100_000, max_chars=10**9)
    elapsed, sent = time.monotonic() - started, fake.big_chunks_sent
    assert page.truncated is True
    assert 90_000 < len(page.text) <= 100_000
    # Reading the ~50 MB body whole takes 4 s or more: the reader left after a few chunks.
    assert sent < 20 and elapsed < 2


async def test_max_bytes_cap_pulls_no_more_than_needed_from_the_stream() -> None:
    pulled = 0

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            nonlocal pulled
            for _ in range(1000):
                pulled += 1
                yield b"a" * 1000

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers={"content-type": "text/plain"}, stream=Body())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        page = await read_page(
            "https://news.example/a",
            client=client,
            resolver=MapResolver({"news.example": ["93.184.216.34"]}),
            max_bytes=5_500,
        )
    assert page.text == "a" * 5_500 and page.truncated is True
    assert pulled == 6  # five whole chunks and the one that crossed the cap
    # The request was pinned to the judged address, named by its host, SNI included.
    assert seen[0].url == "https://93.184.216.34/a"
    assert seen[0].headers["host"] == "news.example"
    assert seen[0].extensions["sni_hostname"] == "news.example"


async def test_max_chars_truncates_the_text(fake: FakeSite) -> None:
    page = await read(fake, "/page", max_chars=10)
    assert len(page.text) == 10 and page.truncated is True


async def test_a_slow_site_times_out(fake: FakeSite) -> None:
    started = time.monotonic()
    err = await failure(fake, "/slow", timeout_s=0.3)
    assert err.code == "WEB_FETCH_TIMEOUT" and err.kind == "timeout"
    assert err.reason == "The site took too long to answer."
    assert time.monotonic() - started < 2


async def test_a_closed_port_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(WebFetchError) as info:
        await read_page(f"http://{HOST}:{port}/", resolver=RESOLVER, allow=[(HOST, port)])
    err = info.value
    assert err.code == "WEB_FETCH_FAILED" and err.kind == "unreachable"
    assert err.reason.startswith("The site could not be reached (")


async def test_an_injected_client_that_follows_redirects_is_still_walked_by_hand(
    fake: FakeSite,
) -> None:
    async with httpx.AsyncClient(follow_redirects=True, trust_env=False) as client:
        err = await failure(fake, "/to-loopback", client=client)
    assert isinstance(err, WebFetchBlocked) and fake.hits["/secret"] == 0


# --- extract_readable_text --------------------------------------------------------------


def test_extract_keeps_title_headings_and_paragraphs_and_drops_the_rest() -> None:
    readable = extract_readable_text(PAGE)
    assert readable.title == "The & Guide"
    assert readable.text.split("\n") == [
        "The & Guide",
        "Install",
        "Run pip install.",
        "Then <script> is text.",
    ]
    assert readable.truncated is False


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<p>a</p><!-- <p>hidden</p> --><p>b</p>", "a\nb"),
        ("<p>kept</p><script>never(); <p>closed", "kept"),  # unclosed: to the end
        ("<div>a<br>b<br/>c</div>", "a\nb\nc"),
        ("<li>one</li><li>two</li>", "one\ntwo"),
        ("<p>a&nbsp;&nbsp; b\t\tc</p>", "a b c"),
        ("<p>&euro; &#65;&#x42; &hellip; &mdash;</p>", "&euro; AB … —"),
        ("<p>&amp;lt;b&amp;gt;</p>", "&lt;b&gt;"),  # decoded once
        ("<svg><text>x</text></svg><form>f</form><aside>s</aside><p>ok</p>", "ok"),
        ("<header>h</header><head><title>t</title></head><p>ok</p>", "t ok"),  # head stays
        ("<navigation>kept</navigation>", "kept"),
    ],
)
def test_extract_rules(html: str, text: str) -> None:
    assert extract_readable_text(html).text == text


def test_extract_title_and_caps() -> None:
    long_title = "<title>" + "T" * 400 + "</title>"
    assert extract_readable_text(long_title).title == "T" * 300
    assert extract_readable_text("<p>no title</p>").title == ""
    cut = extract_readable_text("<p>" + "y" * 50 + "</p>", max_chars=20)
    assert cut.text == "y" * 20 and cut.truncated is True
    assert extract_readable_text("<p>abc</p>", max_chars=float("inf")).text == "abc"  # type: ignore[arg-type]


def test_page_evidence_says_when_the_rest_was_not_read() -> None:
    page = Page("https://a.example/x", "A", "body", truncated=True)
    assert page_evidence(page, "p1") == (
        "[p1] A — https://a.example/x\nbody\n[…the rest of the page was not read]"
    )
    assert page_evidence(Page("https://a.example/", "", "t", False)) == (
        "https://a.example/ — https://a.example/\nt"
    )


def test_errors_are_one_line_and_carry_details() -> None:
    err = WebFetchError("The site answered 500.", kind="bad_response", url="https://a/?key=s3cr3t")
    assert str(err) == "WEB_FETCH_FAILED: The site answered 500."
    assert "s3cr3t" not in json.dumps(err.details)
