"""A LiteLLM proxy config.yaml read as a providers file: what maps, what is said to be
ignored, every refusal, and a run and a probe driven by one against the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from workbench.cli import main
from workbench.config.litellm import from_litellm
from workbench.config.providers_file import load_config, load_providers
from workbench.errors import ConfigError
from workbench.providers.gemini import GEMINI_URL, GeminiProvider
from workbench.providers.openai_compat import OpenAICompatibleProvider
from workbench.routing.quota_redis import RedisQuota
from workbench.types import CallContext, ChatRequest

SMOKE = Path(__file__).resolve().parents[2] / "datasets" / "smoke.jsonl"
SECRET = "sk-litellm-test-secret-0123456789"
NOTICE = "litellm config: ignored fields:"

REALISTIC = """
model_list:
  - model_name: fast
    litellm_params:
      model: groq/llama-3.1-8b-instant
      api_key: os.environ/WB_LL_GROQ
      rpm: 30
      temperature: 0.2
    tpm: 6000
  - model_name: smart
    litellm_params:
      model: gemini/gemini-2.0-flash
      api_key: os.environ/WB_LL_GEMINI
      order: 2
      tpm: 1000000
  - model_name: smart
    litellm_params:
      model: openrouter/meta-llama/llama-3.3-70b-instruct:free
      api_key: os.environ/WB_LL_OPENROUTER
      order: 1
      timeout: 45
    model_info:
      id: or-free
      mode: chat
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/WB_LL_OPENAI
      rpm: 500
      tpm: 30000
    rpm: 400
  - model_name: local
    litellm_params:
      model: hosted_vllm/Qwen/Qwen3-8B
      api_base: http://127.0.0.1:8000/v1
router_settings:
  routing_strategy: simple-shuffle
  fallbacks: [{"gpt-4o": ["smart"]}, {"fast": ["gpt-4o"]}]
  default_fallbacks: ["local"]
  cooldown_time: 30
  num_retries: 2
  redis_host: os.environ/WB_LL_REDIS_HOST
  redis_port: 6380
  redis_password: os.environ/WB_LL_REDIS_PASSWORD
litellm_settings:
  drop_params: true
  fallbacks: [{"local": ["fast"]}]
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
"""

ENV = {
    "WB_LL_GROQ": "gsk-groq",
    "WB_LL_GEMINI": "gem-key",
    "WB_LL_OPENROUTER": "or-key",
    "WB_LL_OPENAI": "oa-key",
    "WB_LL_REDIS_HOST": "cache.internal",
    "WB_LL_REDIS_PASSWORD": "p@ss/word",
}


@pytest.fixture
def env(monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refusal(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert "\n" not in str(info.value)
    return info.value


# --- what maps --------------------------------------------------------------------------------
def test_a_realistic_config_maps_onto_providers_chain_cooldown_redis_and_limits(tmp_path, env):
    config = load_config(write(tmp_path, REALISTIC))
    # fast, then its fallback gpt-4o, then gpt-4o's fallback smart (order 1 before order 2);
    # local, a default fallback, goes last.
    assert [p.id for p in config.providers] == ["fast", "gpt-4o", "smart-2", "smart", "local"]
    by_id = {p.id: p for p in config.providers}
    ctx = CallContext()
    expected = {
        "fast": (OpenAICompatibleProvider, "https://api.groq.com/openai/v1", "gsk-groq"),
        "gpt-4o": (OpenAICompatibleProvider, "https://api.openai.com/v1", "oa-key"),
        "smart-2": (OpenAICompatibleProvider, "https://openrouter.ai/api/v1", "or-key"),
        "smart": (GeminiProvider, GEMINI_URL, "gem-key"),
        "local": (OpenAICompatibleProvider, "http://127.0.0.1:8000/v1", None),
    }
    for pid, (kind, url, key) in expected.items():
        provider = by_id[pid]
        assert (type(provider), provider.base_url(ctx), provider.key(ctx)) == (kind, url, key)
    models = {p.id: p.models[0] for p in config.providers}
    assert models["fast"].id == "llama-3.1-8b-instant"
    assert (models["fast"].rpm, models["fast"].tpm) == (30, 6000)  # tpm from the entry's top
    assert (models["gpt-4o"].rpm, models["gpt-4o"].tpm) == (400, 30000)  # the top level wins
    assert models["smart"].tpm == 1_000_000
    assert models["smart-2"].id == "meta-llama/llama-3.3-70b-instruct:free"
    assert models["local"].id == "Qwen/Qwen3-8B"
    assert by_id["smart-2"].timeout_s == 45.0
    assert config.router_options == {
        "cooldown_s": 30.0,
        "redis_url": "redis://:p%40ss%2Fword@cache.internal:6380",
    }
    assert "p@ss" not in repr(config)
    assert config.ignored == (
        "model_list[0].litellm_params.temperature",
        "model_list[2].model_info.mode",
        "model_list[3].litellm_params.rpm",
        "router_settings.routing_strategy",
        "router_settings.num_retries",
        "litellm_settings.drop_params",
        "litellm_settings.fallbacks",  # router_settings.fallbacks wins, as in LiteLLM
        "general_settings.master_key",
    )
    env.setenv("WB_LL_GROQ", "rotated")  # a key is still read at call time
    assert by_id["fast"].key(ctx) == "rotated"


def test_the_mapped_providers_are_kept_in_file_order_by_load_providers(tmp_path, env):
    providers = load_providers(write(tmp_path, REALISTIC))
    assert [p.id for p in providers] == ["fast", "smart", "smart-2", "gpt-4o", "local"]


def test_fallbacks_and_cooldown_may_sit_in_litellm_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("WB_LL_KEY", "k")
    config = load_config(
        write(
            tmp_path,
            """
model_list:
  - {model_name: b, litellm_params: {model: openai/b, api_key: os.environ/WB_LL_KEY}}
  - {model_name: a, litellm_params: {model: openai/a, api_key: os.environ/WB_LL_KEY}}
litellm_settings:
  fallbacks: [{"a": ["b"]}]
  cooldown_time: 0
  set_verbose: true
""",
        )
    )
    assert [p.id for p in config.providers] == ["a", "b"]
    assert config.router_options == {"cooldown_s": 0.0}
    assert config.ignored == ("litellm_settings.set_verbose",)


def test_order_and_deployment_ids_set_the_walk_inside_and_across_groups(tmp_path, monkeypatch):
    monkeypatch.setenv("WB_LL_KEY", "k")
    text = """
model_list:
  - {model_name: g, litellm_params: {model: openai/unordered, api_key: os.environ/WB_LL_KEY}}
  - {model_name: g, litellm_params: {model: openai/third, api_key: os.environ/WB_LL_KEY,
                                     order: 3}}
  - {model_name: g, litellm_params: {model: openai/first, api_key: os.environ/WB_LL_KEY},
     model_info: {order: 1}}
  - {model_name: h, litellm_params: {model: openai/h, api_key: os.environ/WB_LL_KEY}}
  - {model_name: h, litellm_params: {model: openai/pinned, api_key: os.environ/WB_LL_KEY},
     model_info: {id: pinned-one}}
router_settings:
  fallbacks: [{"g": ["pinned-one"]}]
"""
    config = load_config(write(tmp_path, text))
    assert [p.models[0].id for p in config.providers] == [
        "first",
        "third",
        "unordered",
        "pinned",
        "h",
    ]
    assert [p.id for p in config.providers] == ["g-3", "g-2", "g", "h-2", "h"]
    assert config.ignored == ()


def test_a_model_name_becomes_an_id_our_keys_can_carry(monkeypatch):
    monkeypatch.setenv("WB_LL_KEY", "k")
    mapped = from_litellm(
        {
            "model_list": [
                {
                    "model_name": "team a:gpt@eu",
                    "litellm_params": {"model": "openai/gpt-4o", "api_key": "os.environ/WB_LL_KEY"},
                },
            ]
        }
    )
    assert mapped.data["providers"][0]["id"] == "team-a-gpt-eu"


def test_limits_are_read_where_litellm_reads_them_first_one_wins(monkeypatch):
    monkeypatch.setenv("WB_LL_KEY", "k")
    params = {"model": "groq/m", "api_key": "os.environ/WB_LL_KEY"}
    mapped = from_litellm(
        {
            "model_list": [
                {"model_name": "a", "litellm_params": params, "model_info": {"rpm": 7, "tpm": 900}},
                {
                    "model_name": "b",
                    "tpm": 1,
                    "litellm_params": {**params, "tpm": 2},
                    "model_info": {"tpm": 3, "rpm": 4},
                },
            ]
        }
    )
    models = [p["models"][0] for p in mapped.data["providers"]]
    assert models == [{"id": "m", "rpm": 7, "tpm": 900}, {"id": "m", "tpm": 1, "rpm": 4}]
    assert mapped.ignored == ("model_list[1].litellm_params.tpm", "model_list[1].model_info.tpm")


def test_a_model_list_in_a_file_of_another_name_is_read_as_litellm(tmp_path, monkeypatch):
    monkeypatch.setenv("WB_LL_KEY", "k")
    doc = {
        "model_list": [
            {
                "model_name": "m",
                "litellm_params": {
                    "model": "groq/m",
                    "api_key": "os.environ/WB_LL_KEY",
                    "max_tokens": 5,
                },
            }
        ]
    }
    config = load_config(write(tmp_path, json.dumps(doc), "proxy.json"))
    assert [p.id for p in config.providers] == ["m"]
    assert config.ignored == ("model_list[0].litellm_params.max_tokens",)
    ours = '[[providers]]\nid = "a"\nbase_url = "http://h"\nmodels = ["m"]\n'
    assert load_config(write(tmp_path, ours, "ours.toml")).ignored == ()


def test_redis_url_and_bare_redis_host(tmp_path, monkeypatch):
    base = "model_list:\n  - {model_name: m, litellm_params: {model: hosted_vllm/m, api_base: http://h}}\n"
    url = load_config(write(tmp_path, base + "router_settings: {redis_url: 'redis://r:1/2'}"))
    assert url.router_options == {"redis_url": "redis://r:1/2"}
    bare = load_config(write(tmp_path, base + "router_settings: {redis_host: '::1'}"))
    assert bare.router_options == {"redis_url": "redis://[::1]:6379"}


async def test_a_mapped_config_shares_its_quota_tokens_through_redis(
    sim, redis_server, redis_url, tmp_path, monkeypatch
):
    monkeypatch.setenv("WB_LL_SIM_KEY", SECRET)
    config = load_config(
        write(
            tmp_path,
            f"""
model_list:
  - model_name: fast
    litellm_params:
      model: openai/sim-native
      api_base: {sim.openai_url}
      api_key: os.environ/WB_LL_SIM_KEY
      tpm: 100000
router_settings:
  redis_host: {redis_server.host}
  redis_port: {redis_server.port}
""",
        )
    )
    router = config.build_router()
    try:
        result = await router.route(ChatRequest.of("Reply with exactly: pong"))
        assert result.key == "fast:sim-native"
        assert (await router.stats())["backend"] == "redis"
    finally:
        await router.close()
    shared = RedisQuota(redis_url)
    try:
        used = await shared.usage("fast:sim-native")
    finally:
        await shared.close()
    assert used["rpm"] == 1 and used["tpm"] == result.value.usage.total_tokens > 0


# --- refusals ---------------------------------------------------------------------------------
def test_an_unknown_provider_prefix_names_the_entry_the_prefix_and_the_known_ones(tmp_path):
    error = refusal(
        tmp_path,
        "model_list:\n  - model_name: claude\n    litellm_params:\n"
        "      model: anthropic/claude-3-5-sonnet\n",
    )
    assert error.code == "LITELLM_UNKNOWN_PROVIDER"
    text = str(error)
    assert "model_list[0].litellm_params.model" in text and "'claude'" in text
    assert "'anthropic'" in text
    assert "gemini/, groq/, hosted_vllm/, openai/, openrouter/" in text
    bare = refusal(tmp_path, "model_list:\n  - {model_name: x, litellm_params: {model: gpt-4o}}")
    assert bare.code == "LITELLM_UNKNOWN_PROVIDER" and "no provider prefix" in str(bare)


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("litellm_params.api_key", "{model: groq/m, api_key: os.environ/WB_LL_UNSET}"),
        ("litellm_params.api_base", "{model: openai/m, api_base: os.environ/WB_LL_UNSET}"),
    ],
)
def test_a_missing_environment_variable_is_named_alone(tmp_path, monkeypatch, where, text):
    monkeypatch.delenv("WB_LL_UNSET", raising=False)
    error = refusal(tmp_path, f"model_list:\n  - {{model_name: m, litellm_params: {text}}}")
    assert error.code == "LITELLM_ENV_MISSING"
    assert f"model_list[0].{where}" in str(error) and "WB_LL_UNSET is not set" in str(error)


def test_a_missing_redis_password_variable_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_LL_UNSET", raising=False)
    error = refusal(
        tmp_path,
        "model_list:\n  - {model_name: m, litellm_params: "
        "{model: hosted_vllm/m, api_base: 'http://h'}}\nrouter_settings:\n"
        "  {redis_host: r, redis_password: os.environ/WB_LL_UNSET}",
    )
    assert error.code == "LITELLM_ENV_MISSING" and "WB_LL_UNSET" in str(error)


@pytest.mark.parametrize(
    "text",
    [
        f"model_list:\n  - {{model_name: m, litellm_params: {{model: groq/m, api_key: {SECRET}}}}}",
        "model_list:\n  - {model_name: m, litellm_params: {model: hosted_vllm/m, "
        f"api_base: 'http://h'}}}}\nrouter_settings: {{redis_host: r, redis_password: {SECRET}}}",
        "model_list:\n  - {model_name: m, litellm_params: {model: hosted_vllm/m, "
        f"api_base: 'http://h'}}}}\nrouter_settings: {{redis_url: 'redis://:{SECRET}@r:6379/0'}}",
    ],
    ids=["api_key", "redis_password", "redis_url"],
)
def test_a_secret_written_in_the_file_is_refused_and_never_echoed(tmp_path, capsys, text):
    path = write(tmp_path, text)
    error = refusal(tmp_path, text)
    assert error.code == "LITELLM_LITERAL_KEY" and "os.environ/VAR" in str(error)
    assert SECRET not in str(error) and SECRET not in repr(error.details)
    assert main(["probe", "--providers", str(path), "--no-local"]) == 2
    captured = capsys.readouterr()
    assert "LITELLM_LITERAL_KEY" in captured.err and SECRET not in captured.err + captured.out


def test_malformed_yaml_names_the_line_without_quoting_it(tmp_path):
    error = refusal(tmp_path, f"model_list:\n  - model_name: m\n   api_key: {SECRET}\n  x: [\n")
    assert error.code == "LITELLM_INVALID" and "line " in str(error)
    assert SECRET not in str(error)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[1, 2]", "file"),
        ("general_settings: {}", "model_list"),
        ("model_list: []", "model_list"),
        ("model_list: [3]", "model_list[0]"),
        ("model_list:\n  - {litellm_params: {model: openai/m}}", "model_list[0].model_name"),
        ("model_list:\n  - {model_name: m}", "model_list[0].litellm_params"),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m, rpm: -1}}",
            "model_list[0].litellm_params.rpm",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}, tpm: 1.5}",
            "model_list[0].tpm",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m, order: x}}",
            "model_list[0].litellm_params.order",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: hosted_vllm/m}}",
            "model_list[0].litellm_params.api_base",
        ),
        ("model_list:\n  - {model_name: '*', litellm_params: {model: openai/*}}", "wildcard"),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}}\n"
            "router_settings: {fallbacks: [{m: [nope]}]}",
            "router_settings.fallbacks[0].m",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}}\n"
            "router_settings: {fallbacks: {m: [m]}}",
            "router_settings.fallbacks",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}}\n"
            "router_settings: {cooldown_time: soon}",
            "router_settings.cooldown_time",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}}\n"
            "router_settings: {redis_port: 1}",
            "router_settings.redis_port",
        ),
        (
            "model_list:\n  - {model_name: m, litellm_params: {model: openai/m}}\n"
            "router_settings: 3",
            "router_settings",
        ),
    ],
)
def test_a_config_not_of_litellms_shape_names_the_field(tmp_path, text, said):
    error = refusal(tmp_path, text)
    assert error.code == "LITELLM_INVALID" and said in str(error)


def test_a_bad_api_base_keeps_the_shared_url_code(tmp_path):
    error = refusal(
        tmp_path,
        "model_list:\n  - {model_name: m, litellm_params: "
        "{model: hosted_vllm/m, api_base: 'ftp://h'}}",
    )
    assert error.code == "BAD_BASE_URL" and "model_list[0].litellm_params.api_base" in str(error)


# --- end to end: the CLI against the simulator ----------------------------------------------
@pytest.fixture
def sim_config(sim, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("WB_LL_SIM_KEY", SECRET)
    return write(
        tmp_path,
        f"""
model_list:
  - model_name: fast
    litellm_params:
      model: openai/sim-native
      api_base: {sim.openai_url}
      api_key: os.environ/WB_LL_SIM_KEY
      rpm: 1000
      tpm: 1000000
      temperature: 0
  - model_name: google
    litellm_params:
      model: gemini/gemini-flash
      api_base: {sim.gemini_url}
      api_key: os.environ/WB_LL_SIM_KEY
  - model_name: vllm
    litellm_params:
      model: hosted_vllm/qwen-prose
      api_base: {sim.openai_url}
router_settings:
  fallbacks: [{{"fast": ["google"]}}]
  default_fallbacks: ["vllm"]
  cooldown_time: 5
  routing_strategy: simple-shuffle
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
""",
    )


def test_workbench_run_takes_a_litellm_config_unchanged(
    sim, sim_config, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the report is written under ./reports
    db = tmp_path / "run.duckdb"
    code = main(["run", str(SMOKE), "--providers", str(sim_config), "--no-local", "--db", str(db)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err.count(NOTICE) == 1
    notice = next(line for line in captured.err.splitlines() if NOTICE in line)
    assert notice == (
        f"{sim_config}: {NOTICE} model_list[0].litellm_params.temperature, "
        "router_settings.routing_strategy, general_settings.master_key"
    )
    assert SECRET not in captured.out + captured.err
    con = duckdb.connect(str(db), read_only=True)
    try:
        items = con.execute("SELECT count(DISTINCT item_id) FROM outputs").fetchone()[0]
        keys = {k for (k,) in con.execute("SELECT DISTINCT key FROM attempts").fetchall()}
    finally:
        con.close()
    assert items == sum(1 for line in SMOKE.read_text().splitlines() if line.startswith("{"))
    assert keys == {"fast:sim-native"}  # the chain's head answered everything
    assert all(r["auth"] for r in sim.requests())
    assert list((tmp_path / "reports").glob("*.html"))


def test_workbench_probe_takes_a_litellm_config_unchanged(sim, sim_config, capsys):
    assert main(["probe", "--providers", str(sim_config), "--no-local"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count(NOTICE) == 1
    assert all(pid in captured.out for pid in ("fast", "google", "vllm"))
    assert SECRET not in captured.out + captured.err
    assert main(["probe", "--providers", str(sim_config), "--no-local", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["provider"], r["model"]) for r in rows} == {
        ("fast", "sim-native"),
        ("google", "gemini-flash"),
        ("vllm", "qwen-prose"),
    }
    tools = {r["provider"]: r["verdict"] for r in rows if r["capability"] == "tools"}
    assert tools == {"fast": "native", "google": "native", "vllm": "text"}
