"""Web search: Serper, and the SearXNG / Brave / Tavily walk (ai-kit's `search`).

- `search_serper(...)` raises: no key is WEB_SEARCH_NO_KEY before any request; any failure
  is WEB_SEARCH_FAILED, whose text and details never hold the key (scrubbed, and the
  httpx exception — whose request carries the key header — is not chained).
- `web_search(...)` never raises for a backend's failure: it walks the providers and says
  `found`, `nothing` (some backend answered, with no result) or `could_not_look` (none
  could answer). The two empties are opposite instructions to a model
  (`describe_empty_search`): "nothing for this phrasing" is not "could not search".
- Search calls go to the configured vendor endpoints, not to pages: they do not pass the
  SSRF guard (the base URLs come from the operator's environment, never from a reader).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from workbench.errors import excerpt, scrub
from workbench.web.ssrf import WebError

SERPER_URL = "https://google.serper.dev"
BRAVE_URL = "https://api.search.brave.com"
TAVILY_URL = "https://api.tavily.com"
SERPER_MAX_RESULTS = 8
TITLE_CHARS = 300
SNIPPET_CHARS = 600

FailureKind = Literal[
    "not_configured", "rate_limited", "auth", "timeout", "blocked", "unreachable", "bad_response"
]


class WebSearchError(WebError):
    """A search that could not run: WEB_SEARCH_NO_KEY, WEB_SEARCH_FAILED, …"""

    code = "WEB_SEARCH_FAILED"
    status = 502


@dataclass(frozen=True)
class WebResult:
    title: str
    url: str
    snippet: str
    published: str | None = None
    engine: str | None = None


@dataclass(frozen=True)
class WebFailure:
    kind: FailureKind
    reason: str


@dataclass(frozen=True)
class SearchOutcome:
    """One provider's answer: `results` (maybe empty) or a `failure`."""

    provider: str
    query: str
    results: list[WebResult] = field(default_factory=list)
    failure: WebFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class SearchAttempt:
    provider: str
    outcome: Literal["results", "empty", "failed"]
    count: int = 0
    failure: WebFailure | None = None


@dataclass(frozen=True)
class WebSearchOutcome:
    status: Literal["found", "nothing", "could_not_look"]
    query: str
    results: list[WebResult] = field(default_factory=list)
    provider: str | None = None
    attempts: list[SearchAttempt] = field(default_factory=list)


# --- shared helpers (the seed's) --------------------------------------------------------


def clamp_limit(limit: Any) -> int:
    """A falsy or non-finite limit gives 8; otherwise the floor, clamped to 1..20."""
    if not limit or not isinstance(limit, int | float) or not math.isfinite(limit):
        return 8
    return min(20, max(1, math.floor(limit)))


def _site_host(site: str) -> str:
    return re.sub(r"^[a-z][a-z0-9+.\-]*://", "", site.strip(), flags=re.I).split("/", 1)[0]


def apply_site(query: str, site: str | None) -> str:
    """`query site:{host}`: any scheme removed, everything after the first `/` cut."""
    host = _site_host(site) if site else ""
    return f"{query} site:{host}" if host else query


def trim_result(
    title: Any, url: Any, snippet: Any, published: Any = None, engine: Any = None
) -> WebResult | None:
    """The seed's `trimResult`: no http(s) url, no row; title falls back to the url."""
    if not isinstance(url, str) or not re.match(r"https?://", url.strip(), re.I):
        return None
    url = url.strip()
    title = title.strip() if isinstance(title, str) else ""
    snippet = snippet.strip() if isinstance(snippet, str) else ""

    def present(value: Any) -> str | None:
        return value.strip() if isinstance(value, str) and value.strip() else None

    return WebResult(
        (title or url)[:TITLE_CHARS],
        url,
        snippet[:SNIPPET_CHARS],
        present(published),
        present(engine),
    )


def _status_failure(label: str, status: int) -> WebFailure:
    if status == 429:
        return WebFailure("rate_limited", f"{label} is rate-limiting this key right now.")
    if status in (401, 403):
        return WebFailure("auth", f"{label} rejected the credentials ({status}).")
    return WebFailure("bad_response", f"{label} answered {status}.")


def _transport_failure(exc: BaseException, secrets: Iterable[str | None]) -> WebFailure:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return WebFailure("timeout", "The search backend did not answer in time.")
    msg = scrub(" ".join(str(exc).split()) or type(exc).__name__, secrets)
    return WebFailure("unreachable", f"The search backend could not be reached ({msg}).")


# --- the three backends -----------------------------------------------------------------


@dataclass
class SearchProvider:
    """One backend. `search` never raises for the backend's failures."""

    name: str
    label: str
    env_var: str
    secret: str | None
    endpoint: str | None
    build: Callable[[SearchProvider, str, int, str | None], dict[str, Any]]
    read: Callable[[Any, str], list[WebResult | None]]
    needs_secret: bool = True
    timeout_s: float = 10

    def configured(self) -> bool:
        return bool(self.endpoint) and (bool(self.secret) or not self.needs_secret)

    async def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        site: str | None = None,
        lang: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout_s: float | None = None,
    ) -> SearchOutcome:
        if not self.configured():
            return SearchOutcome(
                self.name,
                query,
                failure=WebFailure("not_configured", f"{self.env_var} is not set."),
            )
        n = clamp_limit(limit)
        request = self.build(self, apply_site(query, site), n, lang)
        own = client is None
        http = client or httpx.AsyncClient()
        failure: WebFailure | None = None
        data: Any = None
        try:
            response = await http.request(timeout=timeout_s or self.timeout_s, **request)
            if not response.is_success:
                failure = _status_failure(self.label, response.status_code)
            else:
                try:
                    data = response.json()
                except ValueError:
                    failure = WebFailure("bad_response", f"{self.label} answered with no JSON.")
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            failure = _transport_failure(exc, [self.secret])
        finally:
            if own:
                await http.aclose()
        if failure is not None:
            return SearchOutcome(self.name, query, failure=failure)
        rows = [r for r in self.read(data, self.name) if r is not None]
        return SearchOutcome(self.name, query, results=rows[:n])


def _rows(container: Any, key: str) -> list[dict[str, Any]]:
    rows = container.get(key) if isinstance(container, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _build_searxng(p: SearchProvider, q: str, n: int, lang: str | None) -> dict[str, Any]:
    params = {"q": q, "format": "json", "safesearch": "0"}
    if lang:
        params["language"] = lang
    headers = {"Accept": "application/json"}
    if p.secret:
        headers["Authorization"] = f"Bearer {p.secret}"
    return {"method": "GET", "url": f"{p.endpoint}/search", "params": params, "headers": headers}


def _read_searxng(data: Any, _name: str) -> list[WebResult | None]:
    return [
        trim_result(
            r.get("title"), r.get("url"), r.get("content"), r.get("publishedDate"), r.get("engine")
        )
        for r in _rows(data, "results")
    ]


def _build_brave(p: SearchProvider, q: str, n: int, lang: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"q": q, "count": n}
    if lang:
        params["search_lang"] = lang.split("-", 1)[0]
    headers = {"Accept": "application/json", "X-Subscription-Token": p.secret or ""}
    return {
        "method": "GET",
        "url": f"{p.endpoint}/res/v1/web/search",
        "params": params,
        "headers": headers,
    }


def _read_brave(data: Any, _name: str) -> list[WebResult | None]:
    web = data.get("web") if isinstance(data, dict) else None
    return [
        trim_result(r.get("title"), r.get("url"), r.get("description"), r.get("page_age"), "brave")
        for r in _rows(web, "results")
    ]


def _build_tavily(p: SearchProvider, q: str, n: int, lang: str | None) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": f"{p.endpoint}/search",
        "json": {"query": q, "max_results": n, "search_depth": "basic"},
        "headers": {"Authorization": f"Bearer {p.secret or ''}"},
    }


def _read_tavily(data: Any, _name: str) -> list[WebResult | None]:
    return [
        trim_result(
            r.get("title"), r.get("url"), r.get("content"), r.get("published_date"), "tavily"
        )
        for r in _rows(data, "results")
    ]


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip()
    return value or None


def searxng_provider(env: Mapping[str, str] | None = None) -> SearchProvider:
    env = os.environ if env is None else env
    base = (_env_value(env, "SEARXNG_URL") or "").rstrip("/") or None
    token = _env_value(env, "SEARXNG_TOKEN")
    return SearchProvider(
        "searxng",
        "SearXNG",
        "SEARXNG_URL",
        token,
        base,
        _build_searxng,
        _read_searxng,
        needs_secret=False,  # the token is optional; the URL is what configures it
    )


def brave_provider(
    env: Mapping[str, str] | None = None, *, base_url: str = BRAVE_URL
) -> SearchProvider:
    env = os.environ if env is None else env
    key = _env_value(env, "BRAVE_SEARCH_API_KEY")
    return SearchProvider(
        "brave",
        "Brave Search",
        "BRAVE_SEARCH_API_KEY",
        key,
        base_url.rstrip("/"),
        _build_brave,
        _read_brave,
    )


def tavily_provider(
    env: Mapping[str, str] | None = None, *, base_url: str = TAVILY_URL
) -> SearchProvider:
    env = os.environ if env is None else env
    key = _env_value(env, "TAVILY_API_KEY")
    return SearchProvider(
        "tavily", "Tavily", "TAVILY_API_KEY", key, base_url.rstrip("/"), _build_tavily, _read_tavily
    )


PROVIDER_NAMES = ("searxng", "brave", "tavily")


def default_providers(
    env: Mapping[str, str] | None = None, *, base_urls: Mapping[str, str] | None = None
) -> list[SearchProvider]:
    """[searxng, brave, tavily], keeping those that are configured."""
    return [p for p in _providers(PROVIDER_NAMES, env, base_urls) if p.configured()]


def _providers(
    names: Iterable[str], env: Mapping[str, str] | None, base_urls: Mapping[str, str] | None
) -> list[SearchProvider]:
    urls = dict(base_urls or {})
    made: list[SearchProvider] = []
    for name in names:
        if name == "searxng":
            made.append(searxng_provider(env))
        elif name == "brave":
            made.append(brave_provider(env, base_url=urls.get("brave", BRAVE_URL)))
        elif name == "tavily":
            made.append(tavily_provider(env, base_url=urls.get("tavily", TAVILY_URL)))
        else:
            raise WebSearchError(
                f"unknown search provider {name!r} (known: {', '.join(PROVIDER_NAMES)})",
                code="WEB_SEARCH_UNKNOWN_PROVIDER",
                status=400,
            )
    return made


_NO_BACKEND = (
    "No search backend is configured (set SEARXNG_URL, BRAVE_SEARCH_API_KEY or TAVILY_API_KEY)."
)


async def web_search(
    query: str,
    provider: str | Sequence[str] | None = None,
    *,
    limit: int | None = None,
    site: str | None = None,
    lang: str | None = None,
    client: httpx.AsyncClient | None = None,
    env: Mapping[str, str] | None = None,
    providers: Sequence[SearchProvider] | None = None,
    base_urls: Mapping[str, str] | None = None,
    timeout_s: float = 10,
) -> WebSearchOutcome:
    """Walk the providers until one finds something. Backend failures come back as values.

    `provider` names one backend or several, in order; None walks the configured ones
    (searxng, brave, tavily). `providers` passes ready-made ones instead. `base_urls`
    ({"brave": ..., "tavily": ...}) points the vendors elsewhere (tests, a relay).
    """
    if not isinstance(query, str) or not query.strip():
        return WebSearchOutcome("could_not_look", query if isinstance(query, str) else "")
    if providers is None:
        if provider is None:
            chosen = default_providers(env, base_urls=base_urls)
        else:
            names = [provider] if isinstance(provider, str) else list(provider)
            chosen = _providers(names, env, base_urls)
    else:
        chosen = list(providers)
    if not chosen:
        failure = WebFailure("not_configured", _NO_BACKEND)
        return WebSearchOutcome(
            "could_not_look", query.strip(), attempts=[SearchAttempt("none", "failed", 0, failure)]
        )
    q = query.strip()
    attempts: list[SearchAttempt] = []
    answered = False
    for backend in chosen:
        outcome = await backend.search(
            q, limit=limit, site=site, lang=lang, client=client, timeout_s=timeout_s
        )
        if outcome.failure is not None:
            attempts.append(SearchAttempt(backend.name, "failed", 0, outcome.failure))
            continue
        answered = True
        if not outcome.results:
            attempts.append(SearchAttempt(backend.name, "empty"))
            continue
        attempts.append(SearchAttempt(backend.name, "results", len(outcome.results)))
        return WebSearchOutcome("found", q, outcome.results, backend.name, attempts)
    return WebSearchOutcome("nothing" if answered else "could_not_look", q, attempts=attempts)


def describe_attempts(attempts: Iterable[SearchAttempt]) -> str:
    """`searxng 3; brave empty; tavily timeout`."""
    parts = []
    for a in attempts:
        if a.outcome == "results":
            parts.append(f"{a.provider} {a.count}")
        elif a.outcome == "empty":
            parts.append(f"{a.provider} empty")
        else:
            parts.append(f"{a.provider} {a.failure.kind if a.failure else 'failed'}")
    return "; ".join(parts)


def describe_empty_search(outcome: WebSearchOutcome) -> str:
    """What a model is told when nothing came back: two opposite instructions."""
    if outcome.status == "nothing":
        return (
            f'The web search for "{outcome.query}" ran and returned no results. You may say '
            "that nothing was found for this phrasing and suggest another one. Do NOT present "
            "this as proof that the thing does not exist."
        )
    reasons = " | ".join(
        f"{a.provider}: {a.failure.reason if a.failure else a.outcome}" for a in outcome.attempts
    )
    return (
        f"The web search COULD NOT BE PERFORMED ({reasons or 'no backend'}). Say that you could "
        "not search the web just now; you must NOT say that nothing was found."
    )


def results_evidence(results: Iterable[WebResult], ids: Sequence[str] | None = None) -> str:
    """One block per result, `[{id}] {title} — {url}` then the snippet; blocks blank-separated."""
    blocks = []
    for i, r in enumerate(results):
        fact_id = ids[i] if ids is not None and i < len(ids) else ""
        head = f"[{fact_id}] " if fact_id else ""
        blocks.append(f"{head}{r.title} — {r.url}" + (f"\n{r.snippet}" if r.snippet else ""))
    return "\n\n".join(blocks)


# --- Serper -----------------------------------------------------------------------------


def _serper_query(query: str, sites: Iterable[str]) -> str:
    hosts = [h for h in (_site_host(s) for s in sites if isinstance(s, str)) if h]
    if not hosts:
        return query
    if len(hosts) == 1:
        return f"{query} site:{hosts[0]}"
    return f"{query} ({' OR '.join(f'site:{h}' for h in hosts)})"


async def search_serper(
    query: str,
    sites: Iterable[str] = (),
    hl: str | None = None,
    key: str | None = None,
    client: httpx.AsyncClient | None = None,
    accept: Callable[[WebResult, str], bool] | None = None,
    base_url: str = SERPER_URL,
    timeout_s: float = 10,
) -> list[WebResult]:
    """Serper's Google results: https only, with a title, `accept`ed, at most 8.

    `key` is explicit (the caller reads SERPER_API_KEY): no key, no request at all.
    """
    key = key.strip() if isinstance(key, str) else None
    if not key:
        raise WebSearchError(
            "no Serper key: set SERPER_API_KEY and pass it as key=",
            code="WEB_SEARCH_NO_KEY",
            status=503,
        )
    if not isinstance(query, str) or not query.strip():
        return []
    body: dict[str, Any] = {"q": _serper_query(query.strip(), sites)}
    if hl:
        body["hl"] = hl
    own = client is None
    http = client or httpx.AsyncClient()
    failure: tuple[str, str, int, str] | None = None  # kind, reason, status, body excerpt
    data: Any = None
    try:
        response = await http.post(
            f"{base_url.rstrip('/')}/search",
            json=body,
            headers={"X-API-KEY": key, "Content-Type": "application/json"},
            timeout=timeout_s,
        )
        if not response.is_success:
            f = _status_failure("Serper", response.status_code)
            failure = (f.kind, f.reason, response.status_code, excerpt(response.text, [key]))
        else:
            try:
                data = response.json()
            except ValueError:
                failure = ("bad_response", "Serper answered with no JSON.", 200, "")
            if failure is None and not isinstance(data, dict):
                failure = ("bad_response", "Serper answered with no results object.", 200, "")
    except (httpx.HTTPError, OSError, TimeoutError) as exc:
        f = _transport_failure(exc, [key])
        failure = (f.kind, f.reason, 0, "")
    finally:
        if own:
            await http.aclose()
    if failure is not None:
        # Raised here, outside the `except`: the httpx error (its request holds the key
        # header) is neither the cause nor the context of what the caller sees.
        kind, reason, status_code, text = failure
        raise WebSearchError(
            scrub(f"the web search failed: {reason}", [key]),
            code="WEB_SEARCH_FAILED",
            details={"kind": kind, "status_code": status_code, "body": text},
        )
    results: list[WebResult] = []
    for row in _rows(data, "organic"):
        link, title = row.get("link"), row.get("title")
        if not isinstance(link, str) or not link.strip().lower().startswith("https://"):
            continue
        if not isinstance(title, str) or not title.strip():
            continue
        result = trim_result(title, link, row.get("snippet"), row.get("date"), "serper")
        if result is None or (accept is not None and not accept(result, result.url)):
            continue
        results.append(result)
        if len(results) == SERPER_MAX_RESULTS:
            break
    return results
