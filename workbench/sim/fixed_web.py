"""The simulator's small fixed web: a search engine and its pages, for BFCL's web search offline.

    GET /sim/search?q=...&kl=...   SerpAPI's DuckDuckGo answer: `organic_results` ranked by
                                   how many of the query's words a page holds (at least half
                                   of them), or SerpAPI's "no results" error
    GET /sim/page?url=...          the page at `url` as HTML (200), or 404

The pages (`fixed_web.json`) make a handful of BFCL's web-search entries answerable — the
facts their possible answers name, chained as the questions chain them — and nothing else:
every other query finds nothing, as a search engine may. Answering the same shape as SerpAPI
lets the backend read both engines with one reader; offline scores are still not
leaderboard scores (a fixed corpus is not the web).
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CORPUS = Path(__file__).with_name("fixed_web.json")
NO_RESULTS = "DuckDuckGo hasn't returned any results for this query."
# Words too common to tell pages apart: a query of only these finds nothing.
_STOP = frozenset(
    "a an and are as at be by did does for from how in is it many most of on or the this "
    "to was what when where which who whom with".split()
)


@dataclass(frozen=True, slots=True)
class WebPage:
    url: str
    title: str
    snippet: str
    keywords: tuple[str, ...]
    paragraphs: tuple[str, ...]

    def html(self) -> str:
        """The page as a site would serve it: a title, a style and a script (which BFCL's
        "truncate" mode strips), a heading, the paragraphs."""
        body = "\n".join(f"<p>{html.escape(p)}</p>" for p in self.paragraphs)
        title = html.escape(self.title)
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{title}</title>\n<style>body {{ font-family: sans-serif; }}</style>\n"
            "<script>window.analytics = [];</script>\n</head>\n<body>\n"
            f'<nav><a href="/">Home</a></nav>\n<h1>{title}</h1>\n{body}\n</body>\n</html>\n'
        )

    def terms(self) -> set[str]:
        return set(_words(" ".join((self.title, self.snippet, *self.keywords, *self.paragraphs))))


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP]


@cache
def corpus() -> tuple[WebPage, ...]:
    """The fixed pages, read once."""
    raw = json.loads(CORPUS.read_text(encoding="utf-8"))
    return tuple(
        WebPage(p["url"], p["title"], p["snippet"], tuple(p["keywords"]), tuple(p["paragraphs"]))
        for p in raw["pages"]
    )


def search(query: str, region: str = "wt-wt") -> dict[str, Any]:
    """SerpAPI's DuckDuckGo payload for `query`: the pages holding at least half of its
    words, most words first (the corpus's order breaks ties)."""
    words = list(dict.fromkeys(_words(query)))
    params = {"engine": "duckduckgo", "q": query, "kl": region}
    scored = []
    if words:
        need = math.ceil(len(words) / 2)
        for k, page in enumerate(corpus()):
            hits = len(set(words) & page.terms())
            if hits >= need:
                scored.append((-hits, k, page))
    if not scored:
        return {"search_parameters": params, "error": NO_RESULTS}
    return {
        "search_parameters": params,
        "organic_results": [
            {"position": n, "title": p.title, "link": p.url, "snippet": p.snippet}
            for n, (_, _, p) in enumerate(sorted(scored), 1)
        ],
    }


def page(url: str) -> WebPage | None:
    """The page at `url` (a `#:~:text=` fragment or a trailing slash aside), if any."""
    wanted = url.split("#", 1)[0].rstrip("/")
    return next((p for p in corpus() if p.url.rstrip("/") == wanted), None)


async def _search(request: Request) -> Response:
    return JSONResponse(
        search(request.query_params.get("q", ""), request.query_params.get("kl", "wt-wt"))
    )


async def _page(request: Request) -> Response:
    found = page(request.query_params.get("url", ""))
    if found is None:
        return Response(
            "<html><body><h1>404 Not Found</h1></body></html>", 404, media_type="text/html"
        )
    return Response(found.html(), 200, media_type="text/html; charset=utf-8")


def fixed_web_routes() -> list[Route]:
    return [
        Route("/sim/search", _search, methods=["GET"]),
        Route("/sim/page", _page, methods=["GET"]),
    ]
