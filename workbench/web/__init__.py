"""Web search and page reading behind an SSRF guard (ports of ai-kit's `ssrf` and `read`).

- `read_page(url, ...)` reads one page as text through `validate_fetch_target` — on the
  first hop and on every redirect (at most 3), with the connection pinned to the address
  that was judged.
- `search_serper(...)` raises; `web_search(...)` walks SearXNG, Brave and Tavily
  and returns `found`, `nothing` or `could_not_look`, never raising for a backend.
- `results_to_facts(...)` / `page_to_fact(...)` turn what was found or read into citable
  facts for the grounding verifier; `results_evidence` / `page_evidence` give it the prose.

Error codes (declared in `workbench.errors`; `.details["kind"]` carries ai-kit's failure kind)::

    WebError(WorkbenchError)
    │     WEB_ERROR                   502 the class's default; every raise names its own code
    ├── WebFetchError                 a page could not be read (.kind, .reason, .url)
    │     WEB_FETCH_FAILED            502 unreachable, a non-2xx answer, a 3xx with no Location
    │     WEB_FETCH_TIMEOUT           504 a hop took longer than timeout_s
    │     WEB_FETCH_RATE_LIMITED      429 the site answered 429
    │     WEB_FETCH_REFUSED           502 the site answered 401 / 403
    │     WEB_FETCH_UNSUPPORTED_TYPE  415 a content-type that is not readable text
    │     WEB_TOO_MANY_REDIRECTS      502 a 4th redirect (kind "blocked")
    │   └── WebFetchBlocked
    │         WEB_FETCH_BLOCKED       403 the SSRF guard refused; .reason is the seed's sentence
    └── WebSearchError
          WEB_SEARCH_NO_KEY           503 search_serper without a key (nothing was sent)
          WEB_SEARCH_FAILED           502 Serper failed; the key is in no text or detail
          WEB_SEARCH_UNKNOWN_PROVIDER 400 web_search(provider=...) names no known backend

A body larger than `max_bytes` is not an error: the stream is dropped at the cap and the
page comes back `truncated`, as the seed does.
"""

from workbench.web.read import Page, Readable, extract_readable_text, page_evidence, read_page
from workbench.web.search import (
    SearchAttempt,
    SearchOutcome,
    SearchProvider,
    WebFailure,
    WebResult,
    WebSearchError,
    WebSearchOutcome,
    brave_provider,
    default_providers,
    describe_attempts,
    describe_empty_search,
    results_evidence,
    search_serper,
    searxng_provider,
    tavily_provider,
    web_search,
)
from workbench.web.search_facts import page_to_fact, results_to_facts
from workbench.web.ssrf import (
    FetchTarget,
    Resolver,
    WebError,
    WebFetchBlocked,
    WebFetchError,
    is_private_address,
    system_resolver,
    validate_fetch_target,
)

__all__ = [
    "FetchTarget",
    "Page",
    "Readable",
    "Resolver",
    "SearchAttempt",
    "SearchOutcome",
    "SearchProvider",
    "WebError",
    "WebFailure",
    "WebFetchBlocked",
    "WebFetchError",
    "WebResult",
    "WebSearchError",
    "WebSearchOutcome",
    "brave_provider",
    "default_providers",
    "describe_attempts",
    "describe_empty_search",
    "extract_readable_text",
    "is_private_address",
    "page_evidence",
    "page_to_fact",
    "read_page",
    "results_evidence",
    "results_to_facts",
    "search_serper",
    "searxng_provider",
    "system_resolver",
    "tavily_provider",
    "validate_fetch_target",
    "web_search",
]
