"""The error tree: stable codes, one line, and no secret ever."""

from workbench.errors import ConfigError, ProviderError, StreamInterrupted, excerpt, scrub

# Fake keys, assembled at run time so that no key-shaped string sits in the repository.
FAKE_OPENAI = "sk-" + "abcdefghijklmnop1234"
FAKE_GOOGLE = "AIza" + "SyA1234567890abcdefghijklmnopqrs"


def test_scrub_removes_known_secret_and_vendor_key_shapes():
    text = f"bad key {FAKE_OPENAI} and {FAKE_GOOGLE} and mine=s3cr3t!"
    out = scrub(text, ["s3cr3t!"])
    assert FAKE_OPENAI not in out
    assert "AIzaSy" not in out
    assert "s3cr3t!" not in out


def test_provider_error_is_one_line_with_code_and_no_key():
    key = "gsk_live_1234567890abcdef"
    err = ProviderError(
        "401 for key gsk_live_1234567890abcdef",
        kind="auth",
        status_code=401,
        provider="groq",
        model="m",
        body='{"error": {"message": "Invalid API Key gsk_live_1234567890abcdef"}\n\n}',
        secrets=[key],
    )
    assert str(err).startswith("PROVIDER_AUTH: groq:m:")
    assert "\n" not in str(err)
    assert key not in str(err) and key not in err.body and key not in repr(err.details)


def test_excerpt_is_bounded():
    assert len(excerpt("x " * 1000)) <= 301


def test_stream_interrupted_keeps_partial_and_cause():
    cause = ProviderError("reset", kind="network", provider="p", model="m")
    err = StreamInterrupted(cause, "Hello wor")
    assert err.code == "AI_STREAM_INTERRUPTED"
    assert err.partial == "Hello wor" and err.cause is cause
    assert "9 character(s)" in str(err)


def test_config_error_code_overrides_default():
    assert ConfigError("x", code="FLEET_INVALID").code == "FLEET_INVALID"
    assert ConfigError("x").code == "CONFIG_INVALID"
