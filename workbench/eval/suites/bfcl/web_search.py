"""BFCL's two web-search functions, run by our own code against a search engine: SerpAPI with
a key (as BFCL's backend does), or offline against the simulator's fixed web.

What a model reads back is what BFCL's `WebSearchAPI` would give it for the same underlying
results, so a run graded here compares with BFCL's:

- `search_engine_query(keywords, max_results=10, region="wt-wt")`: SerpAPI's DuckDuckGo
  engine (`kl` = region); its `organic_results`, the first `max_results`, each
  `{"title", "href", "body"}` — without `body` when the entry hides snippets
  (`web_search_no_snippet`). A payload without results is BFCL's `{"error": "Failed to
  retrieve the search results from server. Please try again later."}`; a request that
  raised is `{"error": <its text>}`; a 429 is waited out with BFCL's backoff (2 s doubling
  to 120 s, jittered), forever, as BFCL does.
- `fetch_url_content(url, mode="raw")`: a URL not starting with http(s):// raises
  `Invalid URL: ...`; otherwise `{"content": ...}` — the HTML as served (`raw`), the text
  without scripts and styles one string a line (`truncate`, what BeautifulSoup's
  `get_text("\\n", strip=True)` gives), Markdown (`markdown`: html2text when it is
  installed, as BFCL, else a plainer conversion of our own); any failure, an HTTP status of
  400 or more included (worded as `requests` words it), is `{"error": "An error occurred
  while fetching <url>: ..."}`.

Differences from BFCL, said plainly: with a key, pages are fetched through httpx behind the
project's SSRF guard (a private or loopback address is refused, where BFCL would fetch it),
so a transport failure's text is httpx's rather than requests'; without html2text the
Markdown differs (no line wrapping, simpler lists); an error from SerpAPI never carries the
key (BFCL's may, in a connection error's URL).

`WebSearchBackend.execute(call)` runs one model call and returns the text BFCL's executor
would: a str as is, a dict as JSON, anything else as `str()` (a result list is Python's
repr), an exception as "Error during execution: ..."; a name that is not one of the two
functions is "Error during execution: name '...' is not defined" — nothing else is called.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any, Protocol
from urllib.parse import urljoin

import httpx

from workbench.errors import ConfigError, scrub
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.types import ToolCall

log = logging.getLogger(__name__)

SERPAPI_URL = "https://serpapi.com/search.json"
KEY_VARIABLE = "SERPAPI_API_KEY"
# The simulator's base URL (`http://127.0.0.1:8765`): search its fixed web instead of SerpAPI.
OFFLINE_VARIABLE = "WORKBENCH_BFCL_WEB"
FUNCTIONS = ("search_engine_query", "fetch_url_content")
NO_RESULTS = "Failed to retrieve the search results from server. Please try again later."
ERROR_PREFIX = "Error during execution: "
MAX_REDIRECTS = 30  # requests' default, which BFCL's fetch follows
# The browser-like headers BFCL's fetch sends (they spare it many 403s).
BROWSER_HEADERS = {
    "User-Agent": (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/112.0.0.0 Safari/537.36"
    ),
    "Accept": (
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
        "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
    ),
    "Accept-Language": "en-US,en;q=0.9",
    "Accept-Encoding": "gzip, deflate",  # not br: httpx decodes it only with brotli installed
    "Upgrade-Insecure-Requests": "1",
    "Referer": "https://www.google.com/",
    "Sec-Fetch-Site": "same-origin",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-User": "?1",
    "Sec-Fetch-Dest": "document",
}


@dataclass(frozen=True, slots=True)
class Fetched:
    """One page as the server answered: status, reason, final URL, body as text."""

    status: int
    reason: str
    url: str
    text: str


class SearchEngine(Protocol):
    """Where results and pages come from. Both raise on a transport failure."""

    secrets: tuple[str, ...]

    async def search(self, keywords: Any, region: Any) -> dict[str, Any]:
        """SerpAPI's DuckDuckGo payload for the query."""
        ...

    async def get(self, url: str) -> Fetched: ...


class SimulatorEngine:
    """The simulator's fixed web (`/sim/search`, `/sim/page`): offline, for tests and demos."""

    secrets: tuple[str, ...] = ()

    def __init__(self, base_url: str, client: httpx.AsyncClient) -> None:
        self.base_url = base_url.rstrip("/")
        self._client = client

    async def search(self, keywords: Any, region: Any) -> dict[str, Any]:
        response = await self._client.get(
            f"{self.base_url}/sim/search", params={"q": str(keywords), "kl": str(region)}
        )
        data: dict[str, Any] = response.json()
        return data

    async def get(self, url: str) -> Fetched:
        response = await self._client.get(f"{self.base_url}/sim/page", params={"url": url})
        return Fetched(response.status_code, response.reason_phrase, url, response.text)


class SerpApiEngine:
    """SerpAPI's DuckDuckGo engine, as BFCL queries it; pages fetched from the web behind the
    project's SSRF guard (a model chooses the URLs)."""

    def __init__(self, key: str, client: httpx.AsyncClient, resolver: Any = None) -> None:
        self.secrets: tuple[str, ...] = (key,)
        self._key = key
        self._client = client
        self._resolver = resolver

    async def search(self, keywords: Any, region: Any) -> dict[str, Any]:
        params = {"engine": "duckduckgo", "q": keywords, "kl": region, "api_key": self._key}
        response = await self._client.get(SERPAPI_URL, params=params, timeout=60)
        data: dict[str, Any] = response.json()  # SerpAPI says what went wrong in the JSON
        return data

    async def get(self, url: str) -> Fetched:
        from workbench.web.ssrf import validate_fetch_target

        current = url
        for _ in range(MAX_REDIRECTS + 1):
            target = await validate_fetch_target(current, self._resolver)
            extensions = {}
            if target.scheme == "https" and not target.host_is_ip:
                extensions["sni_hostname"] = target.host  # the pinned address, the real name
            request = self._client.build_request(
                "GET",
                target.connect_url,
                headers={**BROWSER_HEADERS, "Host": target.host_header},
                timeout=20,
                extensions=extensions,
            )
            response = await self._client.send(request, follow_redirects=False)
            location = response.headers.get("location", "").strip()
            if response.is_redirect and location:
                current = urljoin(current, location)
                continue
            return Fetched(response.status_code, response.reason_phrase, current, response.text)
        raise RuntimeError(f"Exceeded {MAX_REDIRECTS} redirects.")  # requests' TooManyRedirects


class WebSearchAPI:
    """BFCL's two functions over an engine. Named as BFCL's class is, so that a call with
    wrong arguments fails with the words BFCL's would (`WebSearchAPI.fetch_url_content()
    got an unexpected keyword argument 'x'`)."""

    def __init__(
        self,
        engine: SearchEngine,
        *,
        show_snippet: bool = True,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.engine = engine
        self.show_snippet = show_snippet
        self._sleep = sleep

    async def search_engine_query(
        self, keywords: str, max_results: int | None = 10, region: str | None = "wt-wt"
    ) -> list[dict[str, str]] | dict[str, str]:
        """The first `max_results` results for `keywords`, as BFCL's backend shapes them."""
        backoff = 2.0
        while True:
            try:
                payload = await self.engine.search(keywords, region)
            except Exception as exc:  # BFCL hands the model the failure's text
                if "429" not in str(exc):
                    return {"error": scrub(str(exc), self.engine.secrets)}
                payload = {"error": "429"}
            if "error" in payload and "429" in str(payload["error"]):
                wait = backoff + random.uniform(0, backoff)
                log.warning(
                    "SerpAPI answered 429 (rate limit or no searches left): retrying in %.1f s",
                    wait,
                )
                await self._sleep(wait)
                backoff = min(backoff * 2, 120)
                continue
            break
        if "organic_results" not in payload:
            if "error" in payload:  # a bad key, no searches left, nothing found: say which
                said = scrub(str(payload["error"]), self.engine.secrets)
                # Nothing found is the search's answer, not a fault: only a fault is a warning.
                quiet = "returned any results" in said
                log.log(logging.DEBUG if quiet else logging.WARNING, "search engine: %s", said)
            return {"error": NO_RESULTS}
        results = []
        for result in payload["organic_results"][:max_results]:
            shown = {"title": result["title"], "href": result["link"]}
            if self.show_snippet:
                shown["body"] = result["snippet"]
            results.append(shown)
        return results

    async def fetch_url_content(self, url: str, mode: str = "raw") -> dict[str, str]:
        """The page at `url` in `mode` (raw, markdown, truncate), as BFCL's backend gives it."""
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"Invalid URL: {url}")
        try:
            page = await self.engine.get(url)
            if page.status >= 400:
                side = "Client" if page.status < 500 else "Server"
                raise RuntimeError(f"{page.status} {side} Error: {page.reason} for url: {page.url}")
            if mode == "raw":
                return {"content": page.text}
            if mode == "markdown":
                return {"content": html_markdown(page.text)}
            if mode == "truncate":
                return {"content": html_text(page.text)}
            raise ValueError(f"Unsupported mode: {mode}")
        except Exception as exc:  # BFCL's fetch reports every failure in its result
            message = scrub(str(exc), self.engine.secrets)
            return {"error": f"An error occurred while fetching {url}: {message}"}


def search_engine(
    offline: str | None, env: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """Which engine web search would use: (the simulator's URL, "") offline, else (None, the
    SerpAPI key). Neither is BFCL_WEB_SEARCH_KEY — a run checks it before it starts."""
    variables = os.environ if env is None else env
    offline = offline or variables.get(OFFLINE_VARIABLE, "").strip() or None
    key = variables.get(KEY_VARIABLE, "").strip()
    if not offline and not key:
        raise ConfigError(
            f"bfcl:web_search_* needs {KEY_VARIABLE} (BFCL searches through SerpAPI), or "
            f"{OFFLINE_VARIABLE}=<simulator URL> to search the simulator's fixed web "
            "offline (those scores are not leaderboard scores)",
            code="BFCL_WEB_SEARCH_KEY",
        )
    return offline, key


class WebSearchBackend:
    """One entry's web-search backend: `execute(call)` runs a model's call and returns the
    text BFCL's executor would. Use it as an async context manager (it owns an HTTP client)."""

    def __init__(
        self,
        engine: SearchEngine,
        client: httpx.AsyncClient,
        *,
        show_snippet: bool = True,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.api = WebSearchAPI(engine, show_snippet=show_snippet, sleep=sleep)
        self._client = client

    @classmethod
    def open(
        cls,
        entry: BfclEntry | None = None,
        *,
        offline: str | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> WebSearchBackend:
        """The backend for `entry` (its snippet flag): against the simulator at `offline`
        (its base URL; else WORKBENCH_BFCL_WEB), else SerpAPI with SERPAPI_API_KEY; neither
        is BFCL_WEB_SEARCH_KEY, before anything is asked."""
        config = (entry.initial_config if entry else {}).get("WebSearchAPI", {})
        show_snippet = bool(config.get("show_snippet", True))
        variables = os.environ if env is None else env
        offline, key = search_engine(offline, variables)
        client = httpx.AsyncClient(trust_env=False, timeout=30)
        engine: SearchEngine = (
            SimulatorEngine(offline, client) if offline else SerpApiEngine(key, client)
        )
        return cls(engine, client, show_snippet=show_snippet, sleep=sleep)

    async def execute(self, call: ToolCall | Mapping[str, Any]) -> str:
        """One call's result text, as BFCL's executor writes it."""
        if isinstance(call, ToolCall):
            name, arguments = call.name, call.arguments
        else:
            name, arguments = str(call.get("name", "")), call.get("arguments") or {}
        if name not in FUNCTIONS:  # never looked up: BFCL's eval would not find it either
            return f"{ERROR_PREFIX}name '{name.split('.')[0]}' is not defined"
        try:
            result: Any = await getattr(self.api, name)(**arguments)
        except Exception as exc:
            return f"{ERROR_PREFIX}{scrub(str(exc), self.api.engine.secrets)}"
        return result_text(result)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> WebSearchBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def result_text(result: Any) -> str:
    """A backend's return value as BFCL hands it to the model."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


# ------------------------------------------------------------------ page text
class _Text(HTMLParser):
    """Every run of text between two tags, outside scripts and styles, stripped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden and (text := data.strip()):
            self.parts.append(text)


def html_text(page: str) -> str:
    """BFCL's "truncate" mode: the text of the page one string a line, scripts and styles
    removed (what BeautifulSoup's `get_text(separator="\\n", strip=True)` gives)."""
    parser = _Text()
    parser.feed(page)
    parser.close()
    return "\n".join(parser.parts)


class _Markdown(HTMLParser):
    """A plain HTML → Markdown: headings, paragraphs, links, list items, emphasis."""

    _BLOCKS = ("p", "div", "section", "article", "header", "footer", "nav", "table", "tr", "br")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._hidden = 0
        self._href: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self._hidden += 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self._BLOCKS:
            self.out.append("\n\n")
        elif tag == "li":
            self.out.append("\n  * ")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("_")
        elif tag == "a":
            self._href.append(dict(attrs).get("href"))
            self.out.append("[")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head"):
            self._hidden = max(0, self._hidden - 1)
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6") or tag in self._BLOCKS:
            self.out.append("\n\n")
        elif tag in ("strong", "b"):
            self.out.append("**")
        elif tag in ("em", "i"):
            self.out.append("_")
        elif tag == "a" and self._href:
            href = self._href.pop()
            self.out.append(f"]({href})" if href else "]")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.out.append(" ".join(data.split()) if data.strip() else "")


def html_markdown(page: str) -> str:
    """BFCL's "markdown" mode: html2text's conversion when it is installed (BFCL's own
    converter, so the same text), else a plainer one of ours."""
    try:
        import html2text  # type: ignore[import-not-found]
    except ImportError:
        parser = _Markdown()
        parser.feed(page)
        parser.close()
        blocks = [" ".join(b.split(" ")).strip() for b in "".join(parser.out).split("\n\n")]
        return "\n\n".join(b for b in blocks if b) + "\n\n"
    converted: str = html2text.HTML2Text().handle(page)
    return converted
