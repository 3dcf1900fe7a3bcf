"""A real, throwaway `redis-server` on loopback: the Ray engine starts one for a local cluster
when the providers name none, and the tests start, stop, kill -9 and restart one on a port.

No persistence (no RDB, no AOF): a restart comes back empty, like a crashed cache.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from typing import Any


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # resolved here: no dlopen after fork
    except (OSError, AttributeError):
        return None  # not Linux: the server is stopped by cleanup() only


_PRCTL = _prctl()
_PR_SET_PDEATHSIG = 1


def _dying_with(parent: int) -> Callable[[], None]:
    """In the child, before exec: Linux sends it SIGTERM when the thread that started it dies,
    so a driver killed with `kill -9` leaves no redis-server behind; a parent already gone
    by then (killed between fork and here) ends the child at once."""

    def preexec() -> None:
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def redis_server_binary() -> str | None:
    return shutil.which("redis-server")


class RedisServer:
    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port or free_port(host)
        self._dir = tempfile.TemporaryDirectory(prefix="wb-redis-")
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def version(self) -> str:
        binary = redis_server_binary() or "redis-server"
        return subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        if self.alive:
            return self
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        args = [
            binary,
            "--port",
            str(self.port),
            "--bind",
            self.host,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            self._dir.name,
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ]
        self._proc = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_dying_with(os.getpid()),
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"redis-server exited with {self._proc.returncode}: {err}")
            if self.ping():
                return self
            time.sleep(0.01)
        self.kill()
        raise RuntimeError(f"redis-server did not answer on port {self.port} in {timeout_s}s")

    def ping(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def command(self, *parts: str) -> bytes:
        """Send one command (RESP) and return the raw first reply chunk."""
        payload = f"*{len(parts)}\r\n".encode()
        for part in parts:
            data = part.encode()
            payload += b"$%d\r\n%s\r\n" % (len(data), data)
        with socket.create_connection((self.host, self.port), timeout=2) as sock:
            sock.sendall(payload)
            return sock.recv(65536)

    def flush(self) -> None:
        reply = self.command("FLUSHALL")
        if not reply.startswith(b"+OK"):
            raise RuntimeError(f"FLUSHALL failed: {reply!r}")

    def stop(self) -> None:
        """Graceful shutdown (SIGTERM); falls back to kill."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._close_pipes()

    def kill(self) -> None:
        """SIGKILL, like a crash: clients see their connections drop."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close_pipes()

    def restart(self) -> RedisServer:
        """Kill if running, then start again on the SAME port (empty: no persistence)."""
        self.kill()
        return self.start()

    def cleanup(self) -> None:
        self.stop()
        self._dir.cleanup()

    def _close_pipes(self) -> None:
        if self._proc is not None and self._proc.stderr is not None:
            self._proc.stderr.close()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
