"""`workbench serve gateway` as its own process: it refuses to start without a key, loses no
attempt under a bounded loopback load, and ends cleanly on SIGTERM mid-load (what was in
flight finishes, exit code 0, the run finished and the file readable)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from gateway_server import CLIENT_KEY, PROVIDER_KEY, providers_toml

from workbench.cli import main
from workbench.errors import ConfigError
from workbench.eval.analysis.frames import RunFrames
from workbench.eval.gateway.keys import ClientKeys
from workbench.eval.gateway.server import is_loopback
from workbench.sim.process import _free_port

ROOT = Path(__file__).resolve().parents[3]


def test_no_key_no_gateway(tmp_path, sim, monkeypatch, capsys):
    monkeypatch.delenv("WORKBENCH_GATEWAY_KEYS", raising=False)
    providers = tmp_path / "providers.toml"
    providers.write_text(providers_toml(sim, "sim-native"))
    db = tmp_path / "wb.duckdb"
    assert main(["serve", "gateway", "--providers", str(providers), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: GATEWAY_NO_KEYS") and "\n" == err[-1] and err.count("\n") == 1
    assert not db.exists()  # refused before anything was opened


def test_bad_settings_are_one_line(tmp_path, sim, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_GATEWAY_KEYS", CLIENT_KEY)
    providers = tmp_path / "providers.toml"
    providers.write_text(providers_toml(sim, "sim-native"))
    argv = ["serve", "gateway", "--providers", str(providers), "--db", str(tmp_path / "wb.duckdb")]
    assert main([*argv, "--concurrency", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: GATEWAY_INVALID")
    assert main([*argv, "--providers", str(tmp_path / "missing.toml")]) == 2
    assert capsys.readouterr().err.startswith("error: PROVIDERS_INVALID")


def test_keys_come_from_the_variable_and_the_file(tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text("# the CI's key\nfile-key-0123456789abcdef\n\n#not-a-key-0123456789\n")
    keys = ClientKeys.load(keys_file, env=" env-key-0123456789abcdef , ")
    assert len(keys) == 2 and "key" not in repr(keys).replace("key(s)", "")
    assert keys.allows_header("Bearer file-key-0123456789abcdef")
    assert keys.allows_header("bearer env-key-0123456789abcdef")
    assert not keys.allows_header("Bearer #not-a-key-0123456789")
    assert not keys.allows_header("file-key-0123456789abcdef")  # not a bearer header
    assert not keys.allows(None) and not keys.allows("")
    with pytest.raises(ConfigError) as short:
        ClientKeys.load(env="tiny-secret")  # shorter than 16: refused without echoing it
    assert short.value.code == "GATEWAY_KEYS_INVALID" and "tiny-secret" not in str(short.value)
    keys_file.write_text("short-file-key\n")
    with pytest.raises(ConfigError) as short_line:
        ClientKeys.load(keys_file, env="")
    assert short_line.value.code == "GATEWAY_KEYS_INVALID"
    assert "short-file-key" not in str(short_line.value)
    with pytest.raises(ConfigError) as missing:
        ClientKeys.load(tmp_path / "nope", env="")
    assert missing.value.code == "GATEWAY_KEYS_INVALID"


def test_only_loopback_is_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("gateway.example.org")


class GatewayProcess:
    """`python -m workbench.cli serve gateway` on a free loopback port."""

    def __init__(self, tmp_path: Path, sim, *models: str, grace: float = 30) -> None:
        providers = tmp_path / "providers.toml"
        providers.write_text(providers_toml(sim, *models))
        self.db = tmp_path / "gw.duckdb"
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}/v1"
        env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "WB_TEST_GW_KEY": PROVIDER_KEY,
            "WORKBENCH_GATEWAY_KEYS": CLIENT_KEY,
        }
        flags = ["--providers", str(providers), "--db", str(self.db), "--port", str(port)]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workbench.cli",
                "serve",
                "gateway",
                *flags,
                "--grace",
                str(grace),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout
        threading.Thread(target=lambda: [lines.put(line) for line in out], daemon=True).start()
        self.lines = lines
        first = lines.get(timeout=30)
        assert first.startswith(f"gateway at {self.url}"), first

    def terminate(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get())
        assert self.proc.stderr is not None
        return code, "".join(rest), self.proc.stderr.read()


async def fire(url: str, n: int, concurrency: int, persona: str, every_stream: int) -> list:
    """`n` requests, `concurrency` at a time, every `every_stream`-th one streamed: each
    one's outcome: 200 (answered whole), (status, OpenAI's error code) for an error answer or
    a stream that ended on an error event, or the exception a refused connection raised."""
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:

        async def one(i: int) -> object:
            body = {
                "model": f"sim:{persona}",
                "messages": [{"role": "user", "content": f"Reply with pong {i}"}],
                "max_tokens": 20,
                "stream": i % every_stream == 0,
            }
            async with gate:
                try:
                    async with http.stream("POST", url + "/chat/completions", json=body) as got:
                        text = "".join([t async for t in got.aiter_text()])
                except httpx.HTTPError as exc:
                    return exc
            return outcome(got.status_code, text)

        return await asyncio.gather(*(one(i) for i in range(n)))


def outcome(status: int, text: str) -> object:
    """200 for a whole answer, else (status, the error's code) read from OpenAI's shape."""
    if status == 200 and ("[DONE]" in text or text.startswith("{")) and '"error"' not in text:
        return 200
    for line in text.splitlines():
        data = line.removeprefix("data: ")
        if '"error"' in data:
            error = json.loads(data)["error"]
            assert set(error) == {"message", "type", "param", "code"}, error
            return status, error["code"]
    return status, None


def logged(db: Path) -> dict:
    with RunFrames.open(db) as wb:
        run = wb.runs().iloc[-1]
        outputs = wb.outputs(run["run_id"])
        attempts = wb.attempts(run["run_id"])
        routes = wb.sql("SELECT * FROM routes WHERE run_id = ?", [run["run_id"]])
        return {"run": run, "outputs": outputs, "attempts": attempts, "routes": routes}


def test_a_bounded_load_loses_no_attempt(tmp_path, sim):
    gw = GatewayProcess(tmp_path, sim, "sim-native")
    outcomes = asyncio.run(fire(gw.url, 300, 16, "sim-native", every_stream=10))
    assert outcomes == [200] * 300
    code, out, err = gw.terminate()
    assert code == 0 and "gateway stopped" in out and err == ""
    got = logged(gw.db)
    asked = [r for r in sim.requests() if r["persona"] == "sim-native"]
    assert len(got["outputs"]) == len(got["routes"]) == 300
    assert got["outputs"]["error_code"].isna().all()
    assert len(got["attempts"]) == len(asked) == 300  # every request the simulator got, logged
    assert got["run"]["status"] == "finished"


def test_sigterm_mid_load_lets_what_is_in_flight_finish(tmp_path, sim):
    gw = GatewayProcess(tmp_path, sim, "sim-slow")

    async def load_then_stop() -> list:
        load = asyncio.ensure_future(fire(gw.url, 48, 16, "sim-slow", every_stream=2))
        for _ in range(1500):  # until the first 16 are in flight (30 s at most)
            if sum(r["persona"] == "sim-slow" for r in sim.requests()) >= 16:
                break
            await asyncio.sleep(0.02)
        gw.proc.send_signal(signal.SIGTERM)
        return await load

    outcomes = asyncio.run(load_then_stop())
    code = gw.proc.wait(timeout=60)
    assert code == 0
    got = logged(gw.db)
    answered = outcomes.count(200)
    assert answered >= 16  # those in flight when SIGTERM came finished
    # Answered, refused (the port closed), or stopped in OpenAI's shape: never a bare 500.
    assert all(
        o in (200, (503, "AI_CANCELLED"), (200, "AI_CANCELLED")) or isinstance(o, httpx.HTTPError)
        for o in outcomes
    ), outcomes
    outputs = got["outputs"]
    # Every request the gateway took is in the file, answered or logged cancelled: none lost.
    assert len(outputs) == len(got["routes"]) >= answered
    assert set(outputs["error_code"].dropna()) <= {"AI_CANCELLED"}
    asked = [r for r in sim.requests() if r["persona"] == "sim-slow"]
    assert len(got["attempts"]) == len(asked)
    assert got["run"]["status"] == "finished"


# A model that answers after a minute, and one that streams a word every half second: the
# requests the tests below stop are surely in flight (no timing decides what they assert).
SLOW_FLEET = """seed = 1
[[persona]]
id = "glacial"
tool_style = "native"
latency_ms = 60000
ttft_ms = 60000
[[persona]]
id = "trickle"
tool_style = "native"
latency_ms = 10
ttft_ms = 10
tokens_per_s = 2
"""


@pytest.fixture(scope="module")
def slow_sim():
    from workbench.sim import SimServer

    server = SimServer(SLOW_FLEET).start()
    try:
        yield server
    finally:
        server.stop()


def asked(sim, persona: str) -> int:
    return sum(r["persona"] == persona for r in sim.requests())


async def until_asked(sim, persona: str, n: int) -> None:
    for _ in range(1500):  # 30 s at most
        if asked(sim, persona) >= n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the simulator never got {n} request(s) for {persona}")


def test_sigterm_past_the_grace_answers_503_and_logs_the_cancelled(tmp_path, slow_sim):
    slow_sim.reset()
    gw = GatewayProcess(tmp_path, slow_sim, "glacial", "trickle", grace=0)
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}

    async def stop_mid_request() -> tuple[object, object]:
        async with httpx.AsyncClient(timeout=60, headers=headers) as http:
            ask = {"messages": [{"role": "user", "content": "Tell me a long story"}]}
            waiting = asyncio.ensure_future(
                http.post(gw.url + "/chat/completions", json={**ask, "model": "sim:glacial"})
            )
            body = {**ask, "model": "sim:trickle", "stream": True}
            async with http.stream("POST", gw.url + "/chat/completions", json=body) as got:
                lines = got.aiter_lines()
                first = await anext(lines)  # the stream has begun: its text is on its way
                assert first.startswith("data: ") and "[DONE]" not in first
                await until_asked(slow_sim, "glacial", 1)
                gw.proc.send_signal(signal.SIGTERM)
                streamed = outcome(got.status_code, "\n".join([line async for line in lines]))
            said = await waiting
            return outcome(said.status_code, said.text), streamed

    answered, streamed = asyncio.run(stop_mid_request())
    code, _, err = gw.terminate()
    assert answered == (503, "AI_CANCELLED")  # OpenAI's shape: the SDKs read it
    assert streamed == (200, "AI_CANCELLED")  # the stream's last event: an error, no [DONE]
    assert code == 0 and "Traceback" not in err and "STORE_CLOSED" not in err, err
    got = logged(gw.db)
    assert sorted(got["attempts"]["outcome"]) == ["cancelled", "cancelled"]
    assert len(got["attempts"]) == asked(slow_sim, "glacial") + asked(slow_sim, "trickle")
    assert list(got["outputs"]["error_code"]) == ["AI_CANCELLED"] * 2
    assert list(got["routes"]["error_code"]) == ["AI_CANCELLED"] * 2
    assert got["run"]["status"] == "finished"


def test_a_second_sigint_stops_the_load_and_loses_no_row(tmp_path, slow_sim):
    slow_sim.reset()
    gw = GatewayProcess(tmp_path, slow_sim, "glacial")

    async def load_then_interrupt_twice() -> list:
        load = asyncio.ensure_future(fire(gw.url, 6, 6, "glacial", every_stream=2))
        await until_asked(slow_sim, "glacial", 6)
        gw.proc.send_signal(signal.SIGINT)  # the grace (30 s) begins: nothing ends yet
        await asyncio.sleep(0.3)
        gw.proc.send_signal(signal.SIGINT)  # no more waiting: stopped, logged, then closed
        return await load

    outcomes = asyncio.run(load_then_interrupt_twice())
    code = gw.proc.wait(timeout=60)
    assert gw.proc.stderr is not None
    err = gw.proc.stderr.read()
    assert outcomes == [(503, "AI_CANCELLED")] * 6
    assert code == 0 and "STORE_CLOSED" not in err and "Traceback" not in err, err
    got = logged(gw.db)
    with RunFrames.open(gw.db) as wb:
        items = wb.sql("SELECT * FROM items WHERE run_id = ?", [got["run"]["run_id"]])
    assert len(items) == len(got["outputs"]) == len(got["routes"]) == 6
    assert set(got["outputs"]["error_code"]) == {"AI_CANCELLED"}
    assert list(got["attempts"]["outcome"]) == ["cancelled"] * 6
    assert got["run"]["status"] == "finished"


@pytest.mark.parametrize(
    ("host", "port", "says"),
    [
        ("127.0.0.1", None, "cannot listen on 127.0.0.1:"),  # the port is in use
        ("127.0.0.1", 99999, "a port is 0 to 65535"),
        ("no-such-host.invalid", 8780, "the host does not resolve"),
    ],
)
def test_an_address_it_cannot_listen_on_is_one_line_and_no_run(
    tmp_path, sim, monkeypatch, capsys, host, port, says
):
    monkeypatch.setenv("WORKBENCH_GATEWAY_KEYS", CLIENT_KEY)
    providers = tmp_path / "providers.toml"
    providers.write_text(providers_toml(sim, "sim-native"))
    db = tmp_path / "wb.duckdb"
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1] if port is None else port
        argv = ["--providers", str(providers), "--db", str(db), "--host", host]
        assert main(["serve", "gateway", *argv, "--port", str(port)]) == 2
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert err.startswith("error: GATEWAY_INVALID") and says in err and err.count("\n") == 1, err
    assert not db.exists()  # refused before the file was opened: no empty run left
