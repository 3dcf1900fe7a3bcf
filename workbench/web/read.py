"""Read one web page behind the SSRF guard (a port of ai-kit's `read`).

- At most 4 hops (the page and 3 redirects). Every hop is validated again by
  `validate_fetch_target`, and its connection is pinned to the address the guard judged.
- Redirects are followed by hand: `Location` is resolved against the page's URL (never the
  pinned address), a 3xx without one is WEB_FETCH_FAILED.
- A content-type that is present and not readable text is WEB_FETCH_UNSUPPORTED_TYPE; a
  missing one is read (the seed's rule).
- The body is streamed and the stream dropped at `max_bytes` (decoded bytes, so a
  compressed bomb stops too); the page is then `truncated`, not refused.
- `timeout_s` bounds each whole hop — lookup, connection, headers and body — so a site that
  drips bytes cannot hold a reader past it.
"""

from __future__ import annotations

import asyncio
import codecs
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from workbench.errors import scrub
from workbench.web.ssrf import (
    AllowEntry,
    FetchTarget,
    Resolver,
    WebFetchError,
    validate_fetch_target,
)

MAX_REDIRECTS = 3
USER_AGENT = "ai-kit/web (+https://github.com/bitbaum/ai-kit)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"
ACCEPT_LANGUAGE = "en,de;q=0.8"
READABLE_TYPES = (
    "text/html",
    "application/xhtml",
    "text/plain",
    "text/markdown",
    "application/json",
    "application/xml",
    "text/xml",
)
TITLE_CHARS = 300


@dataclass(frozen=True)
class Page:
    """A page that was read: `url` after redirects, `truncated` when part was not read."""

    url: str
    title: str
    text: str
    truncated: bool


@dataclass(frozen=True)
class Readable:
    title: str
    text: str
    truncated: bool


# --- readable text ----------------------------------------------------------------------

_ENTITIES = {
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "quot": '"',
    "apos": "'",
    "nbsp": "\u00a0",
    "ndash": "\u2013",
    "mdash": "\u2014",
    "hellip": "\u2026",
    "rsquo": "\u2019",
    "lsquo": "\u2018",
    "ldquo": "\u201c",
    "rdquo": "\u201d",
}
_ENTITY = re.compile(r"&(?:#[xX]([0-9a-fA-F]+)|#([0-9]+)|([a-zA-Z]+));")
_DROPPED = "script|style|noscript|template|svg|canvas|iframe|form|nav|footer|header|aside"
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ELEMENT = re.compile(rf"<({_DROPPED})\b[^>]*>.*?</\1\s*>", re.S | re.I)
_UNCLOSED = re.compile(rf"<({_DROPPED})\b.*\Z", re.S | re.I)
_BREAK = re.compile(r"</(?:p|div|li|tr|h[1-6]|section|article|br)\s*>|<br\b[^>]*>", re.I)
_TAG = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.S | re.I)
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_RUNS = re.compile(r"\n{3,}")


def _entity(match: re.Match[str]) -> str:
    hex_digits, decimal, name = match.groups()
    if name is not None:
        return _ENTITIES.get(name, match[0])
    code = int(hex_digits, 16) if hex_digits is not None else int(decimal)
    if 1 <= code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
        return chr(code)
    return match[0]


def decode_entities(text: str) -> str:
    """The seed's small entity table and numeric forms; unknown names stay as written."""
    return _ENTITY.sub(_entity, text)


def extract_readable_text(html: str, max_chars: int = 12000) -> Readable:
    """Title and readable text of an HTML page, in the seed's order of steps."""
    found = _TITLE.search(html)
    title = ""
    if found:
        title = " ".join(decode_entities(_TAG.sub(" ", found[1])).split())[:TITLE_CHARS]
    body = _COMMENT.sub("", html)
    body = _ELEMENT.sub("", body)
    body = _UNCLOSED.sub("", body)  # an unclosed <script> hides everything after it
    body = _BREAK.sub("\n", body)
    body = _TAG.sub(" ", body)
    # Entities last: an encoded "&lt;script&gt;" is text about markup, never markup.
    body = decode_entities(body)
    lines = (_SPACES.sub(" ", line).strip() for line in body.split("\n"))
    text = _BLANK_RUNS.sub("\n\n", "\n".join(line for line in lines if line))
    limit = _char_limit(max_chars)
    return Readable(title, text[:limit], len(text) > limit)


def _char_limit(max_chars: float | int | None) -> int:
    # Non-finite or missing caps fall back to the default rather than raising.
    if max_chars is None or (isinstance(max_chars, float) and not math.isfinite(max_chars)):
        return 12000
    return max(0, int(max_chars))


# --- reading ----------------------------------------------------------------------------


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return True
    text = str(exc).lower()
    return "timed out" in text or "time out" in text


def _transport_error(exc: BaseException, url: str) -> WebFetchError:
    if _is_timeout(exc):
        return WebFetchError(
            "The site took too long to answer.", kind="timeout", url=url, code="WEB_FETCH_TIMEOUT"
        )
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return WebFetchError(
        f"The site could not be reached ({scrub(msg)}).", kind="unreachable", url=url
    )


def _charset(content_type: str) -> str:
    found = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.I)
    if found:
        try:
            return codecs.lookup(found[1]).name
        except LookupError:
            pass
    return "utf-8"


async def _hop(
    client: httpx.AsyncClient, target: FetchTarget, timeout_s: float, max_bytes: int
) -> str | tuple[str, bool]:
    """One request: a redirect destination (str), or the decoded body and whether it was cut."""
    extensions = {}
    if target.scheme == "https" and not target.host_is_ip:
        extensions["sni_hostname"] = target.host  # the pin must still verify the name
    request = client.build_request(
        "GET",
        target.connect_url,
        headers={
            "Host": target.host_header,
            "User-Agent": USER_AGENT,
            "Accept": ACCEPT,
            "Accept-Language": ACCEPT_LANGUAGE,
        },
        timeout=timeout_s,
        extensions=extensions,
    )
    response = await client.send(request, stream=True, follow_redirects=False)
    try:
        status = response.status_code
        if 300 <= status < 400:
            location = response.headers.get("location", "").strip()
            if not location:
                raise WebFetchError(
                    f"Redirect {status} with no destination.", kind="bad_response", url=target.url
                )
            return urljoin(target.url, location)
        if status == 429:
            raise WebFetchError(
                "The site asked us to slow down (429).",
                kind="rate_limited",
                url=target.url,
                code="WEB_FETCH_RATE_LIMITED",
                status=429,
            )
        if status in (401, 403):
            raise WebFetchError(
                f"The site refused the request ({status}).",
                kind="blocked",
                url=target.url,
                code="WEB_FETCH_REFUSED",
            )
        if not 200 <= status < 300:
            raise WebFetchError(
                f"The site answered {status}.",
                kind="bad_response",
                url=target.url,
                details={"status_code": status},
            )
        content_type = response.headers.get("content-type", "")
        if content_type and not any(t in content_type.lower() for t in READABLE_TYPES):
            kind_of_file = content_type.split(";", 1)[0].strip()
            raise WebFetchError(
                f"That is a {kind_of_file} file, not a readable page.",
                kind="bad_response",
                url=target.url,
                code="WEB_FETCH_UNSUPPORTED_TYPE",
                status=415,
            )
        body = bytearray()
        cut = False
        async for chunk in response.aiter_bytes():
            if len(body) + len(chunk) > max_bytes:
                body += chunk[: max_bytes - len(body)]
                cut = True  # the stream is dropped here: the rest is never downloaded
                break
            body += chunk
        return body.decode(_charset(content_type), errors="replace"), cut
    finally:
        await response.aclose()


async def read_page(
    url: str,
    *,
    client: httpx.AsyncClient | None = None,
    resolver: Resolver | None = None,
    timeout_s: float = 10,
    max_chars: int = 12000,
    max_bytes: int = 2_000_000,
    allow: Iterable[AllowEntry] | None = None,
) -> Page:
    """Read `url` as text. Raises `WebFetchError` (WEB_FETCH_BLOCKED when the guard refuses).

    Without a `client`, one is made for the call with `trust_env=False`: a proxy from the
    environment would resolve the host itself and undo the pin. An injected client is used
    as it is (its proxies too) — inject one that connects directly.
    """
    allow = list(allow or ())
    own = client is None
    http = client or httpx.AsyncClient(trust_env=False, follow_redirects=False)
    try:
        current = url
        for _hop_number in range(MAX_REDIRECTS + 1):
            try:
                async with asyncio.timeout(timeout_s):
                    target = await validate_fetch_target(current, resolver, allow=allow)
                    outcome = await _hop(http, target, timeout_s, max_bytes)
            except WebFetchError:
                raise
            except (TimeoutError, httpx.HTTPError, OSError) as exc:
                raise _transport_error(exc, current) from None
            if isinstance(outcome, str):
                current = outcome
                continue
            html, cut = outcome
            readable = extract_readable_text(html, max_chars)
            return Page(target.url, readable.title, readable.text, readable.truncated or cut)
        raise WebFetchError(
            f"More than {MAX_REDIRECTS} redirects.",
            kind="blocked",
            url=current,
            code="WEB_TOO_MANY_REDIRECTS",
        )
    finally:
        if own:
            await http.aclose()


def page_evidence(page: Page, fact_id: str = "") -> str:
    """`[{id}] {title or url} — {url}` then the text; says so when the rest was not read."""
    head = f"[{fact_id}] " if fact_id else ""
    text = f"{head}{page.title or page.url} — {page.url}\n{page.text}"
    return text + "\n[…the rest of the page was not read]" if page.truncated else text
