"""Web results and read pages as grounded facts (a port of ai-kit's web `facts`).

Search on its own makes invention worse: the model gets a pile of plausible text from
strangers beside the user's real data, with nothing saying which sentence came from where.
As facts, each hit carries a citation handle (`[F3]`) and its `url`, and the one verifier
that checks answers over stored records checks answers over the web too.

The facts are the citable metadata only; the prose a claim may draw on (snippets, page
text) goes to the verifier as evidence, through `results_evidence` and `page_evidence` —
ten thousand characters of page text in a field would bury the citation.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from workbench.text.facts import Fact, make_fact
from workbench.web.read import Page
from workbench.web.search import WebResult

TRUNCATED = "yes — only the first part of the page was read"


def results_to_facts(results: Iterable[WebResult], provider: str) -> list[Fact]:
    """One `web_result` fact per hit, in the engine's ranking."""
    return [
        make_fact(
            "web_result",
            r.title,
            f"web search ({provider})",
            {
                "title": r.title,
                "url": r.url,
                "published": r.published,  # an undated hit stays undated: never "today"
                "snippet": r.snippet or None,
                "engine": r.engine if r.engine is not None else provider,
            },
        )
        for r in results
    ]


def page_to_fact(page: Page, *, now: datetime | None = None) -> Fact:
    """A `web_page` fact for a page that was read; `now` fixes the `retrieved` date.

    The date is UTC's, as the seed's. A truncated page says so in a field: a model told the
    text is partial speaks of "the first part of the page" instead of summarising a page it
    half read."""
    moment = now if now is not None else datetime.now(UTC)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return make_fact(
        "web_page",
        page.title or page.url,
        "page read",
        {
            "title": page.title or None,
            "url": page.url,
            "retrieved": moment.date().isoformat(),
            "truncated": TRUNCATED if page.truncated else "no",
        },
    )
