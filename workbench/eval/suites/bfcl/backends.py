"""Where BFCL's backend classes come from, and the call a model makes to one.

BFCL's multi-turn entries run against its own Python classes (`GorillaFileSystem`,
`MathAPI`, ...), shipped in the `bfcl-eval` wheel under
`bfcl_eval/eval_checker/multi_turn_eval/func_source_code/`. A score is only BFCL's when those
exact classes answer, so we run them — but never in our process and never installed: their
`.py` files are extracted into a versioned folder of the cache (with the empty package
`__init__.py` files their imports need), and only the sandbox's worker puts that folder on its
`sys.path` (`sandbox.py`).

A call is data, never code: `BackendCall` is a name, positional and keyword arguments, read
from BFCL's ground-truth text with `ast` (literals only) or from a model's tool call.
"""

from __future__ import annotations

import ast
import compileall
import hashlib
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, WorkbenchError
from workbench.eval.suites.bfcl.source import VERSION, BfclSource, cache_dir, open_source
from workbench.types import ToolCall

PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
_FOLDER = PACKAGE.replace(".", "/") + "/"

# BFCL's CLASS_FILE_PATH_MAPPING: class → its module in the package above.
CLASS_MODULES: dict[str, str] = {
    "GorillaFileSystem": f"{PACKAGE}.gorilla_file_system",
    "MathAPI": f"{PACKAGE}.math_api",
    "MessageAPI": f"{PACKAGE}.message_api",
    "TwitterAPI": f"{PACKAGE}.posting_api",
    "TicketAPI": f"{PACKAGE}.ticket_api",
    "TradingBot": f"{PACKAGE}.trading_bot",
    "TravelAPI": f"{PACKAGE}.travel_booking",
    "VehicleControlAPI": f"{PACKAGE}.vehicle_control",
    # Not multi-turn, but BFCL runs them the same way. The memory ones import `bfcl_eval.utils`
    # (and so half of BFCL): the worker gives them a stub of the three names they import, and
    # loads them from a snapshot in the config instead of BFCL's files (sandbox_worker.py).
    # MemoryAPI_vector (sentence-transformers, FAISS) is refused.
    "WebSearchAPI": f"{PACKAGE}.web_search",
    "MemoryAPI_kv": f"{PACKAGE}.memory_kv",
    "MemoryAPI_vector": f"{PACKAGE}.memory_vector",
    "MemoryAPI_rec_sum": f"{PACKAGE}.memory_rec_sum",
}
STATELESS: frozenset[str] = frozenset({"MathAPI"})  # BFCL never calls their _load_scenario
# BFCL's deny-list: these names are refused before anything runs, with its own words.
DENIED: frozenset[str] = frozenset(
    {"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}
)
_WHEEL_VERSION = re.compile(r"bfcl_eval-([^-]+)-")


def backends_root(source: str | Path | BfclSource | None = None) -> Path:
    """The folder holding `bfcl_eval/.../func_source_code/*.py`, extracted on first use into
    `cache_dir()/backends/<version>/` from the wheel (or copied from an unpacked wheel or a
    checkout). The folder is complete or absent: it is written beside and renamed into place,
    so two workers starting at once never see half of it."""
    found = source if isinstance(source, BfclSource) else open_source(source)
    files = _backend_files(found)
    if found.wheel:
        matched = _WHEEL_VERSION.search(found.where.name)
        version = matched.group(1) if matched else VERSION
    else:
        digest = hashlib.sha256()
        for name in sorted(files):
            digest.update(name.encode() + b"\0" + files[name] + b"\0")
        version = f"local-{digest.hexdigest()[:12]}"
    root = cache_dir() / "backends" / version
    if (root / _FOLDER / "__init__.py").is_file():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=root.parent))
    try:
        package = staging / _FOLDER
        package.mkdir(parents=True)
        parts = PACKAGE.split(".")
        for depth in range(1, len(parts) + 1):  # every package level needs its __init__.py
            (staging.joinpath(*parts[:depth]) / "__init__.py").touch()
        for name, data in files.items():
            (package / name).write_bytes(data)
        # Compiled here, once: the worker refuses to write files, bytecode included.
        compileall.compile_dir(str(staging), quiet=1)
        try:
            staging.rename(root)
        except OSError:  # another process put it there first: theirs is as good
            if not (root / _FOLDER / "__init__.py").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return root


def _backend_files(found: BfclSource) -> dict[str, bytes]:
    """The backend package's `.py` files by name; BFCL_BACKEND_FAILED when the source has none
    (a bare `data` folder holds no code)."""
    files: dict[str, bytes] = {}
    if found.wheel:
        with zipfile.ZipFile(found.where) as z:
            for member in z.namelist():
                rest = member[len(_FOLDER) :]
                if member.startswith(_FOLDER) and rest.endswith(".py") and "/" not in rest:
                    files[rest] = z.read(member)
    else:
        # The data folder is bfcl_eval/data: the code is beside it.
        folder = found.where.parent / "eval_checker/multi_turn_eval/func_source_code"
        if folder.is_dir():
            files = {p.name: p.read_bytes() for p in folder.glob("*.py")}
    if not files:
        raise WorkbenchError(
            f"{found.where}: no BFCL backend classes in it (looked for {_FOLDER}*.py)",
            code="BFCL_BACKEND_FAILED",
        )
    return files


# ------------------------------------------------------------------ calls


@dataclass(frozen=True, slots=True)
class BackendCall:
    """One call to a backend method: its name and its (literal) arguments.

    `args` holds positional arguments, which BFCL's ground truth uses (`sort('a.pdf')`); a
    model's tool call only ever has keyword arguments."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> BackendCall:
        """BFCL's call text (`cd(folder='document')`), read with `ast`: a name applied to
        literal values, nothing else — BFCL_FILE_INVALID names any other text."""
        try:
            node = ast.parse(text.strip(), mode="eval").body
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                raise ValueError("not a call of a plain name")
            args = tuple(ast.literal_eval(a) for a in node.args)
            kwargs: dict[str, Any] = {}
            for keyword in node.keywords:
                if keyword.arg is None:
                    raise ValueError("**arguments")
                kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as exc:
            raise ConfigError(
                f"BFCL call {text!r} is not a call with literal arguments ({exc})",
                code="BFCL_FILE_INVALID",
            ) from None
        return cls(node.func.id, args, kwargs)

    @classmethod
    def of(cls, call: BackendCall | ToolCall | Mapping[str, Any]) -> BackendCall:
        """A model's call: a `ToolCall`, or `{"name", "arguments"}` whose arguments are an
        object or its JSON text. ValueError when BFCL could not decode it (arguments that are
        not a JSON object): BFCL then drops the whole step, never runs it."""
        if isinstance(call, BackendCall):
            return call
        if isinstance(call, ToolCall):
            if call.invalid:
                raise ValueError(f"{call.name}: arguments are {call.invalid_reason}")
            name, arguments = call.name, call.arguments
        else:
            name, arguments = call["name"], call.get("arguments", {})
        if isinstance(arguments, str | bytes):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                raise ValueError(f"{name}: arguments are not JSON") from None
        if not isinstance(arguments, Mapping):
            raise ValueError(f"{name}: arguments are not an object")
        return cls(str(name), (), dict(arguments))

    def text(self) -> str:
        """The call as BFCL writes it (`cd(folder='document')`), for logs and BFCL's tools."""
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({','.join(parts)})"


# The values a call carries cross to the worker as JSON; what JSON cannot hold is tagged, so
# a tuple arrives as a tuple (BFCL's eval would have given the backend a tuple).
def to_wire(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [to_wire(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [to_wire(v) for v in value]}
    if isinstance(value, set | frozenset):
        return {"$set": [to_wire(v) for v in value]}
    if isinstance(value, Mapping):
        return {"$dict": [[to_wire(k), to_wire(v)] for k, v in value.items()]}
    if isinstance(value, bytes):
        return {"$bytes": value.decode("latin-1")}
    if isinstance(value, complex):
        return {"$complex": [value.real, value.imag]}
    raise TypeError(f"not a literal value: {type(value).__name__}")


def call_to_wire(call: BackendCall) -> dict[str, Any]:
    return {
        "name": call.name,
        "args": to_wire(list(call.args)),
        "kwargs": [[str(k), to_wire(v)] for k, v in call.kwargs.items()],
    }
