"""Search adapters against a loopback fake of each vendor, checking what was sent and read.

One Starlette app under uvicorn on 127.0.0.1 plays all four vendors under path prefixes
(`/searxng`, `/brave`, `/tavily`, `/serper`): it records every request (method, path,
query, headers, JSON body) and answers what the test scripted for that path. Search calls
go to the operator's configured endpoints, not to pages, so they are not behind the SSRF
guard and reach the fake directly.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from workbench.web import (
    SearchAttempt,
    WebFailure,
    WebResult,
    WebSearchError,
    describe_attempts,
    describe_empty_search,
    results_evidence,
    search_serper,
    web_search,
)
from workbench.web.search import apply_site, clamp_limit

KEY = "serper-secret-key-4242"


class FakeVendors:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: dict[str, tuple[int, Any]] = {}
        self.port = 0
        self.app = Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST"])])

    async def handle(self, request: Request) -> Response:
        raw = await request.body()
        self.requests.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": dict(request.headers),
                "json": json.loads(raw) if raw else None,
            }
        )
        status, body = self.answers.get(request.url.path, (404, {"error": "no script"}))
        if isinstance(body, str):
            return Response(body, status_code=status, media_type="text/plain")
        return JSONResponse(body, status_code=status)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]


@pytest.fixture(scope="module")
def vendors_server() -> Iterator[FakeVendors]:
    fake = FakeVendors()
    with LoopbackServer(fake.app) as server:
        fake.port = server.port
        yield fake


@pytest.fixture
def vendors(vendors_server: FakeVendors) -> FakeVendors:
    vendors_server.requests.clear()
    vendors_server.answers.clear()
    return vendors_server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as http:
        yield http


def env_for(vendors: FakeVendors, **extra: str) -> dict[str, str]:
    return {"SEARXNG_URL": f"{vendors.base}/searxng/", **extra}


def urls(vendors: FakeVendors) -> dict[str, str]:
    return {"brave": f"{vendors.base}/brave", "tavily": f"{vendors.base}/tavily"}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- SearXNG ----------------------------------------------------------------------------


async def test_searxng_request_and_mapping(vendors: FakeVendors, client: httpx.AsyncClient) -> None:
    vendors.answers["/searxng/search"] = (
        200,
        {
            "results": [
                {
                    "title": "  Python  ",
                    "url": " https://python.org/ ",
                    "content": "  The language. ",
                    "publishedDate": "2024-01-02",
                    "engine": "duckduckgo",
                },
                {"title": "", "url": "http://no-title.example/", "content": ""},
                {"title": "ftp", "url": "ftp://files.example/", "content": "dropped"},
                {"title": "no url"},
                "not even a row",
            ]
        },
    )
    env = env_for(vendors, SEARXNG_TOKEN="searx-token")
    found = await web_search(
        "  python  ",
        "searxng",
        site="https://docs.python.org/3/",
        lang="fr",
        env=env,
        client=client,
    )
    assert found.status == "found" and found.provider == "searxng" and found.query == "python"
    assert found.results == [
        WebResult("Python", "https://python.org/", "The language.", "2024-01-02", "duckduckgo"),
        WebResult("http://no-title.example/", "http://no-title.example/", ""),
    ]
    assert found.attempts == [SearchAttempt("searxng", "results", 2)]
    [sent] = vendors.requests
    assert sent["method"] == "GET" and sent["path"] == "/searxng/search"
    assert sent["query"] == {
        "q": "python site:docs.python.org",
        "format": "json",
        "safesearch": "0",
        "language": "fr",
    }
    assert sent["headers"]["accept"] == "application/json"
    assert sent["headers"]["authorization"] == "Bearer searx-token"


async def test_searxng_without_token_sends_no_authorization_and_slices_to_the_limit(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    rows = [{"title": f"r{i}", "url": f"https://r{i}.example/"} for i in range(6)]
    vendors.answers["/searxng/search"] = (200, {"results": rows})
    found = await web_search("q", "searxng", limit=2, env=env_for(vendors), client=client)
    assert [r.title for r in found.results] == ["r0", "r1"]
    assert "authorization" not in vendors.requests[0]["headers"]
    assert "language" not in vendors.requests[0]["query"]


async def test_a_stock_searxng_403_is_an_auth_failure(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/searxng/search"] = (403, "Forbidden")
    outcome = await web_search("q", "searxng", env=env_for(vendors), client=client)
    assert outcome.status == "could_not_look"
    assert outcome.attempts == [
        SearchAttempt(
            "searxng", "failed", 0, WebFailure("auth", "SearXNG rejected the credentials (403).")
        )
    ]


# --- Brave ------------------------------------------------------------------------------


async def test_brave_request_and_mapping(vendors: FakeVendors, client: httpx.AsyncClient) -> None:
    vendors.answers["/brave/res/v1/web/search"] = (
        200,
        {
            "web": {
                "results": [
                    {
                        "title": "Brave",
                        "url": "https://brave.com/",
                        "description": "A browser.",
                        "page_age": "2023-05-06T00:00:00",
                    }
                ]
            }
        },
    )
    env = {"BRAVE_SEARCH_API_KEY": "brave-key"}
    found = await web_search(
        "browser",
        "brave",
        limit=5,
        lang="pt-BR",
        site="brave.com",
        env=env,
        client=client,
        base_urls=urls(vendors),
    )
    assert found.results == [
        WebResult("Brave", "https://brave.com/", "A browser.", "2023-05-06T00:00:00", "brave")
    ]
    [sent] = vendors.requests
    assert sent["method"] == "GET" and sent["path"] == "/brave/res/v1/web/search"
    assert sent["query"] == {"q": "browser site:brave.com", "count": "5", "search_lang": "pt"}
    assert sent["headers"]["x-subscription-token"] == "brave-key"
    assert sent["headers"]["accept"] == "application/json"


async def test_brave_rate_limit_then_tavily_finds(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/brave/res/v1/web/search"] = (429, {"error": "slow down"})
    vendors.answers["/tavily/search"] = (
        200,
        {
            "results": [
                {
                    "title": "T",
                    "url": "https://t.example/",
                    "content": " c ",
                    "published_date": "2024-03-04",
                }
            ]
        },
    )
    env = {"BRAVE_SEARCH_API_KEY": "brave-key", "TAVILY_API_KEY": "tvly-key"}
    found = await web_search("x", env=env, client=client, base_urls=urls(vendors), limit=3)
    assert found.status == "found" and found.provider == "tavily"
    assert found.results == [WebResult("T", "https://t.example/", "c", "2024-03-04", "tavily")]
    assert describe_attempts(found.attempts) == "brave rate_limited; tavily 1"
    assert found.attempts[0].failure == WebFailure(
        "rate_limited", "Brave Search is rate-limiting this key right now."
    )
    tavily = vendors.requests[1]
    assert tavily["method"] == "POST" and tavily["path"] == "/tavily/search"
    assert tavily["json"] == {"query": "x", "max_results": 3, "search_depth": "basic"}
    assert tavily["headers"]["authorization"] == "Bearer tvly-key"


# --- the walk: found, nothing, could_not_look -------------------------------------------


async def test_an_empty_answer_is_nothing_not_could_not_look(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/searxng/search"] = (200, {"results": []})
    vendors.answers["/tavily/search"] = (500, "boom")
    env = env_for(vendors, TAVILY_API_KEY="tvly-key")
    outcome = await web_search("rare words", env=env, client=client, base_urls=urls(vendors))
    assert outcome.status == "nothing" and outcome.results == []
    assert describe_attempts(outcome.attempts) == "searxng empty; tavily bad_response"
    text = describe_empty_search(outcome)
    assert "returned no results" in text and "Do NOT present this as proof" in text


async def test_every_backend_failing_is_could_not_look(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/brave/res/v1/web/search"] = (401, {"error": "bad key"})
    env = {
        "SEARXNG_URL": f"http://127.0.0.1:{closed_port()}",
        "BRAVE_SEARCH_API_KEY": "brave-key",
    }
    outcome = await web_search("q", env=env, client=client, base_urls=urls(vendors))
    assert outcome.status == "could_not_look"
    assert [a.failure.kind for a in outcome.attempts if a.failure] == ["unreachable", "auth"]
    assert outcome.attempts[0].failure.reason.startswith(  # type: ignore[union-attr]
        "The search backend could not be reached ("
    )
    text = describe_empty_search(outcome)
    assert "COULD NOT BE PERFORMED" in text and "must NOT say that nothing was found" in text
    assert "brave: Brave Search rejected the credentials (401)." in text


async def test_nothing_configured_sends_nothing(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    outcome = await web_search("q", env={}, client=client)
    assert outcome.status == "could_not_look"
    assert outcome.attempts == [
        SearchAttempt(
            "none",
            "failed",
            0,
            WebFailure(
                "not_configured",
                "No search backend is configured (set SEARXNG_URL, BRAVE_SEARCH_API_KEY or "
                "TAVILY_API_KEY).",
            ),
        )
    ]
    named = await web_search("q", "brave", env={}, client=client, base_urls=urls(vendors))
    assert named.attempts[0].failure == WebFailure(
        "not_configured", "BRAVE_SEARCH_API_KEY is not set."
    )
    assert vendors.requests == []


async def test_a_blank_query_is_could_not_look_without_a_request(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    outcome = await web_search("   ", env=env_for(vendors), client=client)
    assert (outcome.status, outcome.query, outcome.attempts) == ("could_not_look", "   ", [])
    assert vendors.requests == []


async def test_an_unknown_provider_name_is_an_error() -> None:
    with pytest.raises(WebSearchError) as info:
        await web_search("q", "bing", env={})
    assert info.value.code == "WEB_SEARCH_UNKNOWN_PROVIDER" and info.value.status == 400


def test_limit_and_site_helpers() -> None:
    assert [clamp_limit(v) for v in (None, 0, float("nan"), float("inf"), -3, 2.9, 50)] == [
        8,
        8,
        8,
        8,
        1,
        2,
        20,
    ]
    assert apply_site("q", "https://jw.org/fr/x") == "q site:jw.org"
    assert apply_site("q", None) == "q"


# --- Serper -----------------------------------------------------------------------------


def organic(n: int, scheme: str = "https") -> list[dict[str, Any]]:
    return [
        {"title": f"Result {i}", "link": f"{scheme}://s{i}.example/p", "snippet": f"s{i}"}
        for i in range(n)
    ]


@pytest.mark.parametrize("key", [None, "", "   "])
async def test_serper_without_a_key_sends_nothing(
    vendors: FakeVendors, client: httpx.AsyncClient, key: str | None
) -> None:
    vendors.answers["/serper/search"] = (200, {"organic": organic(3)})
    with pytest.raises(WebSearchError) as info:
        await search_serper("q", key=key, client=client, base_url=f"{vendors.base}/serper")
    assert info.value.code == "WEB_SEARCH_NO_KEY"
    assert len(vendors.requests) == 0


async def test_serper_request_shape(vendors: FakeVendors, client: httpx.AsyncClient) -> None:
    vendors.answers["/serper/search"] = (200, {"organic": organic(2)})
    results = await search_serper(
        "  la paix  ",
        sites=["jw.org"],
        hl="fr",
        key=KEY,
        client=client,
        base_url=f"{vendors.base}/serper",
    )
    assert [r.url for r in results] == ["https://s0.example/p", "https://s1.example/p"]
    [sent] = vendors.requests
    assert sent["method"] == "POST" and sent["path"] == "/serper/search"
    assert sent["headers"]["x-api-key"] == KEY
    assert sent["json"] == {"q": "la paix site:jw.org", "hl": "fr"}
    await search_serper(
        "q",
        sites=["https://a.example/x", "b.example"],
        key=KEY,
        client=client,
        base_url=f"{vendors.base}/serper",
    )
    assert vendors.requests[1]["json"] == {"q": "q (site:a.example OR site:b.example)"}


async def test_serper_keeps_https_results_with_a_title_at_most_8(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    rows = [
        {"title": "plain http", "link": "http://insecure.example/"},
        {"title": "   ", "link": "https://untitled.example/"},
        {"link": "https://no-title.example/"},
        {"title": "bad link", "link": 42},
        {
            "title": "Dated",
            "link": "https://dated.example/",
            "snippet": " s ",
            "date": "3 days ago",
        },
        *organic(12),
    ]
    vendors.answers["/serper/search"] = (200, {"organic": rows})
    results = await search_serper("q", key=KEY, client=client, base_url=f"{vendors.base}/serper")
    assert len(results) == 8
    assert all(r.url.startswith("https://") and r.title.strip() for r in results)
    assert results[0] == WebResult("Dated", "https://dated.example/", "s", "3 days ago", "serper")
    assert [r.title for r in results[1:]] == [f"Result {i}" for i in range(7)]


async def test_serper_accept_drops_results_before_anyone_reads_them(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/serper/search"] = (200, {"organic": organic(12)})
    seen: list[str] = []

    def accept(result: WebResult, url: str) -> bool:
        seen.append(url)
        return not result.title.endswith(("0", "2", "4"))

    results = await search_serper(
        "q", key=KEY, client=client, accept=accept, base_url=f"{vendors.base}/serper"
    )
    assert [r.title for r in results] == [
        f"Result {i}" for i in (1, 3, 5, 6, 7, 8, 9, 11)
    ]  # "10" ends in 0
    assert seen[0] == "https://s0.example/p"


def _assert_key_absent(err: WebSearchError) -> None:
    assert err.code == "WEB_SEARCH_FAILED"
    for text in (str(err), repr(err), err.message, json.dumps(err.details), repr(err.args)):
        assert KEY not in text
    assert err.__cause__ is None and err.__context__ is None  # the request held the key


async def test_serper_failure_never_carries_the_key(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    # The vendor echoes the key back in its error body: it must still not reach us.
    vendors.answers["/serper/search"] = (403, {"message": f"Unauthorized key {KEY}"})
    with pytest.raises(WebSearchError) as info:
        await search_serper("q", key=KEY, client=client, base_url=f"{vendors.base}/serper")
    _assert_key_absent(info.value)
    assert info.value.details["kind"] == "auth" and info.value.details["status_code"] == 403
    assert "Unauthorized key ***" in info.value.details["body"]
    assert len(vendors.requests) == 1


@pytest.mark.parametrize(("status", "body"), [(500, "oops"), (200, "not json"), (200, "[1]")])
async def test_serper_bad_answers_fail(
    vendors: FakeVendors, client: httpx.AsyncClient, status: int, body: str
) -> None:
    vendors.answers["/serper/search"] = (status, body)
    with pytest.raises(WebSearchError) as info:
        await search_serper("q", key=KEY, client=client, base_url=f"{vendors.base}/serper")
    _assert_key_absent(info.value)


async def test_serper_unreachable_fails_without_the_key() -> None:
    base = f"http://127.0.0.1:{closed_port()}/{KEY}"  # even a key pasted into the URL
    with pytest.raises(WebSearchError) as info:
        await search_serper("q", key=KEY, base_url=base)
    _assert_key_absent(info.value)
    assert info.value.details["kind"] == "unreachable"


async def test_serper_empty_organic_is_an_empty_list(
    vendors: FakeVendors, client: httpx.AsyncClient
) -> None:
    vendors.answers["/serper/search"] = (200, {"organic": []})
    assert await search_serper("q", key=KEY, client=client, base_url=f"{vendors.base}/serper") == []


# --- evidence ---------------------------------------------------------------------------


def test_results_evidence_is_one_string_block_per_result() -> None:
    results = [
        WebResult("A", "https://a.example/", "first"),
        WebResult("B", "https://b.example/", ""),
    ]
    assert results_evidence(results, ["w1", "w2"]) == (
        "[w1] A — https://a.example/\nfirst\n\n[w2] B — https://b.example/"
    )
    assert results_evidence(results) == "A — https://a.example/\nfirst\n\nB — https://b.example/"
    assert results_evidence([]) == ""
