"""`workbench catalog`: pinned ids against the vendors' model lists.

The verdicts (ok, GONE, UNCHECKED, a dead provider, exit codes, --json) are proved against
the real simulator over loopback; the reading rules of a list entry, and the bodies no honest
server sends on demand (a bare array, garbage, a vendor's refusal wording, a timeout), with
respx at the client.
"""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pandas as pd
import pytest

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.providers import (
    CatalogCheck,
    ModelRecord,
    catalog_facts,
    catalog_report,
    check_catalog,
    dead_providers,
    gemini_provider,
    has_rot,
    openai_compatible_provider,
)
from workbench.providers.catalog import model_record
from workbench.sim import SimServer
from workbench.sim.fleet import DEFAULT_FLEET_PATH

KEY = "sk-catalog-canary-0123456789abcdef"
KEY_ENV = "WB_CATALOG_TEST_KEY"
UNSET_ENV = "WB_CATALOG_TEST_UNSET_KEY"
URL = "https://api.example.test/v1"

# The default chain's personas, three of them retired from the lists: Google's two (a dead
# provider) and one of Groq's (a provider that half works).
RETIRING_FLEET = """
seed = 7

[[persona]]
id = "sim-flaky"

[[persona]]
id = "groq-gpt-oss"

[[persona]]
id = "qwen-prose"
tool_style = "text"
listed = false

[[persona]]
id = "gemini-flash"
rate_limit_style = "gemini"
listed = false

[[persona]]
id = "gemma-sys"
rate_limit_style = "gemini"
listed = false

[[persona]]
id = "openrouter-free"

[[persona]]
id = "hermes-prose"
tool_style = "hermes"
"""


@pytest.fixture(scope="module")
def keyed_sim():
    """The default fleet, refusing every keyless request (its model lists included): a list
    read from it proves the key was sent."""
    fleet = "require_key = true\n" + DEFAULT_FLEET_PATH.read_text(encoding="utf-8")
    with SimServer(fleet) as server:
        yield server


def _providers_file(tmp_path: Path, sim: SimServer, *extra: str) -> Path:
    path = tmp_path / "providers.toml"
    path.write_text(
        f"""
[[providers]]
id = "keyed"
base_url = "{sim.openai_url}"
key_env = "{KEY_ENV}"
models = ["sim-native", "retired-model"]

[[providers]]
id = "google"
adapter = "gemini"
base_url = "{sim.gemini_url}"
key_env = "{KEY_ENV}"
models = ["gemini-flash", "models/gemma-sys"]
"""
        + "".join(extra),
        encoding="utf-8",
    )
    return path


def _keyless(sim: SimServer) -> str:
    return f"""
[[providers]]
id = "keyless"
base_url = "{sim.openai_url}"
key_env = "{UNSET_ENV}"
models = ["sim-native", "sim-plain"]
"""


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.delenv(UNSET_ENV, raising=False)


# ---------------------------------------------------------------------------- the command


def test_the_built_in_chain_is_all_there(capsys):
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "  ok   flaky/sim-flaky",
        "  ok   groq/groq-gpt-oss",
        "  ok   groq/qwen-prose",
        "  ok   google/gemini-flash",
        "  ok   google/gemma-sys",
        "  ok   openrouter/openrouter-free",
        "  ok   openrouter/hermes-prose",
    ]


def test_a_retired_id_is_gone_and_a_provider_with_none_left_is_dead(tmp_path, capsys):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(RETIRING_FLEET, encoding="utf-8")
    assert main(["catalog", "--fleet", str(fleet)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "  ok   groq/groq-gpt-oss" in out
    assert "  GONE groq/qwen-prose" in out
    assert "  GONE google/gemini-flash" in out and "  GONE google/gemma-sys" in out
    assert "  ok   openrouter/hermes-prose" in out
    assert out[-1] == "EVERY model is gone at: google"


def test_keys_are_sent_and_never_shown(keyed_sim, tmp_path, env, capsys):
    path = _providers_file(tmp_path, keyed_sim)
    assert main(["catalog", "--providers", str(path)]) == 1  # retired-model is gone
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "  ok   keyed/sim-native",
        "  GONE keyed/retired-model",
        "  ok   google/gemini-flash",
        "  ok   google/models/gemma-sys",
    ]
    assert KEY not in captured.out + captured.err


def test_a_provider_without_its_key_is_unchecked_never_gone(keyed_sim, tmp_path, env, capsys):
    path = tmp_path / "providers.toml"
    path.write_text(_keyless(keyed_sim), encoding="utf-8")
    assert main(["catalog", "--providers", str(path)]) == 0  # unchecked is not gone...
    assert capsys.readouterr().out.splitlines() == [
        "? keyless: catalogue unreadable (no key, or the request failed: no key) — 2 id(s) "
        "UNCHECKED",
        "    ? sim-native",
        "    ? sim-plain",
        "2 id(s) could not be checked. That is not a pass for them.",  # ...nor a pass
    ]


def test_a_list_that_cannot_be_read_leaves_its_ids_unchecked(keyed_sim, tmp_path, env, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    path = _providers_file(
        tmp_path,
        keyed_sim,
        f"""
[[providers]]
id = "wrong-path"
base_url = "{keyed_sim.base_url}/no/such"
key_env = "{KEY_ENV}"
models = ["sim-native"]

[[providers]]
id = "wrong-shape"
base_url = "{keyed_sim.base_url}/v1beta"
key_env = "{KEY_ENV}"
models = ["sim-native"]

[[providers]]
id = "down"
base_url = "http://127.0.0.1:{closed}/v1"
key_env = "{KEY_ENV}"
models = ["sim-native"]
""",
    )
    main(["catalog", "--providers", str(path)])
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert (
        "? wrong-path: catalogue unreadable (no key, or the request failed: HTTP 404) — "
        "1 id(s) UNCHECKED" in out
    )
    assert (  # an OpenAI adapter pointed at Google's native list: no `data` in it
        "? wrong-shape: catalogue unreadable (no key, or the request failed: the body names "
        "no model) — 1 id(s) UNCHECKED" in out
    )
    (down,) = [line for line in out if line.startswith("? down:")]
    assert "could not connect" in down and down.endswith("— 1 id(s) UNCHECKED")
    assert not [line for line in out if "GONE" in line and "keyed/" not in line]
    assert out[-1] == "3 id(s) could not be checked. That is not a pass for them."
    assert KEY not in captured.out + captured.err


def test_json_is_the_whole_check(keyed_sim, tmp_path, env, capsys):
    path = _providers_file(tmp_path, keyed_sim, _keyless(keyed_sim))
    assert main(["catalog", "--providers", str(path), "--json"]) == 1
    text = capsys.readouterr().out
    assert KEY not in text
    result = json.loads(text)
    assert result["has_rot"] is True and result["dead_providers"] == []
    assert result["unchecked"] == 2
    keyed, google, keyless = result["providers"]
    assert (keyed["present"], keyed["missing"]) == (["sim-native"], ["retired-model"])
    assert google["present"] == ["gemini-flash", "models/gemma-sys"]
    assert keyless["live"] is None and keyless["unchecked"] == ["sim-native", "sim-plain"]
    assert keyless["missing"] == [] and keyless["reason"] == "no key"
    (native,) = [r for r in keyed["live"] if r["id"] == "sim-native"]
    assert native == {
        "id": "sim-native",
        "output_modalities": ["text"],
        "free": True,
        "tools": True,
        "context_length": 8192,
        "expires_on": None,
        "created": "2026-01-01T00:00:00.000Z",
    }


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["catalog", "--providers", "/no/such/providers.toml"], "PROVIDERS_INVALID"),
        (["catalog", "--fleet", "/no/such/fleet.toml"], "FLEET_INVALID"),
        (["catalog", "--timeout", "0"], "MODEL_CATALOG_INVALID"),
    ],
)
def test_bad_input_exits_2_with_its_code(argv, code, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {code}") and "Traceback" not in err


# ---------------------------------------------------------------------------- in code


async def test_facts_are_one_row_per_listed_model(sim):
    checks = await check_catalog(
        [
            openai_compatible_provider("sim", sim.openai_url, "k", ["sim-native"]),
            gemini_provider("k", id="google", url=sim.gemini_url, models=["gemma-sys"]),
        ]
    )
    facts = catalog_facts(checks)
    listed = len(sim.fleet.personas)
    assert len(facts) == 2 * listed
    assert facts.groupby("provider")["pinned"].sum().to_dict() == {"google": 1, "sim": 1}
    sim_rows = facts[facts["provider"] == "sim"].set_index("id")
    assert sim_rows.loc["sim-rejects-tools", "tools"] == False  # noqa: E712 — a pandas NA-able bool
    assert sim_rows.loc["sim-native", "created"] == pd.Timestamp("2026-01-01", tz="UTC")
    assert str(facts["created"].dtype).endswith("UTC]")
    google = facts[facts["provider"] == "google"]
    assert google["id"].str.startswith("models/").all()
    assert google["free"].isna().all()  # Google's native list publishes no price


def test_facts_of_nothing_read_is_an_empty_table_with_the_columns():
    facts = catalog_facts([CatalogCheck("p", None, (), (), ("m",), reason="no key")])
    assert facts.empty
    assert list(facts.columns) == [
        "provider",
        "id",
        "pinned",
        "output_modalities",
        "free",
        "tools",
        "context_length",
        "expires_on",
        "created",
    ]


async def test_a_provider_that_is_not_http_is_refused():
    with pytest.raises(ConfigError) as info:
        await check_catalog([object()])  # type: ignore[list-item]
    assert info.value.code == "MODEL_CATALOG_INVALID"


# ---------------------------------------------------------------------------- the verdicts


def _check(provider: str, live: bool, present=(), missing=(), unchecked=()) -> CatalogCheck:
    records = tuple(ModelRecord(m) for m in present) if live else None
    return CatalogCheck(provider, records, tuple(present), tuple(missing), tuple(unchecked))


def test_rot_is_a_missing_id_only():
    assert has_rot([_check("a", True, ["x"], ["y"])])
    assert not has_rot([_check("a", True, ["x"]), _check("b", False, unchecked=["y"])])


def test_a_dead_provider_was_read_and_has_nothing_left():
    checks = [
        _check("half", True, ["x"], ["y"]),
        _check("dead", True, [], ["y", "z"]),
        _check("unread", False, unchecked=["y"]),
    ]
    assert dead_providers(checks) == ["dead"]
    assert catalog_report(checks) == [
        "  ok   half/x",
        "  GONE half/y",
        "  GONE dead/y",
        "  GONE dead/z",
        "? unread: catalogue unreadable (no key, or the request failed: unknown) — 1 id(s) "
        "UNCHECKED",
        "    ? y",
        "EVERY model is gone at: dead",
        "1 id(s) could not be checked. That is not a pass for them.",
    ]


# ---------------------------------------------------------------------------- list entries


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"architecture": {"output_modalities": ["image"]}, "output_modalities": ["text"]},
            ("image",),
        ),
        ({"output_modalities": ["text", "audio"]}, ("text", "audio")),
        (
            {"architecture": {"input_modalities": ["text"]}, "output_modalities": ["text"]},
            ("text",),
        ),
        ({}, None),
    ],
)
def test_output_modalities_prefer_the_architecture(entry, expected):
    assert model_record({"id": "m", **entry}).output_modalities == expected


@pytest.mark.parametrize(
    ("pricing", "free"),
    [
        (None, None),
        ({}, None),
        ({"note": "ask sales"}, None),
        ({"prompt": "0", "completion": "0", "request": "0"}, True),
        ({"prompt": 0, "completion": 0.0}, True),
        ({"prompt": "0", "completion": "0.000002"}, False),
        ({"prompt": "-1", "completion": "-1"}, False),
        ({"prompt": "0", "note": "free for now"}, True),
    ],
)
def test_free_means_every_published_price_is_zero(pricing, free):
    entry = {"id": "m"} if pricing is None else {"id": "m", "pricing": pricing}
    assert model_record(entry).free is free


@pytest.mark.parametrize(
    ("entry", "tools"),
    [
        ({"supported_parameters": ["tools", "max_tokens"]}, True),
        ({"supported_parameters": ["max_tokens"], "supported_features": ["tools"]}, False),
        ({"supported_features": ["tool_use"]}, True),
        ({"supported_features": ["tools"]}, True),
        ({"supported_features": ["json_mode"]}, False),
        ({}, None),
    ],
)
def test_tools_come_from_the_parameters_else_the_features(entry, tools):
    assert model_record({"id": "m", **entry}).tools is tools


@pytest.mark.parametrize(
    ("entry", "created"),
    [
        ({"created": 1_767_225_600}, datetime(2026, 1, 1, tzinfo=UTC)),
        ({"created": 1_767_225_600_000}, datetime(2026, 1, 1, tzinfo=UTC)),
        ({"created_at": "2026-01-01T02:00:00+02:00"}, datetime(2026, 1, 1, tzinfo=UTC)),
        ({"created_at": "2026-01-01T00:00:00Z"}, datetime(2026, 1, 1, tzinfo=UTC)),
        (
            {"created": 1_767_225_600, "created_at": "1999-01-01T00:00:00Z"},
            datetime(2026, 1, 1, tzinfo=UTC),
        ),
        ({"created_at": "yesterday"}, None),
        ({"created": True}, None),
        ({}, None),
    ],
)
def test_created_is_seconds_or_milliseconds_else_an_iso_date(entry, created):
    assert model_record({"id": "m", **entry}).created == created


def test_context_length_and_expiry_are_taken_as_given():
    got = model_record({"id": "m", "context_length": 131072, "expiration_date": "2026-06-30"})
    assert (got.context_length, got.expires_on) == (131072, "2026-06-30")
    assert model_record({"id": "m", "context_length": "131072"}).context_length is None


def test_an_entry_without_an_id_is_no_record():
    assert model_record({"object": "model"}) is None
    assert model_record({"id": ""}) is None


# ---------------------------------------------------------------------------- odd bodies


def _one(**kw: object):
    return openai_compatible_provider("p", URL, KEY, ["a", "b"], **kw)


@pytest.mark.respx(using="httpx")
async def test_a_bare_array_is_a_list(respx_mock):
    route = respx_mock.get(f"{URL}/models").respond(200, json=[{"id": "a"}, {"id": "c"}])
    (check,) = await check_catalog([_one(headers={"x-title": "wb"})])
    assert (check.present, check.missing, check.unchecked) == (("a",), ("b",), ())
    sent = route.calls.last.request.headers
    assert sent["authorization"] == f"Bearer {KEY}" and sent["x-title"] == "wb"


@pytest.mark.respx(using="httpx")
@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (200, b"<html>gateway</html>", "the body is not JSON"),
        (200, b'{"data": []}', "the body names no model"),
        (200, b'{"data": [{"object": "model"}]}', "the body names no model"),
        (200, b'{"object": "list"}', "the body names no model"),
        (502, b"Bad Gateway", "HTTP 502"),
    ],
)
async def test_a_body_that_names_no_model_leaves_every_id_unchecked(
    respx_mock, status, body, reason
):
    respx_mock.get(f"{URL}/models").respond(status, content=body)
    (check,) = await check_catalog([_one()])
    assert check.live is None and check.reason == reason
    assert (check.present, check.missing, check.unchecked) == ((), (), ("a", "b"))
    assert not has_rot([check])


@pytest.mark.respx(using="httpx")
@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"error": {"message": "Invalid  API\n key", "code": "invalid_api_key"}},
            "Invalid API key",
        ),
        ({"error": "model list disabled"}, "model list disabled"),
        ({"message": "Unauthorized"}, "Unauthorized"),
        ({"detail": "Not authenticated"}, "Not authenticated"),
        ({"error": {"code": 401}, "detail": "Not authenticated"}, "Not authenticated"),
        ({"error": {"message": "x " * 300}}, " ".join(["x"] * 300)[:240]),
    ],
)
async def test_the_vendor_says_why_on_one_short_line(respx_mock, body, said):
    respx_mock.get(f"{URL}/models").respond(401, json=body)
    (check,) = await check_catalog([_one()])
    assert check.status == 401 and check.vendor_message == said
    assert len(check.vendor_message) <= 240
    assert catalog_report([check])[0] == (
        f"? p: catalogue unreadable (no key, or the request failed: HTTP 401: {said}) — "
        "2 id(s) UNCHECKED"
    )


@pytest.mark.respx(using="httpx")
async def test_a_key_the_vendor_echoes_is_not_repeated(respx_mock):
    respx_mock.get(f"{URL}/models").respond(
        401, json={"error": {"message": f"Incorrect API key provided: {KEY}."}}
    )
    (check,) = await check_catalog([_one()])
    assert KEY not in "\n".join(catalog_report([check]))
    assert check.vendor_message == "Incorrect API key provided: ***."


@pytest.mark.respx(using="httpx")
async def test_a_list_that_never_comes_is_unchecked(respx_mock):
    respx_mock.get(f"{URL}/models").mock(side_effect=httpx.ReadTimeout("slow"))
    (check,) = await check_catalog([_one()], timeout_s=5)
    assert check.live is None and check.reason == "timed out after 5 s"
    assert check.unchecked == ("a", "b")


@pytest.mark.respx(using="httpx")
async def test_google_is_asked_natively_page_by_page(respx_mock):
    base = "https://generativelanguage.googleapis.com"
    route = respx_mock.get(f"{base}/v1beta/models")
    route.side_effect = [
        httpx.Response(
            200,
            json={
                "models": [{"name": "models/gemini-flash-latest", "inputTokenLimit": 1048576}],
                "nextPageToken": "page-2",
            },
        ),
        httpx.Response(200, json={"models": [{"name": "models/gemma-4-31b-it"}]}),
    ]
    provider = gemini_provider(KEY, models=["gemini-flash-latest", "gemma-4-31b-it", "gone-1"])
    (check,) = await check_catalog([provider])
    assert check.present == ("gemini-flash-latest", "gemma-4-31b-it")
    assert check.missing == ("gone-1",)
    first, second = route.calls
    assert first.request.headers["x-goog-api-key"] == KEY
    assert KEY not in str(first.request.url) and "authorization" not in first.request.headers
    assert second.request.url.params["pageToken"] == "page-2"
    assert check.live is not None and check.live[0].context_length == 1048576


@pytest.mark.respx(using="httpx")
async def test_a_list_with_more_pages_leaves_what_it_did_not_name_unchecked(respx_mock):
    respx_mock.get(f"{URL}/models").respond(200, json={"data": [{"id": "a"}], "has_more": True})
    (check,) = await check_catalog([_one()])
    assert (check.present, check.missing, check.unchecked) == (("a",), (), ("b",))
    assert not has_rot([check])
    assert "  ?    p/b (the list has more pages than were read)" in catalog_report([check])


@pytest.mark.respx(using="httpx")
async def test_google_pages_past_the_last_one_read_leave_the_rest_unchecked(respx_mock):
    from workbench.providers import catalog

    base = "https://generativelanguage.googleapis.com"
    respx_mock.get(f"{base}/v1beta/models").respond(
        200, json={"models": [{"name": "models/gemini-flash-latest"}], "nextPageToken": "more"}
    )
    provider = gemini_provider(KEY, models=["gemini-flash-latest", "on-a-later-page"])
    (check,) = await check_catalog([provider])
    assert check.present == ("gemini-flash-latest",) and check.missing == ()
    assert check.unchecked == ("on-a-later-page",)
    assert respx_mock.calls.call_count == catalog._GEMINI_MAX_PAGES


@pytest.mark.respx(using="httpx")
async def test_a_server_given_no_key_is_asked_without_one(respx_mock):
    route = respx_mock.get(f"{URL}/models").respond(200, json={"data": [{"id": "a"}]})
    local = openai_compatible_provider("local", URL, None, ["a"], external=False)
    (check,) = await check_catalog([local])
    assert check.present == ("a",) and check.unchecked == ()
    assert "authorization" not in route.calls.last.request.headers
