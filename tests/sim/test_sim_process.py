"""`SimProcess` and `workbench sim serve --workers N`: the simulator as real processes on one
loopback port, reached over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from workbench.errors import ConfigError
from workbench.sim import run_forever
from workbench.sim.process import FLEET_TOML, SimProcess

SOLO_FLEET = """\
seed = 7
[[persona]]
id = "solo"
tool_style = "native"
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
"""


def _chat(base_url: str, model: str, text: str) -> httpx.Response:
    return httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": text}]},
        headers={"authorization": "Bearer sim-key"},
        timeout=10,
    )


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_sim_process_serves_its_own_fleet_and_logs_what_it_received():
    with SimProcess(fleet_toml=SOLO_FLEET) as sim:
        models = httpx.get(sim.openai_url + "/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["solo"]  # not the default `bench` fleet

        resp = _chat(sim.base_url, "solo", "hello from the test")
        assert resp.status_code == 200
        assert resp.json()["choices"][0]["message"]["content"]

        log = sim.requests()
        assert [(r["path"], r["persona"], r["status"]) for r in log] == [
            ("/v1/chat/completions", "solo", 200)
        ]
        assert log[0]["body"]["messages"][-1]["content"] == "hello from the test"
        sim.reset()
        assert sim.requests() == []


def test_the_default_fleet_is_the_one_zero_latency_benchmark_persona():
    assert 'id = "bench"' in FLEET_TOML and "latency_ms = 0" in FLEET_TOML
    with SimProcess() as sim:
        assert _chat(sim.base_url, "bench", "hi").status_code == 200


def test_two_workers_serve_one_port_from_two_processes():
    with SimProcess(workers=2) as sim:
        assert len(sim.worker_pids) == 2
        assert sim.pid not in sim.worker_pids  # the parent supervises, the workers answer
        assert {_parent_of(pid) for pid in sim.worker_pids} == {sim.pid}

        statuses = [_chat(sim.base_url, "bench", f"question {i}").status_code for i in range(20)]
        assert statuses == [200] * 20
        answered_by = {httpx.get(sim.base_url + "/", timeout=10).json()["pid"] for _ in range(5)}
        assert answered_by <= sim.worker_pids

        # the workers' CPU counts, not only the parent's
        assert sim.cpu_seconds() > _cpu_of(sim.pid)


def test_sim_serve_refuses_zero_workers_with_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "sim", "serve", "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: SIM_INVALID:"), proc.stderr


def test_sim_serve_with_workers_reports_a_taken_port_with_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "workbench.cli",
                "sim",
                "serve",
                "--workers",
                "2",
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: SIM_INVALID:"), proc.stderr
    assert str(port) in lines[0]


def test_several_workers_need_a_fleet_they_can_load_themselves():
    with pytest.raises(ConfigError) as info:
        run_forever({"persona": [{"id": "x"}]}, workers=2, announce=None)
    assert info.value.code == "SIM_INVALID"
