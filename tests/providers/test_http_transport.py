"""The default HTTP client (httpx over aiohttp) and httpx's own, against the simulator."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from httpx_aiohttp import AiohttpTransport

from workbench.config.providers_file import load_config
from workbench.errors import ConfigError, ProviderError
from workbench.eval.run.runner import run_prompt_set
from workbench.eval.store.database import Store
from workbench.providers.http import failure_kind, new_client, pool_for
from workbench.providers.openai_compat import openai_compatible_provider
from workbench.routing import Router
from workbench.sim.fleet_providers import sim_providers
from workbench.types import CallContext, ChatRequest, Reply

TRANSPORTS = ["aiohttp", "httpx"]


def _provider(sim, transport, **kw):
    return sim_providers(sim, http_transport=transport, **kw)[0]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nobody listens once the socket is closed


def test_the_default_client_is_httpx_over_aiohttp_and_httpx_keeps_its_own_pool():
    default, own = new_client(pool=12), new_client("httpx", pool=12)
    assert isinstance(default, httpx.AsyncClient) and isinstance(own, httpx.AsyncClient)
    assert isinstance(default._transport, AiohttpTransport)
    assert default._transport.limits.max_connections == 12
    assert isinstance(own._transport, httpx.AsyncHTTPTransport)
    assert pool_for(32) >= 32 and pool_for(1) >= 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_and_a_stream_read_the_same_reply_over_either_transport(sim, transport):
    provider = _provider(sim, transport)
    request = ChatRequest.of("Reply with exactly: pong")
    try:
        reply = await provider.call(request, model="sim-native")
        items = [item async for item in provider.stream(request, model="sim-native")]
    finally:
        await provider.aclose()
    streamed = items[-1]
    assert isinstance(streamed, Reply)
    assert reply.text.strip() and streamed.text == reply.text
    assert "".join(i for i in items if isinstance(i, str)) == reply.text
    assert [r["model"] for r in sim.requests()][-2:] == ["sim-native", "sim-native"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_refused_connection_is_a_network_failure_not_a_timeout(transport):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    provider = openai_compatible_provider("p", url, "k", ["m"], http_transport=transport)
    with pytest.raises(ProviderError) as info:
        await provider.call(ChatRequest.of("hi"))
    await provider.aclose()
    assert info.value.kind == "network"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_slow_answer_is_a_timeout_over_either_transport(sim, transport):
    provider = _provider(sim, transport, timeout_s=0.05)
    with pytest.raises(ProviderError) as info:
        await provider.call(ChatRequest.of("hi"), model="sim-slow")  # 200 ms per answer
    await provider.aclose()
    assert info.value.kind == "timeout"


def test_a_provider_called_from_two_event_loops_makes_a_client_in_each(sim):
    provider = _provider(sim, "aiohttp")
    request = ChatRequest.of("Reply with exactly: pong")
    first = asyncio.run(provider.call(request, model="sim-native"))
    second = asyncio.run(provider.call(request, model="sim-native"))  # the first loop is gone
    assert first.text == second.text


def test_failure_kind_reads_the_aiohttp_cause_behind_httpxs_coarse_mapping():
    import aiohttp

    refused = httpx.ConnectTimeout("refused")  # what httpx-aiohttp raises for a refusal
    refused.__cause__ = aiohttp.ClientConnectionError("refused")
    slow = httpx.ReadTimeout("slow")
    slow.__cause__ = aiohttp.SocketTimeoutError("slow")
    assert (failure_kind(refused), failure_kind(slow)) == ("network", "timeout")
    assert failure_kind(httpx.ConnectTimeout("no cause")) == "timeout"


def test_an_unknown_transport_is_refused_by_the_router_and_the_providers_file(tmp_path):
    with pytest.raises(ConfigError) as info:
        Router([], http_transport="curl")  # type: ignore[arg-type]
    assert info.value.code == "ROUTER_INVALID" and "aiohttp" in str(info.value)
    path = tmp_path / "providers.toml"
    path.write_text(
        '[router]\nhttp_transport = "curl"\n[[providers]]\nid = "p"\nadapter = "openai"\n'
        'base_url = "http://127.0.0.1:1/v1"\nmodels = ["m"]\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.code == "PROVIDERS_INVALID" and "http_transport" in str(info.value)


async def test_the_providers_file_chooses_the_transport_and_the_runner_sizes_the_pool(
    sim, tmp_path
):
    path = tmp_path / "providers.toml"
    path.write_text(
        f'[router]\nhttp_transport = "httpx"\n[[providers]]\nid = "sim"\nadapter = "openai"\n'
        f'base_url = "{sim.openai_url}"\nmodels = ["sim-native"]\n'
    )
    config = load_config(path)
    data = tmp_path / "items.jsonl"
    data.write_text('{"id": "a", "prompt": "Reply with exactly: pong"}\n')
    with Store.open(tmp_path / "w.duckdb") as store:
        summary = await run_prompt_set(data, config, store, concurrency=40, progress=False)
    provider = config.providers[0]
    assert summary.done == 1 and summary.errors == 0
    assert (provider.http_transport, provider.pool) == ("httpx", pool_for(40))


async def test_a_provider_dropped_unclosed_closes_its_connections_in_silence(sim, recwarn):
    import gc

    seen: list[dict] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: seen.append(context))
    provider = _provider(sim, "aiohttp")
    await provider.call(ChatRequest.of("Reply with exactly: pong"), model="sim-native")
    del provider  # never closed, as a notebook cell leaves it
    gc.collect()
    await asyncio.sleep(0.05)
    assert not [c for c in seen if "Unclosed" in str(c.get("message"))]
    assert not [w for w in recwarn if "Unclosed" in str(w.message)]


def test_two_event_loops_in_two_threads_keep_a_client_each(sim):
    import threading

    provider = _provider(sim, "aiohttp")
    request = ChatRequest.of("Reply with exactly: pong")
    clients: dict[str, set[int]] = {"a": set(), "b": set()}

    def thread(name: str) -> None:
        async def calls() -> None:
            for _ in range(10):
                await provider.call(request, model="sim-native")
                clients[name].add(id(provider.client(CallContext())))
            await provider.aclose()

        asyncio.run(calls())

    threads = [threading.Thread(target=thread, args=(n,)) for n in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(ids) for ids in clients.values()] == [1, 1]  # reused, never remade per call
    assert clients["a"] != clients["b"]
