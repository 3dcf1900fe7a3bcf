"""Sources: read, used, contradicted (the seed's "Les sources : lues, utilisées,
contredites").

- `SourceLedger` collects the sources tools return. A tool that returns several sources
  (a search) does not tie its whole output to each: each source keeps its own snippet;
  only a tool returning one source (a page read) ties its whole text to it.
- `used_sources(answer, sources, evidence)` keeps the sources the answer relies on — its
  link, a reference named on both sides, or enough distinctive shared words — in their
  order. It never adds one: a source the answer invents is not a source.
- `find_contradiction(answer, excerpts, compare)` checks each factual sentence against its
  nearest excerpt with an injected local NLI model. Only a clear contradiction counts;
  doubt, a failure or a timeout says nothing (None): a checker that cries wolf gets
  switched off.
- `rerank_results(question, found, score)` orders results by relevance and the sources
  follow; without `score` (or when it fails) the engine's order stays.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workbench.text.language import fold

_URL = re.compile(r"https?://[^\s<>\"'`\])}]+", re.I)
_URL_TAIL = ".,;:!?"
_TEXT_KEYS = ("text", "content", "snippet", "excerpt", "description", "body")
_LIST_KEYS = ("sources", "results", "items", "organic", "documents")
_CITATION = re.compile(r"[\[［]\s*([^\[\]［］\s][^\[\]［］]{0,40}?)\s*[\]］]")
# A reference-like token: "RFC 9110", "ISO-8601", "L.121-1", "3:16", "2024-05-01".
_REFERENCE = re.compile(r"\b(?:[A-Z]{2,}[ -]?\d+(?:[.:\-/]\d+)*|[A-Za-z]?\.?\d+(?:[.:\-/]\d+)+)\b")
_WORD_OR_NUMBER = re.compile(r"[^\W\d_]+|\d+(?:[.,:]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_CLEAR = ("contradicts", "contradiction", "contradict")


@dataclass(frozen=True, slots=True)
class Source:
    ref: str  # its own id when the tool gave one, else S1, S2, ... in order of arrival
    url: str | None = None
    title: str | None = None
    text: str = ""  # what was read of this source, and only of it
    tool: str | None = None


def normalize_url(url: str) -> str:
    """Comparable form: no scheme, no `www.`, no fragment, no trailing slash, host lower-cased."""
    url = url.strip().rstrip(_URL_TAIL)
    url = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url, flags=re.I).split("#", 1)[0]
    host, _, rest = url.partition("/")
    host = host.lower().removeprefix("www.")
    return (host + ("/" + rest if rest else "")).rstrip("/")


def urls_in(text: str) -> list[str]:
    return [u.rstrip(_URL_TAIL) for u in _URL.findall(text or "")]


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _str_or_none(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    return value.strip() or None if isinstance(value, str) else None


# ------------------------------------------------------------------ the ledger


class SourceLedger:
    """The sources the tools of one conversation returned, de-duplicated by link."""

    def __init__(self) -> None:
        self._sources: list[Source] = []
        self._index: dict[str, int] = {}  # normalized url, or "ref:" + ref

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[Source]:
        return iter(self._sources)

    @property
    def sources(self) -> tuple[Source, ...]:
        return tuple(self._sources)

    def get(self, ref_or_url: str) -> Source | None:
        for key in (normalize_url(ref_or_url), "ref:" + ref_or_url.strip().casefold()):
            if key in self._index:
                return self._sources[self._index[key]]
        return None

    def keep(self, tool: str, result: Any) -> list[Source]:
        """Record the sources in one tool result; returns them (new or updated), in order.

        A result is a list of sources, a mapping holding one (`url`/`link`, `title`,
        `text`/`content`/`snippet`...) or a list of them (`sources`, `results`, `items`,
        `organic`), JSON text of either, or plain text whose links are the sources."""
        found = list(self._read(result))
        if len(found) == 1 and isinstance(result, str) and not found[0][2]:
            found = [(found[0][0], found[0][1], result.strip(), found[0][3])]
        return [self._add(tool, *f) for f in found]

    def _read(self, result: Any) -> Iterator[tuple[str | None, str | None, str, str | None]]:
        """(url, title, text, ref) for each source in `result`."""
        if isinstance(result, str):
            stripped = result.strip()
            if stripped[:1] in ("{", "["):
                try:
                    yield from self._read(json.loads(stripped))
                    return
                except (ValueError, RecursionError):
                    pass
            yield from _text_sources(result)
        elif isinstance(result, Mapping):
            for key in _LIST_KEYS:
                if isinstance(result.get(key), list):
                    for entry in result[key]:
                        yield from self._one(entry)
                    return
            yield from self._one(result)
        elif isinstance(result, list | tuple):
            for entry in result:
                yield from self._one(entry)
        elif isinstance(result, Source):
            yield result.url, result.title, result.text, result.ref

    def _one(self, entry: Any) -> Iterator[tuple[str | None, str | None, str, str | None]]:
        if isinstance(entry, str):
            urls = urls_in(entry)
            if len(urls) == 1:
                yield urls[0], None, entry.strip(), None
            return
        if isinstance(entry, Source):
            yield entry.url, entry.title, entry.text, entry.ref
            return
        if not isinstance(entry, Mapping):
            return
        url = _str_or_none(_field(entry, "url", "link", "href"))
        ref = _str_or_none(_field(entry, "ref", "id"))
        if url is None and ref is None:
            return  # neither a link nor a reference: nothing anyone could cite
        text = next((v for k in _TEXT_KEYS if isinstance(v := entry.get(k), str)), "")
        yield url, _str_or_none(_field(entry, "title", "name")), text.strip(), ref

    def _add(
        self, tool: str, url: str | None, title: str | None, text: str, ref: str | None
    ) -> Source:
        key = normalize_url(url) if url else "ref:" + (ref or "").casefold()
        if key in self._index:
            i = self._index[key]
            old = self._sources[i]
            if text and text not in old.text:
                old = replace(old, text=(old.text + "\n" + text).strip())
            if title and not old.title:
                old = replace(old, title=title)
            self._sources[i] = old
            return old
        if ref is None or "ref:" + ref.casefold() in self._index:
            ref = f"S{len(self._sources) + 1}"
        source = Source(ref=ref, url=url, title=title, text=text, tool=tool)
        self._index[key] = len(self._sources)
        self._index.setdefault("ref:" + ref.casefold(), len(self._sources))
        self._sources.append(source)
        return source


def _text_sources(text: str) -> Iterator[tuple[str | None, str | None, str, str | None]]:
    """Links in plain text: each gets the smallest block (paragraph, then line) that holds
    it alone, never the whole output when the output holds several links."""
    distinct = {normalize_url(u): u for u in urls_in(text)}
    if len(distinct) <= 1:
        for url in distinct.values():
            yield url, None, "", None  # `keep` ties the whole text to a lone link
        return
    for para in re.split(r"\n\s*\n", text):
        urls = urls_in(para)
        if len(urls) == 1:
            yield urls[0], None, para.strip(), None
            continue
        for line in para.splitlines():
            for url in urls_in(line):
                yield url, None, line.strip() if len(urls_in(line)) == 1 else "", None


# ------------------------------------------------------------------ used sources


def _tokens(text: str) -> set[str]:
    return set(_WORD_OR_NUMBER.findall(fold(text or "")))


def _distinctive(tokens: set[str], min_letters: int) -> set[str]:
    return {
        t
        for t in tokens
        if (t[0].isdigit() and sum(c.isdigit() for c in t) >= 2)
        or (not t[0].isdigit() and len(t) >= min_letters)
    }


def _references(text: str) -> set[str]:
    return {re.sub(r"[\s-]+", " ", r).casefold() for r in _REFERENCE.findall(text or "")}


def used_sources(
    answer: str,
    sources: Iterable[Any],
    evidence: Mapping[str, str] | None = None,
    *,
    question: str = "",
    min_shared_words: int = 3,
    min_letters: int = 5,
    stop_words: Iterable[str] = (),
) -> list[Any]:
    """The sources `answer` relies on, as given and in their order; never one more.

    A source (a `Source` or a mapping with `url`, `ref`/`id`, `title`, `text`) counts when:
    the answer holds its link; or a reference is named on both sides (the answer cites
    `[ref]`, or a reference-like token such as "RFC 9110" or "3:16" is in both); or they
    share `min_shared_words` distinctive words — words of `min_letters` letters or more
    (or numbers of two digits or more) that are not in `question` (the answer echoing the
    question proves nothing), not in `stop_words`, and not in most of the other sources.
    `evidence`: more text read for a source, keyed by its ref or url."""
    sources = list(sources)
    answer = answer if isinstance(answer, str) else ""
    evidence = evidence or {}
    answer_urls = {normalize_url(u) for u in urls_in(answer)}
    cited = {c.strip().casefold() for c in _CITATION.findall(answer)}
    answer_refs = _references(answer)
    ignored = _tokens(question) | {fold(w) for w in stop_words}
    answer_words = _distinctive(_tokens(answer), min_letters) - ignored

    bodies: list[str] = []
    for s in sources:
        ref, url = _str_or_none(_field(s, "ref", "id")), _str_or_none(_field(s, "url", "link"))
        extra = [evidence.get(k, "") for k in (ref, url) if k]
        parts = [_field(s, "title"), _field(s, *_TEXT_KEYS), *extra]
        bodies.append("\n".join(p for p in parts if isinstance(p, str)))
    word_sets = [_distinctive(_tokens(b), min_letters) for b in bodies]
    common: set[str] = set()
    if len(sources) > 1:  # a word in most sources tells none of them apart
        counts: dict[str, int] = {}
        for ws in word_sets:
            for w in ws:
                counts[w] = counts.get(w, 0) + 1
        common = {w for w, n in counts.items() if n > len(sources) / 2}

    kept = []
    for s, body, words in zip(sources, bodies, word_sets, strict=True):
        ref, url = _str_or_none(_field(s, "ref", "id")), _str_or_none(_field(s, "url", "link"))
        if url and normalize_url(url) in answer_urls:
            kept.append(s)
        elif ref and ref.casefold() in cited:
            kept.append(s)
        elif answer_refs & _references(body):
            kept.append(s)
        elif len((answer_words & words) - common) >= min_shared_words:
            kept.append(s)
    return kept


# ------------------------------------------------------------------ contradictions


@dataclass(frozen=True, slots=True)
class Contradiction:
    sentence: str  # the answer's sentence
    excerpt: str  # the excerpt it contradicts
    score: float | None = None  # the model's confidence, when it gave one


Compare = Callable[[str, str], Any]  # (premise, hypothesis) -> label | (label, score) | awaitable


def factual_sentences(answer: str) -> list[str]:
    """Sentences that state something: not a question, at least three words."""
    out = []
    for s in _SENTENCE_END.split(answer or ""):
        s = s.strip().lstrip("-*• ").strip()
        if s and not s.endswith("?") and len(_WORD_OR_NUMBER.findall(s)) >= 3:
            out.append(s)
    return out


def _nearest(sentence: str, excerpts: Sequence[str]) -> str | None:
    words = {t for t in _tokens(sentence) if len(t) >= 3 or t[0].isdigit()}
    best, best_n = None, 0
    for e in excerpts:
        n = len(words & _tokens(e))
        if n > best_n:
            best, best_n = e, n
    return best


def _clear(verdict: Any, min_score: float) -> tuple[bool, float | None]:
    label, score = verdict, None
    if isinstance(verdict, Mapping):
        label, score = verdict.get("label"), verdict.get("score")
    elif isinstance(verdict, tuple | list) and len(verdict) == 2:
        label, score = verdict
    if not isinstance(label, str) or label.strip().casefold() not in _CLEAR:
        return False, None
    if score is None:
        return True, None
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return False, None  # a label with an unreadable confidence is doubt
    return score >= min_score, float(score)


async def _ask(compare: Compare, premise: str, hypothesis: str) -> Any:
    if inspect.iscoroutinefunction(compare):
        return await compare(premise, hypothesis)
    # A local model is blocking: a thread keeps the loop free and lets the deadline apply.
    verdict = await asyncio.to_thread(compare, premise, hypothesis)
    return await verdict if inspect.isawaitable(verdict) else verdict


async def find_contradiction(
    answer: str,
    excerpts: Iterable[Any],
    compare: Compare,
    *,
    timeout_s: float = 10.0,
    min_score: float = 0.8,
) -> Contradiction | None:
    """The first factual sentence of `answer` that its nearest excerpt clearly contradicts.

    `compare(premise, hypothesis)` (sync or async, a local NLI model) returns
    "entails" | "contradicts" | "neutral", or (label, score), or {"label", "score"}; a
    score must reach `min_score`. None when nothing is clearly contradicted, and also when
    `compare` raises or the whole check outlasts `timeout_s`: a failing checker says
    nothing, and is not asked again."""
    texts = []
    for e in excerpts:
        t = e if isinstance(e, str) else _field(e, *_TEXT_KEYS)
        if isinstance(t, str) and t.strip():
            texts.append(t.strip())
    sentences = factual_sentences(answer if isinstance(answer, str) else "")
    if not texts or not sentences:
        return None
    try:
        async with asyncio.timeout(timeout_s):
            for sentence in sentences:
                excerpt = _nearest(sentence, texts)
                if excerpt is None:
                    continue  # nothing read on this: nothing to contradict it
                clear, score = _clear(await _ask(compare, excerpt, sentence), min_score)
                if clear:
                    return Contradiction(sentence=sentence, excerpt=excerpt, score=score)
    except TimeoutError:
        return None
    except Exception:
        return None
    return None


# ------------------------------------------------------------------ reranking


def _key(obj: Any) -> str | None:
    url = _str_or_none(_field(obj, "url", "link"))
    if url:
        return normalize_url(url)
    ref = _str_or_none(_field(obj, "ref", "id"))
    return "ref:" + ref.casefold() if ref else None


def _score_of(score: Callable[[str, Any], Any], question: str, result: Any) -> float:
    value = score(question, result)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return -math.inf
    return float(value)


def rerank_results(
    question: str, found: Any, score: Callable[[str, Any], Any] | None = None
) -> Any:
    """Results ordered by `score(question, result)`, highest first (ties keep the engine's
    order); without `score`, or when it raises, the engine's order stays.

    `found` is a list of results, or a mapping with `results` and `sources`: the sources
    follow their results (matched by link or ref; parallel lists by position)."""
    results = list(found.get("results") or []) if isinstance(found, Mapping) else list(found)
    order = list(range(len(results)))
    try:
        scores = [_score_of(score, question, r) for r in results] if score is not None else None
    except Exception:  # a reranker that fails says nothing: the engine's order stays
        scores = None
    if scores is None:
        return dict(found) if isinstance(found, Mapping) else results
    order.sort(key=lambda i: -scores[i])
    ranked = [results[i] for i in order]
    if not isinstance(found, Mapping):
        return ranked
    out = dict(found)
    out["results"] = ranked
    sources = found.get("sources")
    if isinstance(sources, list | tuple):
        place: dict[str | None, int] = {}  # looked up with every key, None included
        for pos, r in enumerate(ranked):
            k = _key(r)
            if k is not None:
                place.setdefault(k, pos)
        keys = [_key(s) for s in sources]
        if any(k in place for k in keys):
            n = len(ranked)
            sorted_idx = sorted(range(len(sources)), key=lambda i: place.get(keys[i], n))
            out["sources"] = [sources[i] for i in sorted_idx]
        elif len(sources) == len(results):
            out["sources"] = [sources[i] for i in order]
        else:
            out["sources"] = list(sources)
    return out


__all__ = [
    "Contradiction",
    "Source",
    "SourceLedger",
    "factual_sentences",
    "find_contradiction",
    "normalize_url",
    "rerank_results",
    "urls_in",
    "used_sources",
]
