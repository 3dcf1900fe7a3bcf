"""The providers file: validated with the file and field named; keys only ever by name."""

import pytest

from workbench.config.providers_file import load_providers
from workbench.errors import ConfigError
from workbench.providers.gemini import GeminiProvider
from workbench.providers.openai_compat import OpenAICompatibleProvider
from workbench.types import CallContext

GOOD = """
[[providers]]
id = "groq"
base_url = "https://api.groq.com/openai/v1"
key_env = "WB_TEST_GROQ_KEY"
models = ["openai/gpt-oss-120b", { id = "qwen/qwen3.8-27b", rpm = 30, vision = false }]

[[providers]]
id = "google"
adapter = "gemini"
key_env = "WB_TEST_GEMINI_KEY"
models = ["gemini-flash-latest"]
"""


def write(tmp_path, text):
    path = tmp_path / "providers.toml"
    path.write_text(text)
    return path


def test_loads_in_order_and_reads_key_at_call_time(tmp_path, monkeypatch):
    providers = load_providers(write(tmp_path, GOOD))
    assert [type(p) for p in providers] == [OpenAICompatibleProvider, GeminiProvider]
    assert [m.id for m in providers[0].models] == ["openai/gpt-oss-120b", "qwen/qwen3.8-27b"]
    assert providers[0].models[1].rpm == 30
    ctx = CallContext()
    monkeypatch.delenv("WB_TEST_GROQ_KEY", raising=False)
    assert providers[0].key(ctx) is None
    monkeypatch.setenv("WB_TEST_GROQ_KEY", "rotated-1")
    assert providers[0].key(ctx) == "rotated-1"
    assert "rotated-1" not in repr(providers[0])


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('[[providers]]\nid = "a"\nbase_url = "ftp://x"\nmodels = ["m"]', "providers[0].base_url"),
        ('[[providers]]\nid = "a"\nbase_url = "http://x"\nmodels = []', "providers[0].models"),
        (
            '[[providers]]\nid = "a"\nbase_url = "http://x"\nmodels = [{rpm = 3}]',
            "providers[0].models[0].id",
        ),
        (
            '[[providers]]\nid = "a"\nbase_url = "http://x"\nmodels = ["m"]\nkey = "sk-x"',
            "providers[0]",
        ),
        (
            '[[providers]]\nid = "a"\nadapter = "soap"\nbase_url = "http://x"\nmodels = ["m"]',
            "providers[0].adapter",
        ),
        (
            '[[providers]]\nid = "a"\nbase_url = "http://x"\nmodels = [{id = "m", tpm = -1}]',
            "providers[0].models[0].tpm",
        ),
        ("providers = 3", "providers"),
        ("[[providers]\nid=", "TOML"),
    ],
)
def test_bad_files_name_the_field(tmp_path, text, field):
    with pytest.raises(ConfigError) as info:
        load_providers(write(tmp_path, text))
    assert field in str(info.value)
    assert info.value.code in ("PROVIDERS_INVALID", "BAD_BASE_URL")
    assert "\n" not in str(info.value)


def test_a_model_may_carry_tokens_per_minute(tmp_path):
    text = '[[providers]]\nid = "a"\nbase_url = "http://x"\nmodels = [{id = "m", tpm = 6000}]'
    (provider,) = load_providers(write(tmp_path, text))
    assert provider.models[0].tpm == 6000
