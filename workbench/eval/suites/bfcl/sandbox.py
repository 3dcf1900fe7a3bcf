"""BFCL's backends for one entry, run in a worker process that can neither reach out nor hang us.

BFCL's own runner executes a model's calls with `eval()` behind a deny-list of names, which
`__import__('os').system(...)` walks past. Here a call is never evaluated: it is a name and
literal arguments (`BackendCall`), dispatched in the worker to a public method of one of the
entry's instances — made exactly as BFCL makes them (`class()`, then `_load_scenario(copy of
the entry's initial config, long_context=...)` unless the class is stateless; a memory
backend gets its snapshot's fields instead, from `{"snapshot": {...}}` in its config, as
BFCL's `_load_scenario` would read them from the file: `sandbox_worker.load_memory`).
Anything else gets the text an invalid call gets, and nothing runs.

The worker (`sandbox_worker.py`) limits its own CPU time and memory and refuses network,
processes and file writes before importing a backend. The parent gives each call
`step_timeout_s`: a backend that hangs, runs out of CPU or memory, or dies is killed, that
call's result says what happened, and a new worker rebuilds the state by replaying the calls
answered before — one bad step fails that step, not the run.

A sandbox holds one or more *sides* of instances: a run needs the model's; grading needs the
ground truth's beside it, because BFCL compares the two sets' attributes with `!=`, which
only works where both live. A side may carry the model name BFCL would build its instance
names from (`sides={"model": "gpt-4o"}`): one quirk of BFCL's writes them into string
arguments that mention a method (`sandbox_worker.Side.as_bfcl_rewrites`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.suites.bfcl.backends import (
    CLASS_MODULES,
    BackendCall,
    backends_root,
    call_to_wire,
)
from workbench.eval.suites.bfcl.case import BfclEntry
from workbench.eval.suites.bfcl.source import BfclSource

_WORKER = Path(__file__).with_name("sandbox_worker.py")
# Requests written at once stay under the pipe's buffer (64 KiB on Linux): the write never
# waits on a worker that is itself waiting for us to read its answers.
_PIPELINED_BYTES = 32 * 1024
_START_TIMEOUT_S = 60.0  # a cold start imports mpmath; generous, it is not a model's step


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one worker may use: CPU seconds over its life, address space, and how long the
    parent waits for one call's answer."""

    cpu_s: float = 60.0
    memory_mb: int = 1024
    step_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if self.cpu_s <= 0 or self.memory_mb <= 0 or self.step_timeout_s <= 0:
            raise ConfigError(f"sandbox limits must be positive: {self}", code="CONFIG_INVALID")


class _Lost(Exception):
    """The worker did not answer: the reason is what the model reads."""


class _Worker:
    """One worker process and its pipes; reads answers with a deadline."""

    def __init__(self, root: Path, limits: SandboxLimits) -> None:
        self.limits = limits
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                str(_WORKER),
                str(root),
                repr(limits.cpu_s),
                str(limits.memory_mb),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self._buffer = b""
        self._finalizer = weakref.finalize(self, _kill, self.process)

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.send([json.dumps(request).encode()])
        return self.receive(timeout_s)

    def send(self, lines: list[bytes]) -> None:
        """Requests written at once: the worker answers them in order, one line each."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(b"".join(line + b"\n" for line in lines))
            stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Lost(self._death()) from None

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next answer, waited for at most `timeout_s` (then the worker is killed)."""
        stdout = self.process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout_s)
            if not ready:
                self.kill()
                raise _Lost(f"the backend did not answer within {timeout_s:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Lost(self._death())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        if answer.get("memory"):
            self.kill()
            raise _Lost(f"the backend ran out of its {self.limits.memory_mb} MB of memory")
        return answer

    def _death(self) -> str:
        code = self.process.wait()
        if code == -signal.SIGXCPU:
            return f"the backend ran out of its {self.limits.cpu_s:g} s of CPU time"
        if code < 0:
            return f"the backend was stopped by {signal.Signals(-code).name}"
        return f"the backend stopped (exit code {code})"

    def kill(self) -> None:
        self._finalizer()


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            pipe.close()


class BackendSandbox:
    """The backends of one BFCL entry in a worker process. Sync and thread-safe (one request
    at a time); an async caller runs it through `asyncio.to_thread`. State persists across `execute` calls; `reset(entry)` loads
    another entry in the same worker (its imports already paid).

    >>> with BackendSandbox(entry) as sandbox:
    ...     sandbox.execute([BackendCall.parse("cd(folder='document')")])
    ['{"current_working_directory": "document"}']
    """

    def __init__(
        self,
        entry: BfclEntry,
        *,
        source: str | Path | BfclSource | None = None,
        limits: SandboxLimits = SandboxLimits(),
        sides: Sequence[str] | Mapping[str, str] = ("model",),
    ) -> None:
        unknown = [c for c in entry.involved_classes if c not in CLASS_MODULES]
        if unknown:
            raise ConfigError(
                f"{entry.id}: BFCL has no backend class {', '.join(unknown)}",
                code="BFCL_FILE_INVALID",
            )
        if "MemoryAPI_vector" in entry.involved_classes:
            from workbench.eval.suites.bfcl.memory import vector_available

            vector_available()  # the `bfcl-vector` extra, or one line naming it
            # torch maps gigabytes of address space, and its import and the encoder's load
            # cost seconds of CPU: a vector worker gets room for them.
            limits = dataclasses.replace(
                limits, memory_mb=max(limits.memory_mb, 8192), cpu_s=max(limits.cpu_s, 120)
            )
        self.limits = limits
        # side → the model name BFCL would build that side's instance names from
        self.labels = dict(sides) if isinstance(sides, Mapping) else {s: s for s in sides}
        self.sides = tuple(self.labels)
        self._root = backends_root(source)
        self._worker: _Worker | None = None
        self._answered: list[tuple[str, dict[str, Any]]] = []  # replayed after a restart
        self._lock = threading.Lock()  # one request at a time on the worker's pipes
        self._closed = False
        self.entry = entry
        self._start()

    # ------------------------------------------------------------------ public
    def execute(self, calls: Sequence[BackendCall], *, side: str = "model") -> list[str]:
        """Each call's result as BFCL words it, in order."""
        self._check_side(side)
        with self._lock:
            return self._execute(calls, side)

    def _execute(self, calls: Sequence[BackendCall], side: str) -> list[str]:
        """The calls pipelined: written together (what fits the pipe's buffer), answered one
        by one, each answer with its own `step_timeout_s`. A call the worker does not live
        through fails alone; the new worker replays what was answered, and the calls after
        it are sent again."""
        results: list[str] = [""] * len(calls)
        queue: list[tuple[int, dict[str, Any], bytes]] = []
        for index, call in enumerate(calls):
            try:
                wire = call_to_wire(call)
            except TypeError as exc:  # only a Python caller can build such a call
                results[index] = f"Error during execution: {exc}"
                continue
            line = json.dumps({"op": "call", "side": side, "call": wire}).encode()
            queue.append((index, wire, line))
        done = 0
        while done < len(queue):
            chunk: list[tuple[int, dict[str, Any], bytes]] = []
            size = 0
            for queued in queue[done:]:
                if chunk and size + len(queued[2]) > _PIPELINED_BYTES:
                    break
                chunk.append(queued)
                size += len(queued[2]) + 1
            worker = self._live()
            try:
                worker.send([line for _, _, line in chunk])
            except _Lost as lost:
                results[chunk[0][0]] = f"Error during execution: {lost}"
                done += 1
                self._start()
                continue
            for index, wire, _ in chunk:
                done += 1
                try:
                    answer = worker.receive(self.limits.step_timeout_s)
                except _Lost as lost:
                    results[index] = f"Error during execution: {lost}"
                    self._start()  # the state as it was before this call
                    break  # the rest of the chunk died with the worker: sent again
                if "fatal" in answer:  # the worker could not even dispatch it
                    results[index] = f"Error during execution: {answer['fatal']}"
                    continue
                results[index] = str(answer["result"])
                self._answered.append((side, wire))
        return results

    def state(self, *, side: str = "model") -> dict[str, dict[str, Any]]:
        """Each stateful instance's public attributes, JSON-safe (a repr for the rest)."""
        self._check_side(side)
        with self._lock:
            return dict(self._ask({"op": "state", "side": side})["state"])

    def compare(self, model: str = "model", ground_truth: str = "ground_truth") -> dict[str, Any]:
        """BFCL's state check of two sides: `{"valid": True}`, or the first class whose
        public attributes differ and `differences` {attr: {"model", "ground_truth"}}."""
        self._check_side(model)
        self._check_side(ground_truth)
        with self._lock:
            return self._ask({"op": "compare", "model": model, "ground_truth": ground_truth})

    def reset(self, entry: BfclEntry | None = None) -> None:
        """Fresh instances of `entry` (default: the same one), in the same worker."""
        with self._lock:
            self._reset(entry)

    def _reset(self, entry: BfclEntry | None) -> None:
        self.entry = entry or self.entry
        self._answered.clear()
        if self._worker is None or self._worker.process.poll() is not None:
            self._start()
        elif self._load() > self.limits.cpu_s / 2:
            # The CPU limit counts over the worker's life: a worker reused for many entries
            # is replaced before it could spend an entry's budget on the ones before.
            self._start()

    def close(self) -> None:
        # Closed for good: a call still running in another thread (an entry being cancelled)
        # finds its worker gone and must not start another one.
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()

    def __enter__(self) -> BackendSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The worker's process id (a test kills it to prove the state comes back)."""
        return None if self._worker is None else self._worker.process.pid

    # ------------------------------------------------------------------ inside
    def _check_side(self, side: str) -> None:
        if side not in self.sides:
            raise ValueError(f"no side {side!r} in this sandbox (it holds {self.sides})")

    def _live(self) -> _Worker:
        if self._worker is None or self._worker.process.poll() is not None:
            self._start()
        assert self._worker is not None
        return self._worker

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._live().ask(request, self.limits.step_timeout_s)
        except _Lost:  # killed between calls: bring the state back and ask once more
            self._start()
            assert self._worker is not None
            try:
                return self._worker.ask(request, self.limits.step_timeout_s)
            except _Lost as lost:
                raise self._failed(str(lost)) from None

    def _start(self) -> None:
        """A new worker with the entry loaded and every answered call replayed."""
        if self._closed:
            raise self._failed("the sandbox was closed")
        if self._worker is not None:
            self._worker.kill()
        self._worker = _Worker(self._root, self.limits)
        self._load(replay=True)

    def _load(self, *, replay: bool = False) -> float:
        """Load the entry in the worker (replaying the answered calls); the CPU seconds the
        worker has used so far."""
        assert self._worker is not None
        entry = self.entry
        request = {
            "op": "load",
            "sides": self.labels,
            "entry_id": entry.id,
            "classes": list(entry.involved_classes),
            "config": json.dumps(entry.initial_config),
            "long_context": entry.long_context,
        }
        try:
            answer = self._worker.ask(request, _START_TIMEOUT_S)
            if "fatal" in answer:
                raise self._failed(answer["fatal"])
            for side, wire in self._answered if replay else ():
                self._worker.ask(
                    {"op": "call", "side": side, "call": wire}, self.limits.step_timeout_s
                )
        except _Lost as lost:
            raise self._failed(str(lost)) from None
        return float(answer.get("cpu_s", 0.0))

    def _failed(self, why: str) -> WorkbenchError:
        self.close()
        if "No module named" in why:
            why += " (`pip install 'workbench[bfcl]'` installs what BFCL's backends import)"
        return WorkbenchError(
            f"BFCL's backends for {self.entry.id} could not start in their worker "
            f"({self._root}): {why}",
            code="BFCL_BACKEND_FAILED",
        )
