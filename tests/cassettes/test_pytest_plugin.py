"""The pytest plugin: a test records its cassette once (`--workbench-record`), then replays
it with nothing listening; a test whose cassette is missing fails in one line saying how."""

from __future__ import annotations

pytest_plugins = ["pytester"]

TEST = """
import pytest

from workbench.providers import openai_compatible_provider
from workbench.sim import SimServer
from workbench.types import ChatRequest


@pytest.mark.cassette("tapes/pong")
async def test_pong(workbench_cassette):
    if workbench_cassette.mode == "replay":
        answer = await ask("http://127.0.0.1:9/v1", workbench_cassette)
    else:
        async with SimServer() as sim:
            answer = await ask(sim.openai_url, workbench_cassette)
    assert "pong" in answer.lower()


async def test_unmarked(workbench_cassette):
    assert workbench_cassette.file.parts[-3:] == ("test_plugged", "test_unmarked", "cassette.jsonl")


async def ask(url, cassette):
    provider = openai_compatible_provider("sim", url, "sk-plugin-key-0123456789", ["sim-native"])
    provider.use_cassette(cassette)
    try:
        return (await provider.call(ChatRequest.of("Reply with exactly: pong"))).text
    finally:
        await provider.aclose()
"""
PLUGIN = ("-p", "workbench.cassettes.pytest_plugin", "-p", "no:cacheprovider", "-o", "addopts=")


def test_record_once_then_replay_without_the_network(pytester):
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_plugged=TEST)
    missing = pytester.runpytest(*PLUGIN, "-k", "pong")
    missing.assert_outcomes(errors=1)
    missing.stdout.fnmatch_lines(["*CASSETTE_MISSING*--workbench-record*"])
    pytester.runpytest(*PLUGIN, "--workbench-record").assert_outcomes(passed=2)
    tape = pytester.path / "tapes" / "pong" / "cassette.jsonl"
    assert tape.exists() and b"sk-plugin-key" not in tape.read_bytes()
    pytester.runpytest(*PLUGIN, "-k", "pong").assert_outcomes(passed=1)
