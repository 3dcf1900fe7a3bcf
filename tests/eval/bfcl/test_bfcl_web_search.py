"""BFCL's two web-search functions, offline against the simulator's fixed web over real HTTP:
the model reads exactly what BFCL's own `WebSearchAPI` (run by BFCL's own executor, fed the
same search payloads and pages) would give it; no key and not offline is one clear line."""

from __future__ import annotations

import itertools
import json
import sys
import types
from typing import Any

import httpx
import pytest

from workbench.errors import ConfigError
from workbench.eval.suites.bfcl.agentic import AGENTIC_SYSTEM_PROMPT, play_and_grade_agentic
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.loader import bfcl_dataset
from workbench.eval.suites.bfcl.web_search import (
    NO_RESULTS,
    SerpApiEngine,
    WebSearchAPI,
    WebSearchBackend,
    html_markdown,
    html_text,
)
from workbench.sim import fixed_web as sim_web
from workbench.types import ChatRequest, Reply, ToolCall

_RUNS = itertools.count()


def _entry(snippet: bool) -> BfclEntry:
    category = "web_search_base" if snippet else "web_search_no_snippet"
    return BfclEntry(
        id=f"{category}_1",
        category=category,
        turns=(),
        functions=(),
        involved_classes=("WebSearchAPI",),
        initial_config={"WebSearchAPI": {"show_snippet": snippet}},
        answers=("7",),
    )


# ------------------------------------------------------------------ the simulator's web
def test_the_simulator_searches_and_serves_its_fixed_web_over_http(sim):
    with httpx.Client(base_url=sim.base_url) as http:
        found = http.get("/sim/search", params={"q": "2024 Super Bowl halftime show performer"})
        assert found.status_code == 200
        results = found.json()["organic_results"]
        assert results[0]["link"].startswith("https://www.forbes.com/")
        assert [r["position"] for r in results] == list(range(1, len(results) + 1))
        assert set(results[0]) == {"position", "title", "link", "snippet"}
        nothing = http.get("/sim/search", params={"q": "zebra migration patterns kenya"}).json()
        assert "organic_results" not in nothing and nothing["error"] == sim_web.NO_RESULTS
        page = http.get("/sim/page", params={"url": results[0]["link"] + "#:~:text=Usher"})
        assert page.status_code == 200 and "Usher performed" in page.text
        assert http.get("/sim/page", params={"url": "https://example.com/"}).status_code == 404


def test_four_entries_chain_through_the_corpus_to_their_answers():
    """Every hop of entries 1-4 is found by a plain query, and its page holds the fact."""
    hops = {
        "Usher birthplace": "Dallas, Texas",
        "Dallas Cowboys games won 2024": "won 7 games",
        "Han Kang alma mater university": "Yonsei University",
        "Yonsei University president": "Dong-Sup Yoon",
        "Best Picture 2024 Academy Awards": "Oppenheimer",
        "Christopher Nolan university": "University College London",
        "Slade School of Fine Art founded": "1871",
        "2024 Goodreads Choice Award fiction winner": "Alison Espach",
        "Alison Espach birthplace": "Trumbull, Connecticut",
        "largest lake in Connecticut": "Candlewood Lake",
    }
    for query, fact in hops.items():
        first = sim_web.search(query)["organic_results"][0]
        page = sim_web.page(first["link"])
        assert page is not None and fact in " ".join(page.paragraphs), query


# ------------------------------------------------------------------ BFCL's own backend
@pytest.fixture
def bfcl_execute(bfcl_package: None, sim: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`run(call_text, snippet) -> result text` by BFCL's own executor and WebSearchAPI, its
    SerpAPI client and `requests.get` answered by the simulator's same payloads and pages."""
    import requests

    monkeypatch.setitem(sys.modules, "serpapi", types.ModuleType("serpapi"))
    if "html2text" not in sys.modules:
        monkeypatch.setitem(sys.modules, "html2text", types.ModuleType("html2text"))

    class GoogleSearch:
        def __init__(self, params: dict[str, Any]) -> None:
            self.params = params

        def get_dict(self) -> dict[str, Any]:
            query = {"q": str(self.params["q"]), "kl": str(self.params["kl"])}
            return httpx.get(f"{sim.base_url}/sim/search", params=query).json()

    def get(url: str, **kwargs: Any) -> requests.Response:
        served = httpx.get(f"{sim.base_url}/sim/page", params={"url": url})
        response = requests.Response()
        response.status_code, response.reason = served.status_code, served.reason_phrase
        response._content, response.url = served.content, url
        response.encoding = "utf-8"
        return response

    sys.modules["serpapi"].GoogleSearch = GoogleSearch  # type: ignore[attr-defined]
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils  # type: ignore
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import (  # type: ignore
        web_search,
    )

    monkeypatch.setattr(web_search, "GoogleSearch", GoogleSearch)
    monkeypatch.setattr(web_search, "requests", types.SimpleNamespace(get=get))

    def run(call: str, snippet: bool) -> str:
        (result,), _ = multi_turn_utils.execute_multi_turn_func_call(
            [call],
            {"WebSearchAPI": {"show_snippet": snippet}},
            ["WebSearchAPI"],
            "oracle",
            f"web_search_{next(_RUNS)}",  # a fresh instance each call (BFCL keeps them)
        )
        return result

    return run


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_engine_query", {"keywords": "Usher birthplace"}),
    ("search_engine_query", {"keywords": "2024 Super Bowl halftime show performer"}),
    ("search_engine_query", {"keywords": "Dallas Cowboys", "max_results": 1}),
    ("search_engine_query", {"keywords": "Yonsei University", "max_results": 0}),
    ("search_engine_query", {"keywords": "Candlewood", "region": "us-en"}),
    ("search_engine_query", {"keywords": "zebra migration patterns kenya"}),
    ("search_engine_query", {"keywords": "x", "max_results": "3"}),
    ("search_engine_query", {"keywords": "Usher", "colour": "blue"}),
    ("search_engine_query", {}),
    ("fetch_url_content", {"url": "https://en.wikipedia.org/wiki/Han_Kang"}),
    ("fetch_url_content", {"url": "https://en.wikipedia.org/wiki/Han_Kang", "mode": "truncate"}),
    ("fetch_url_content", {"url": "https://en.wikipedia.org/wiki/Yonsei_University#x"}),
    ("fetch_url_content", {"url": "https://example.com/nowhere"}),
    ("fetch_url_content", {"url": "https://example.com/nowhere", "mode": "truncate"}),
    ("fetch_url_content", {"url": "https://en.wikipedia.org/wiki/Han_Kang", "mode": "pdf"}),
    ("fetch_url_content", {"url": "ftp://example.com/file"}),
    ("fetch_url_content", {"url": "en.wikipedia.org/wiki/Han_Kang"}),
    ("fetch_url_content", {"url": 42}),
    ("fetch_url_content", {"link": "https://en.wikipedia.org/wiki/Han_Kang"}),
    ("search_web", {"query": "hi"}),  # (a builtin BFCL would run: ours runs nothing)
]


def _text(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


@pytest.mark.parametrize("snippet", [True, False])
async def test_every_call_reads_back_what_bfcls_backend_returns(sim, bfcl_execute, snippet):
    async with WebSearchBackend.open(_entry(snippet), offline=sim.base_url) as backend:
        for name, arguments in CALLS:
            call = ToolCall("c1", name, arguments, json.dumps(arguments))
            ours = await backend.execute(call)
            assert ours == bfcl_execute(_text(name, arguments), snippet), (name, arguments)
            assert await backend.execute({"name": name, "arguments": arguments}) == ours


async def test_search_shows_snippets_only_where_the_entry_does(sim):
    async with WebSearchBackend.open(_entry(True), offline=sim.base_url) as with_snippets:
        shown = await with_snippets.api.search_engine_query("Usher birthplace")
    async with WebSearchBackend.open(_entry(False), offline=sim.base_url) as without:
        hidden = await without.api.search_engine_query("Usher birthplace")
    assert isinstance(shown, list) and isinstance(hidden, list)
    assert [set(r) for r in shown] == [{"title", "href", "body"}] * len(shown)
    assert hidden == [{"title": r["title"], "href": r["href"]} for r in shown]


async def test_nothing_found_is_bfcls_error_and_not_an_exception(sim):
    async with WebSearchBackend.open(_entry(True), offline=sim.base_url) as backend:
        out = await backend.execute({"name": "search_engine_query", "arguments": {"keywords": "q"}})
    assert json.loads(out) == {"error": NO_RESULTS}


@pytest.mark.parametrize("name", ["__import__", "eval", "_load_scenario", "execute", "os.system"])
async def test_a_name_that_is_not_one_of_the_two_functions_runs_nothing(sim, name):
    async with WebSearchBackend.open(_entry(True), offline=sim.base_url) as backend:
        out = await backend.execute({"name": name, "arguments": {}})
    assert out == f"Error during execution: name '{name.split('.')[0]}' is not defined"


# ------------------------------------------------------------------ page text
PAGES = [
    "<html><head><title>T &amp; U</title><style>p{}</style></head><body><p>a<!-- c -->b</p>"
    "<script>var x = '<p>no</p>';</script><div> &nbsp;x&nbsp; </div><ul><li>1</li><li> 2 </li>"
    "</ul><p>caf&eacute; &#8212; <b>bold</b>tail</p><br>last</body></html>",
    "<p>unclosed <i>italic <p>next",
    "plain text, no tags",
    "",
]


def test_truncate_mode_is_beautifulsoups_text():
    bs4 = pytest.importorskip("bs4")
    for html in PAGES + [p.html() for p in sim_web.corpus()]:
        soup = bs4.BeautifulSoup(html, "html.parser")
        for tag in soup(["script", "style"]):
            tag.extract()
        assert html_text(html) == soup.get_text(separator="\n", strip=True), html


def test_markdown_mode_keeps_headings_paragraphs_and_links():
    page = sim_web.corpus()[0].html()
    markdown = html_markdown(page)
    assert markdown.startswith("[Home](/)") or markdown.startswith("# ")
    assert "# Photos: Every Super Bowl Halftime Show" in markdown
    assert "Usher performed at Allegiant Stadium" in markdown
    assert "analytics" not in markdown and "font-family" not in markdown


# ------------------------------------------------------------------ with a key
def test_no_key_and_not_offline_is_one_clear_line():
    with pytest.raises(ConfigError) as caught:
        WebSearchBackend.open(_entry(True), env={})
    assert caught.value.code == "BFCL_WEB_SEARCH_KEY"
    assert "SERPAPI_API_KEY" in str(caught.value) and "offline" in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_serpapi_is_asked_as_bfcl_asks_and_its_key_never_reaches_the_model():
    key = "serp-secret-key-123456"
    seen: list[httpx.Request] = []
    waits: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:  # SerpAPI's rate limit, said in the payload: waited out
            return httpx.Response(429, json={"error": "429: hourly limit"})
        if request.url.params["q"] == "down":
            raise httpx.ConnectError(f"cannot reach {request.url}")
        return httpx.Response(200, json=sim_web.search(request.url.params["q"]))

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        api = WebSearchAPI(SerpApiEngine(key, client), sleep=sleep)
        found = await api.search_engine_query("Usher birthplace", 2, "us-en")
        failed = await api.search_engine_query("down")
    assert isinstance(found, list) and len(found) == 2 and len(waits) == 1 and waits[0] >= 2
    params = seen[-2].url.params
    assert str(seen[-2].url).startswith("https://serpapi.com/search.json")
    assert (params["engine"], params["q"], params["kl"]) == (
        "duckduckgo",
        "Usher birthplace",
        "us-en",
    )
    assert params["api_key"] == key
    assert isinstance(failed, dict) and key not in failed["error"] and "***" in failed["error"]


async def test_with_a_key_a_page_on_a_private_address_is_refused_in_bfcls_error_shape():
    async with WebSearchBackend.open(_entry(True), env={"SERPAPI_API_KEY": "k" * 20}) as backend:
        out = await backend.api.fetch_url_content("http://127.0.0.1:9/secret")
    assert set(out) == {"error"}
    assert out["error"].startswith("An error occurred while fetching http://127.0.0.1:9/secret: ")


# ------------------------------------------------------------------ played and graded
def _asker(*replies: Reply) -> tuple[Any, list[ChatRequest]]:
    asked: list[ChatRequest] = []
    script = iter(replies)

    async def ask(request: ChatRequest) -> Reply:
        asked.append(request)
        return next(script)

    return ask, asked


def _calls(name: str, **arguments: Any) -> Reply:
    call = ToolCall(f"c{name}", name, arguments, json.dumps(arguments))
    return Reply(text="", tool_calls=[call], protocol="native")


async def test_an_entry_played_through_the_tool_loop_is_graded_on_its_answer(sim, bfcl_wheel):
    entry = bfcl_dataset("web_search_no_snippet", source=bfcl_wheel, limit=2).items[1].expect.bfcl
    statmuse = "https://www.statmuse.com/nfl/ask/how-many-games-did-the-cowboys-won-in-2024"
    ask, asked = _asker(
        _calls("search_engine_query", keywords="Dallas Cowboys games won 2024", max_results=2),
        _calls("fetch_url_content", url=statmuse, mode="truncate"),
        Reply(text="{'answer': '7', 'context': 'StatMuse: 7-10 in 2024'}"),
    )
    verdict = await play_and_grade_agentic(entry, mode="native", ask=ask, offline=sim.base_url)
    assert verdict.valid and verdict.error_type is None
    assert [len(step) for step in verdict.played.turns[0]] == [1, 1, 0]
    (found,), (page,), () = verdict.played.results[0]
    assert found.startswith("[{'title': ") and "'body'" not in found  # no snippets here
    assert json.loads(page)["content"].startswith("How many games did the Cowboys win")
    assert asked[0].system == AGENTIC_SYSTEM_PROMPT  # BFCL's answer format, asked first
    assert asked[0].messages[0]["role"] == "user"


async def test_a_wrong_answer_and_a_turn_of_only_calls_fail_as_bfcl_fails_them(sim, bfcl_wheel):
    entry = bfcl_dataset("web_search_base", source=bfcl_wheel, limit=2).items[1].expect.bfcl
    ask, _ = _asker(Reply(text="{'answer': '17', 'context': 'a guess'}"))
    wrong = await play_and_grade_agentic(entry, mode="native", ask=ask, offline=sim.base_url)
    assert (wrong.valid, wrong.error_type) == (False, "agentic:answer_not_found")
    assert wrong.details == {
        "answer": "{'answer': '17', 'context': 'a guess'}",
        "accepted": ["7", "seven"],
    }
    looping = [_calls("search_engine_query", keywords="Usher") for _ in range(30)]
    ask, asked = _asker(*looping)
    quit_ = await play_and_grade_agentic(entry, mode="native", ask=ask, offline=sim.base_url)
    assert quit_.played.force_quit and len(asked) == 21
    assert (quit_.valid, quit_.error_type) == (False, "agentic:no_last_message")


async def test_prompting_mode_reads_calls_as_bfcl_decodes_them(sim, bfcl_wheel):
    entry = bfcl_dataset("web_search_base", source=bfcl_wheel, limit=5).items[4].expect.bfcl
    ask, _ = _asker(
        Reply(text="[search_engine_query(keywords='largest lake in Connecticut')]"),
        Reply(text="{'answer': 'Candlewood Lake', 'context': 'Wikipedia'}"),
    )
    verdict = await play_and_grade_agentic(entry, mode="text", ask=ask, offline=sim.base_url)
    assert verdict.valid
    assert verdict.played.turns[0][0] == [
        {"name": "search_engine_query", "arguments": {"keywords": "largest lake in Connecticut"}}
    ]


async def test_playing_without_a_key_or_the_simulator_refuses_before_asking(bfcl_wheel):
    entry = bfcl_dataset("web_search_base", source=bfcl_wheel, limit=1).items[0].expect.bfcl
    ask, asked = _asker()
    with pytest.raises(ConfigError) as caught:
        await play_and_grade_agentic(entry, mode="native", ask=ask, env={})
    assert caught.value.code == "BFCL_WEB_SEARCH_KEY" and asked == []


async def test_a_search_engine_error_is_logged_without_the_key(caplog):
    key = "serp-secret-key-654321"

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": f"Invalid API key {key}. See serpapi.com."})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        with caplog.at_level("WARNING"):
            got = await WebSearchAPI(SerpApiEngine(key, client)).search_engine_query("q")
    assert got == {"error": NO_RESULTS}  # what BFCL's model reads for any failed search
    assert "Invalid API key" in caplog.text and key not in caplog.text
