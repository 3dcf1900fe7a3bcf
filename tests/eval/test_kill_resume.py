"""`kill -9` of a real `workbench run`, then `--resume`: no answered call is lost, none is paid
for twice, and every item finishes exactly once.

Everything is a real process: the simulator (`workbench sim serve`, 50 ms per request) and
the run; the counts come from the simulator's own request log.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

from workbench.eval.store.database import Store

ITEMS = 400
CONCURRENCY = 8
FLEET = """\
seed = 1
[[persona]]
id = "slow50"
tool_style = "native"
latency_ms = 50
latency_jitter_ms = 0
ttft_ms = 0
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sim_process(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(FLEET)
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "sim",
            "serve",
            "--port",
            str(port),
            "--fleet",
            str(fleet),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url + "/v1/models", timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the simulator did not start") from None
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.kill()
        proc.wait()


def prompts_asked(url: str) -> list[str]:
    log = httpx.get(url + "/sim/requests", timeout=10).json()
    return [r["body"]["messages"][-1]["content"] for r in log if r["path"].endswith("/completions")]


def run_command(tmp_path: Path, url: str, *extra: str) -> list[str]:
    providers = tmp_path / "providers.toml"
    providers.write_text(
        f'[router]\nname = "slow"\n[[providers]]\nid = "sim"\nadapter = "openai"\n'
        f'base_url = "{url}/v1"\nkey_env = "SIM_KEY"\nmodels = ["slow50"]\n'
    )
    data = tmp_path / "items.jsonl"
    if not data.exists():
        data.write_text(
            "".join(
                json.dumps({"id": f"i{i:03d}", "prompt": f"Reply with exactly: pong {i}"}) + "\n"
                for i in range(ITEMS)
            )
        )
    return [
        sys.executable,
        "-m",
        "workbench.cli",
        "run",
        str(data),
        "--providers",
        str(providers),
        "--db",
        str(tmp_path / "run.duckdb"),
        "--concurrency",
        str(CONCURRENCY),
        "--quiet",
        "--no-report",
        *extra,
    ]


def test_a_killed_run_loses_no_answer_and_its_resume_asks_none_again(tmp_path, sim_process):
    env = {**os.environ, "SIM_KEY": "sim-key"}
    run = subprocess.Popen(
        run_command(tmp_path, sim_process),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while len(prompts_asked(sim_process)) < 120:  # well into the run, between two flushes or not
        assert run.poll() is None, run.stderr.read() if run.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait()
    time.sleep(0.2)  # the requests in flight at the kill reach the simulator's log
    received = prompts_asked(sim_process)

    db = tmp_path / "run.duckdb"
    with Store.open(db) as store:  # replays the journal the killed run left
        run_id = store.con.execute("SELECT run_id FROM runs").fetchall()[0][0]
        attempts = store.con.execute("SELECT count(*) FROM attempts").fetchall()[0][0]
        answered = {item for (item, _, _) in store.replies(run_id)}
    # Every answered request was logged, but for at most the ones in flight at the kill.
    assert len(received) - CONCURRENCY <= attempts <= len(received)
    assert len(answered) >= len(received) - CONCURRENCY

    httpx.post(sim_process + "/sim/reset", timeout=10)
    resumed = subprocess.run(
        run_command(tmp_path, sim_process, "--resume", run_id),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    asked_again = {p.removeprefix("Reply with exactly: pong ") for p in prompts_asked(sim_process)}
    # No item whose answer was journaled is asked again; every other one is asked once.
    assert not {f"{int(i[1:])}" for i in answered} & asked_again
    assert len(asked_again) == len(prompts_asked(sim_process)) == ITEMS - len(answered)
    con = duckdb.connect(str(db), read_only=True)
    outputs = con.execute(
        "SELECT count(*), count(DISTINCT item_id), count(error_code) FROM outputs"
    ).fetchall()[0]
    con.close()
    assert outputs == (ITEMS, ITEMS, 0)
