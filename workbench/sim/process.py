"""The simulator in a process of its own, for tests and benchmarks that need one.

`SimServer` runs in a thread of the caller, so a client and the simulator share one GIL and
the client's figures carry the server's cost. `SimProcess` runs
`python -m workbench.cli sim serve --port P --fleet FILE [--workers N]` instead: the client
under test and the server share only the machine's cores. The default fleet is one
zero-latency persona, so a figure is software cost, never a deliberate sleep.

    with SimProcess(workers=4) as sim:
        httpx.post(sim.openai_url + "/chat/completions", json=..., headers=...)
        sim.requests()
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

PERSONA = "bench"

FLEET_TOML = f"""\
seed = 1
description = "benchmark fleet: one zero-latency persona"

[[persona]]
id = "{PERSONA}"
tool_style = "native"
vision = true
latency_ms = 0
latency_jitter_ms = 0
ttft_ms = 0
"""

_START_TIMEOUT_S = 20


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _descendants(pid: int) -> list[int]:
    """`pid` and every process below it (Linux /proc): the workers uvicorn spawns."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SimProcess:
    """`with SimProcess() as sim:` starts the simulator in a child process and stops it.

    With `workers > 1` every worker keeps its own request log: `requests()` and `reset()`
    reach whichever worker takes the connection, so they are exact only with one worker.
    """

    def __init__(self, *, fleet_toml: str = FLEET_TOML, workers: int = 1) -> None:
        self.fleet_toml = fleet_toml
        self.workers = workers
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.openai_url = self.base_url + "/v1"
        self._dir = tempfile.TemporaryDirectory(prefix="workbench-sim-")
        self._proc: subprocess.Popen[bytes] | None = None
        #: the pids of the processes that answered while it started: one per worker
        self.worker_pids: set[int] = set()

    @property
    def pid(self) -> int:
        """The `sim serve` process; with several workers, their parent."""
        assert self._proc is not None, "the simulator is not started"
        return self._proc.pid

    def __enter__(self) -> SimProcess:
        folder = Path(self._dir.name)
        fleet = folder / "fleet.toml"
        fleet.write_text(self.fleet_toml, encoding="utf-8")
        cmd = [
            sys.executable,
            "-m",
            "workbench.cli",
            "sim",
            "serve",
            "--port",
            str(self.port),
            "--fleet",
            str(fleet),
            "--workers",
            str(self.workers),
        ]
        # stderr to a file, not a pipe nobody reads while the server runs: a full pipe would
        # stall a chatty server.
        with open(folder / "stderr.txt", "wb") as err:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        # Ready when every worker has answered: a client that starts while some still boot
        # would pin its keep-alive connections to the first ones up.
        deadline = time.monotonic() + _START_TIMEOUT_S
        while len(self.worker_pids) < self.workers:
            pid = self._answering_pid()
            if pid is not None:
                self.worker_pids.add(pid)
            elif self._proc.poll() is not None:
                text = (folder / "stderr.txt").read_text(errors="replace").strip()
                self._dir.cleanup()
                raise RuntimeError(f"the simulator exited early ({self._proc.returncode}): {text}")
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(
                    f"{len(self.worker_pids)} of the simulator's {self.workers} workers answered "
                    f"GET / within {_START_TIMEOUT_S} s"
                )
            time.sleep(0.01 if pid is not None else 0.05)
        return self

    def _answering_pid(self) -> int | None:
        """The pid of the worker that took a fresh connection, or None while none listens."""
        try:
            resp = httpx.get(self.base_url + "/", timeout=1)
        except httpx.HTTPError:
            return None
        return int(resp.json()["pid"]) if resp.status_code == 200 else None

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()  # uvicorn's parent stops its workers on SIGTERM
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                for pid in reversed(_descendants(self._proc.pid)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                self._proc.wait()
        self._dir.cleanup()

    def requests(self) -> list[dict[str, Any]]:
        """Every request the simulator received (bodies, never keys): GET /sim/requests."""
        resp = httpx.get(self.base_url + "/sim/requests", timeout=60)
        resp.raise_for_status()
        log: list[dict[str, Any]] = resp.json()
        return log

    def batches(self) -> list[dict[str, Any]]:
        """Every batch submitted (id, vendor, model, keys, time): GET /sim/batches."""
        resp = httpx.get(self.base_url + "/sim/batches", timeout=60)
        resp.raise_for_status()
        log: list[dict[str, Any]] = resp.json()
        return log

    def reset(self) -> None:
        """Clear the simulator's request log (it keeps every request body in memory)."""
        httpx.post(self.base_url + "/sim/reset", timeout=5).raise_for_status()

    def cpu_seconds(self) -> float:
        """User + system CPU time used so far by the simulator and all its workers (Linux
        /proc; NaN elsewhere). A worker that has ended no longer counts."""
        total = 0.0
        try:
            pids = _descendants(self.pid)
        except OSError:
            return float("nan")
        for pid in pids:
            try:
                total += _cpu_seconds(pid)
            except (OSError, IndexError, ValueError):
                if pid == self.pid:
                    return float("nan")
        return total
