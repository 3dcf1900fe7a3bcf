"""A cassette that cannot be read refuses in one line naming the file (and the line); the
command line refuses combinations that say two things; a batch is refused, not skipped."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from workbench.cassettes import Cassette
from workbench.cassettes.format import header
from workbench.cassettes.matching import differences, recorded_path
from workbench.cassettes.transport import scrub
from workbench.cli.verbs import main
from workbench.errors import CassetteError, ConfigError
from workbench.eval.run.options import RunConfig
from workbench.providers import batch_client, openai_compatible_provider

ROOT = Path(__file__).resolve().parents[2]

EXCHANGE = {
    "provider": "p",
    "occurrence": 1,
    "request": {"method": "POST", "path": "/v1/chat/completions", "body": {"model": "m"}},
    "response": {"status": 200, "headers": {}, "body": {"ok": True}},
}


def _write(folder: Path, *lines: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "cassette.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_cassette_of_another_version_names_the_file_and_both_versions(tmp_path):
    path = _write(tmp_path, json.dumps({"cassette": "workbench", "version": 2}))
    with pytest.raises(CassetteError) as caught:
        Cassette(tmp_path)
    assert caught.value.code == "CASSETTE_VERSION"
    assert str(path) in str(caught.value) and "version 2" in str(caught.value)
    assert "version 1" in str(caught.value)


def test_a_line_edited_into_invalid_json_names_the_file_and_the_line(tmp_path):
    good = json.dumps(EXCHANGE)
    path = _write(tmp_path, header(), good, good.replace('"occurrence": 1', '"occurrence": 2'))
    assert len(Cassette(tmp_path).exchanges) == 2
    _write(tmp_path, header(), good, good[:-3])
    with pytest.raises(CassetteError) as caught:
        Cassette(tmp_path, "record_missing")
    assert caught.value.code == "CASSETTE_INVALID"
    assert f"{path}, line 3: not JSON" in str(caught.value)
    _write(tmp_path, header(), json.dumps({"provider": "p"}))
    with pytest.raises(CassetteError, match=r"line 2: not an exchange \(missing 'request'\)"):
        Cassette(tmp_path)


def test_replay_of_a_folder_that_does_not_exist_says_so(tmp_path):
    with pytest.raises(CassetteError) as caught:
        Cassette(tmp_path / "nope")
    assert caught.value.code == "CASSETTE_MISSING" and "nope does not exist" in str(caught.value)


def test_record_replaces_the_old_cassette_only_once_something_is_recorded(tmp_path):
    path = _write(tmp_path, header(), json.dumps(EXCHANGE))
    with Cassette(tmp_path, "record"):
        pass
    assert len(Cassette(tmp_path).exchanges) == 1  # a run that asked nothing kept it
    assert path.read_text(encoding="utf-8").startswith(header())
    with Cassette(tmp_path / "new", "record"):
        pass
    assert Cassette(tmp_path / "new").exchanges == []  # an empty recording replays nothing


def test_the_path_keeps_no_host_and_no_key_and_secrets_are_scrubbed_everywhere():
    url = httpx.URL("http://127.0.0.1:4321/v1beta/models/g:streamGenerateContent?alt=sse&key=AIzaX")
    assert recorded_path(url) == "/v1beta/models/g:streamGenerateContent?alt=sse"
    assert scrub({"a": ["x sk-1234 y"], "sk-1234": 1}, ["sk-1234"]) == {
        "a": ["x [redacted] y"],
        "[redacted]": 1,
    }


def test_differences_are_json_paths():
    recorded = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    asked = {"messages": [{"role": "user", "content": "hello"}, {"role": "user"}], "top_p": 1}
    assert differences(recorded, asked) == [
        "messages[0].content",
        "messages[1]",
        "temperature",
        "top_p",
    ]


def test_record_and_replay_together_are_refused_with_the_way_to_say_it(tmp_path, capsys):
    folder = str(tmp_path / "tape")
    smoke = "datasets/smoke.jsonl"
    assert main(["run", smoke, "--record", folder, "--replay", folder]) == 2
    err = capsys.readouterr().err
    assert "CASSETTE_CONFLICT" in err and f"--replay {folder} --record-missing" in err
    assert main(["run", smoke, "--record-missing"]) == 2
    assert "it needs --replay DIR" in capsys.readouterr().err
    assert (
        main(["run", smoke, "--replay", folder, "--engine", "ray"]) == 2
    )  # a usage error, as CASSETTE_CONFLICT
    assert "CASSETTE_UNSUPPORTED" in capsys.readouterr().err


def test_a_batch_through_a_cassette_is_refused_before_anything_is_sent(tmp_path):
    with pytest.raises(CassetteError) as caught:
        RunConfig(cassette=str(tmp_path), batch=True)
    assert caught.value.code == "CASSETTE_UNSUPPORTED"
    provider = openai_compatible_provider("openai", "https://api.openai.com/v1", "k", ["m"])
    _write(tmp_path, header())
    provider.use_cassette(Cassette(tmp_path))
    with pytest.raises(CassetteError, match="CASSETTE_UNSUPPORTED"):
        batch_client(provider, "m")
    with pytest.raises(ConfigError):
        RunConfig(cassette=str(tmp_path), cassette_mode="rewind")  # type: ignore[arg-type]


def test_a_killed_recording_keeps_what_it_recorded_readable(tmp_path):
    from workbench.cassettes.format import Exchange

    cassette = Cassette(tmp_path, "record")
    cassette.add(Exchange("p", 1, "POST", "/v1/x", {"b": 2}, status=200, response={"ok": 1}))
    cassette.add(Exchange("p", 1, "POST", "/v1/x", {"a": 1}, status=429, response="slow down"))
    # Never closed (the process was killed): appended as they happened, in arrival order.
    kept = Cassette(tmp_path).exchanges
    assert [(e.body, e.status) for e in kept] == [({"b": 2}, 200), ({"a": 1}, 429)]
    cassette.close()  # rewritten sorted: {"a": 1} before {"b": 2}
    assert [e.body for e in Cassette(tmp_path).exchanges] == [{"a": 1}, {"b": 2}]


def test_the_run_summary_says_what_the_cassette_did():
    from workbench.cli.wording import cassette_line

    assert cassette_line("t/cassette.jsonl", "replay", 9, 0) == (
        "  cassette t/cassette.jsonl: 9 answer(s) replayed, nothing sent"
    )
    assert cassette_line("t/cassette.jsonl", "replay", 29, 0, 3) == (
        "  cassette t/cassette.jsonl: 29 answer(s) replayed, 3 model(s) skipped as not "
        "recorded, nothing sent"
    )
    assert cassette_line("t/cassette.jsonl", "record", 0, 9).endswith("9 exchange(s) recorded")
    assert cassette_line("c", "record_missing", 8, 1).endswith(
        "8 answer(s) replayed, 1 exchange(s) recorded"
    )


async def test_a_replay_miss_skips_the_model_and_stops_only_when_no_model_could_answer(
    tmp_path,
):
    from workbench.providers import FunctionProvider
    from workbench.routing import Router
    from workbench.types import ChatRequest

    _write(tmp_path, header(), json.dumps(EXCHANGE))
    asked: list[str] = []
    backup = FunctionProvider(lambda request, ctx: asked.append("backup") or "hi", id="backup")
    first = openai_compatible_provider("p", "http://127.0.0.1:9/v1", "k", ["m"])
    second = openai_compatible_provider("q", "http://127.0.0.1:9/v1", "k", ["m"])
    with Cassette(tmp_path) as cassette:
        # Every model's request missing: the run stops, naming the first model's miss.
        router = Router([first, second])
        router.use_cassette(cassette)
        with pytest.raises(CassetteError) as caught:
            await router.route(ChatRequest.of("hello"))
        with pytest.raises(CassetteError):
            async for _ in router.stream(ChatRequest.of("hello")):
                pass
        # A model the cassette holds nothing from is skipped like one that is out.
        router = Router([first, backup])
        router.use_cassette(cassette)
        result = await router.route(ChatRequest.of("hello"))
        assert cassette.skipped == 5
    assert caught.value.code == "REPLAY_MISS"
    assert "answers p POST" in str(caught.value)
    assert "differs at body.messages" in str(caught.value)
    assert result.value.text == "hi" and asked == ["backup"]
    assert [(a.outcome, a.reason) for a in result.attempts] == [
        ("skipped_provider", "not in the cassette"),
        ("ok", ""),
    ]


async def test_a_callers_client_is_recorded_through_and_an_echoed_key_is_scrubbed(tmp_path):
    from workbench.types import CallContext, ChatRequest

    key = "sk-echoed-key-0123456789abcdef"

    def echo(request: httpx.Request) -> httpx.Response:
        said = request.headers["authorization"]  # a server that repeats the credential back
        answer = {"choices": [{"message": {"role": "assistant", "content": f"you sent {said}"}}]}
        return httpx.Response(200, json=answer, headers={"x-ratelimit-remaining-requests": "9"})

    given = httpx.AsyncClient(transport=httpx.MockTransport(echo))
    provider = openai_compatible_provider("p", "http://10.1.2.3:8000/v1", key, ["m"])
    with Cassette(tmp_path, "record") as cassette:
        provider.use_cassette(cassette)
        reply = await provider.call(ChatRequest.of("hi"), CallContext(client=given))
    assert key in reply.text  # the caller got the answer as it was
    text = (tmp_path / "cassette.jsonl").read_text(encoding="utf-8")
    assert key not in text and "you sent [redacted]" in text
    exchange = Cassette(tmp_path).exchanges[0]
    assert exchange.path == "/v1/chat/completions"
    assert exchange.headers == {
        "content-type": "application/json",
        "x-ratelimit-remaining-requests": "9",
    }
    await given.aclose()


def test_a_notebook_replays_without_the_keys_and_fills_gaps_with_all_of_them(tmp_path, monkeypatch):
    from workbench.cassettes import for_notebook, notebook_mode

    providers = ROOT / "notebooks" / "providers_real.toml"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-one-of-two")
    assert notebook_mode(providers) == "replay"  # one key of two: still CI's replay
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-other")
    assert notebook_mode(providers) == "record_missing"
    assert for_notebook(tmp_path / "new", providers).mode == "record_missing"
    with pytest.raises(ConfigError):
        notebook_mode(tmp_path / "none.toml")
    # A LiteLLM config.yaml, as --providers reads it.
    litellm = tmp_path / "config.yaml"
    litellm.write_text(
        "model_list:\n  - model_name: fast\n    litellm_params:\n"
        "      model: groq/llama-3.1-8b-instant\n      api_key: os.environ/WB_NB_GROQ\n",
        encoding="utf-8",
    )
    monkeypatch.delenv("WB_NB_GROQ", raising=False)
    assert notebook_mode(litellm) == "replay"
    monkeypatch.setenv("WB_NB_GROQ", "gsk-set")
    assert notebook_mode(litellm) == "record_missing"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"\xff\xfe\x00garbage\n", "line 1: not UTF-8 text"),
        (("\n" + header() + "\n").encode(), "line 1: not JSON"),
    ],
)
def test_a_file_that_is_not_a_cassette_is_refused_with_its_line(tmp_path, content, why):
    (tmp_path / "cassette.jsonl").write_bytes(content)
    with pytest.raises(CassetteError, match=why) as caught:
        Cassette(tmp_path)
    assert caught.value.code == "CASSETTE_INVALID"
    (tmp_path / "c2").mkdir()
    (tmp_path / "c2" / "cassette.jsonl").mkdir()
    with pytest.raises(CassetteError, match="a folder, not a cassette file"):
        Cassette(tmp_path / "c2")


def test_a_recording_that_cannot_be_written_is_refused_before_anything_is_sent(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError) as caught:
        Cassette(tmp_path / "f" / "sub", "record")
    assert caught.value.code == "OUT_NOT_WRITABLE"
    assert main(["run", "datasets/smoke.jsonl", "--replay", str(tmp_path / "none")]) == 2


def test_the_rewritten_cassette_is_readable_by_all_and_leaves_no_temporary(tmp_path):
    from workbench.cassettes.format import Exchange

    with Cassette(tmp_path, "record") as cassette:
        cassette.add(Exchange("p", 1, "POST", "/v1/x", {"a": 1}, status=200, response={}))
    assert (tmp_path / "cassette.jsonl").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.jsonl"]


async def test_record_with_the_cache_is_refused_and_a_resumed_recording_keeps_the_old(
    tmp_path,
):
    from workbench.eval.run.runner import _cassette

    with pytest.raises(ConfigError) as caught:
        _cassette(
            RunConfig(cassette=str(tmp_path), cassette_mode="record", cache_ttl_s=60), [], None
        )
    assert caught.value.code == "CASSETTE_CONFLICT"
    _write(tmp_path, header(), json.dumps(EXCHANGE))
    resumed = _cassette(
        RunConfig(cassette=str(tmp_path), cassette_mode="record", resume="run-1"), [], None
    )
    assert resumed is not None and resumed.mode == "record_missing"
    assert len(resumed.exchanges) == 1
    resumed.close()


def test_a_match_compares_tool_call_ids_normalised_and_the_file_keeps_them(tmp_path):
    from workbench.cassettes.format import Exchange
    from workbench.cassettes.matching import request_key

    def turn(call_id: str) -> dict[str, object]:
        call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return {
            "messages": [
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": "ok"},
            ]
        }

    def gemini(call_id: str) -> dict[str, object]:
        return {
            "contents": [
                {"parts": [{"functionCall": {"id": call_id, "name": "f", "args": {"id": 1}}}]}
            ]
        }

    key = request_key("p", "POST", "/x", turn("gemini_1a2b_0"))
    assert key == request_key("p", "POST", "/x", turn("gemini_ffee_0"))
    assert request_key("p", "POST", "/x", gemini("a")) == request_key(
        "p", "POST", "/x", gemini("b")
    )
    crossed = turn("a")
    crossed["messages"][1]["tool_call_id"] = "b"  # type: ignore[index]
    assert request_key("p", "POST", "/x", crossed) != key  # which call answers which stays
    with Cassette(tmp_path, "record") as cassette:
        cassette.add(Exchange("p", 1, "POST", "/x", turn("gemini_1a2b_0"), status=200, response={}))
    with Cassette(tmp_path) as cassette:
        recorded, _ = cassette.take("p", "POST", "/x", turn("gemini_9999_0"))
    assert recorded is not None and "gemini_1a2b_0" in json.dumps(recorded.body)


def test_a_retry_after_date_is_recorded_as_the_seconds_it_meant():
    from workbench.cassettes.transport import retry_after_seconds

    date = "Wed, 02 Dec 2026 22:30:00 GMT"
    assert retry_after_seconds("Wed, 02 Dec 2026 22:30:07 GMT", date) == "7"
    assert retry_after_seconds("12", date) == "12"
    assert retry_after_seconds("Wed, 02 Dec 2026 22:29:00 GMT", date) == "0"
    # No Date header: from the record time.
    now = 1_796_250_600.0  # 2026-12-02 22:30:00 UTC
    assert retry_after_seconds("Wed, 02 Dec 2026 22:30:30 GMT", None, now=now) == "30"


async def test_a_recording_sends_the_callers_client_defaults(tmp_path):
    from workbench.types import CallContext, ChatRequest

    seen: list[httpx.Headers] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        answer = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
        return httpx.Response(200, json=answer)

    given = httpx.AsyncClient(
        transport=httpx.MockTransport(answer),
        headers={"X-Org": "org-123", "User-Agent": "myapp/1"},
    )
    provider = openai_compatible_provider("p", "http://10.1.2.3:8000/v1", "sk-k-0123456789", ["m"])
    with Cassette(tmp_path, "record") as cassette:
        provider.use_cassette(cassette)
        await provider.call(ChatRequest.of("hi"), CallContext(client=given))
    assert [(h.get("x-org"), h.get("user-agent")) for h in seen] == [("org-123", "myapp/1")]
    assert seen[0]["authorization"] == "Bearer sk-k-0123456789"  # the provider's, once
    await given.aclose()
