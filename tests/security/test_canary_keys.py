"""Canary API keys: a key is sent to the provider and written nowhere else.

Canary keys are put in the environment, a providers file names their variables, and the
CLI (`run`, `probe`, `report`) and the Router run against the simulator with
`require_key = true`, through successes, 401s, 429s, 500s, and an endpoint that echoes the
key back in its 401 body (as real vendors do). Then the canaries are looked for in every
DuckDB row, every command's output, every report, every log record and every error — and
also looked for (and found) on the wire, so the test proves the keys were used.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import string
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import duckdb
import pytest

from workbench.config.providers_file import load_config
from workbench.errors import RoutingError, WorkbenchError
from workbench.sim import DEFAULT_FLEET_PATH, SimServer
from workbench.types import ChatRequest

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "datasets" / "smoke.jsonl"

# The shapes the before-stop hook refuses in committed notebooks.
KEY_SHAPES = re.compile(r"sk-[A-Za-z0-9]{20,}|AIza[0-9A-Za-z_-]{30,}|gsk_[A-Za-z0-9]{20,}")


def _rand(n: int) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(n))


# Three canaries: vendor-shaped ones (which a shape-based scrubber would also catch) and an
# opaque one, which only scrubbing by value can catch.
OPENAI_KEY = f"sk-canary-{_rand(24)}"
GEMINI_KEY = f"AIzaCanary{_rand(29)}"
OPAQUE_KEY = f"opaqueCanary{_rand(20)}"
CANARIES = (OPENAI_KEY, GEMINI_KEY, OPAQUE_KEY)
ENV = {
    "WB_CANARY_OPENAI_KEY": OPENAI_KEY,
    "WB_CANARY_GEMINI_KEY": GEMINI_KEY,
    "WB_CANARY_OPAQUE_KEY": OPAQUE_KEY,
}


class _Tap:
    """ASGI middleware around the simulator: records the credentials each request carried,
    and answers `/echo…` paths with a 401 whose body repeats the key it received."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        auth = headers.get("authorization", "")
        key = (
            (auth[7:] if auth.lower().startswith("bearer ") else "")
            or headers.get("x-goog-api-key", "")
            or headers.get("api-key", "")
            or (query.get("key") or [""])[0]
        )
        self.seen.append(key)
        if scope["path"].startswith("/echo"):
            body = json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {key}. Find your key at ...",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                        "key": key,
                    }
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _fleet() -> dict[str, Any]:
    data = tomllib.loads(DEFAULT_FLEET_PATH.read_text(encoding="utf-8"))
    data["require_key"] = True
    data["persona"] += [
        {
            "id": "canary-flaky",
            "failures": [{"kind": "429", "at": [1, 3]}, {"kind": "500", "at": [2, 5]}],
        },
        {"id": "canary-down", "failures": [{"kind": "500", "rate": 1.0}]},
        {"id": "canary-limited", "retry_after_s": 0.2, "failures": [{"kind": "429", "rate": 1.0}]},
    ]
    return data


@pytest.fixture
def keyed_sim(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WB_CANARY_UNSET_KEY", raising=False)
    sim = SimServer(_fleet())
    tap = _Tap(sim.app)
    sim.app = tap  # type: ignore[assignment]
    sim.start()
    try:
        yield sim, tap
    finally:
        sim.stop()


def _providers_ok(sim: SimServer) -> str:
    return f"""
[router]
name = "canary-ok"
cooldown_s = 1

[[providers]]
id = "oai"
adapter = "openai"
base_url = "{sim.openai_url}"
key_env = "WB_CANARY_OPENAI_KEY"
models = ["canary-flaky", "sim-native"]

[[providers]]
id = "gem"
adapter = "gemini"
base_url = "{sim.gemini_url}"
key_env = "WB_CANARY_GEMINI_KEY"
models = ["sim-native"]

[[providers]]
id = "opaque"
adapter = "openai"
base_url = "{sim.openai_url}"
key_env = "WB_CANARY_OPAQUE_KEY"
models = ["sim-native"]
"""


def _providers_failing(sim: SimServer) -> str:
    """Every provider fails: 401 (missing key, echoed key), 429, 500."""
    return f"""
[router]
name = "canary-failing"
cooldown_s = 1
when_all_cooling = "try"

[[providers]]
id = "echo-oai"
adapter = "openai"
base_url = "{sim.base_url}/echo/v1"
key_env = "WB_CANARY_OPENAI_KEY"
models = ["sim-native"]

[[providers]]
id = "echo-gem"
adapter = "gemini"
base_url = "{sim.base_url}/echo-gemini"
key_env = "WB_CANARY_GEMINI_KEY"
models = ["sim-native"]

[[providers]]
id = "echo-opaque"
adapter = "openai"
base_url = "{sim.base_url}/echo/v1"
key_env = "WB_CANARY_OPAQUE_KEY"
models = ["sim-native"]

[[providers]]
id = "nokey"
adapter = "openai"
base_url = "{sim.openai_url}"
key_env = "WB_CANARY_UNSET_KEY"
models = ["sim-native"]

[[providers]]
id = "down"
adapter = "openai"
base_url = "{sim.openai_url}"
key_env = "WB_CANARY_OPENAI_KEY"
models = ["canary-down", "canary-limited"]

[[providers]]
id = "gem-down"
adapter = "gemini"
base_url = "{sim.gemini_url}"
key_env = "WB_CANARY_GEMINI_KEY"
models = ["canary-down", "canary-limited"]

[[providers]]
id = "opaque-down"
adapter = "openai"
base_url = "{sim.openai_url}"
key_env = "WB_CANARY_OPAQUE_KEY"
models = ["canary-limited"]
"""


def _leaks(text: str) -> list[str]:
    return [c for c in CANARIES if c in text]


def _assert_clean(where: str, text: str) -> None:
    found = _leaks(text)
    assert not found, f"canary key(s) found in {where}: {[f[:14] + '…' for f in found]}"


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **ENV, "NO_COLOR": "1"}
    env.pop("WB_CANARY_UNSET_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _duckdb_dump(db: Path) -> dict[str, str]:
    """Every table's every row, stringified, keyed by table."""
    out: dict[str, str] = {}
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = con.execute(
            "SELECT database_name, schema_name, table_name FROM duckdb_tables()"
        ).fetchall()
        for database, schema, table in tables:
            rows = con.execute(f'SELECT * FROM "{database}"."{schema}"."{table}"').fetchall()
            out[f"{schema}.{table}"] = "\n".join(repr(r) + " " + str(r) for r in rows)
    finally:
        con.close()
    return out


def _assert_wire(sim: SimServer, tap: _Tap) -> None:
    """The keys really were sent: the simulator saw authenticated requests, and each canary
    crossed the wire as a credential at least once."""
    log = sim.requests()
    assert any(e["auth"] for e in log), "no authenticated request reached the simulator"
    ok = [e for e in log if e["status"] == 200]
    assert ok and all(e["auth"] for e in ok), "a 200 without a key: require_key not enforced?"
    for canary in CANARIES:
        assert canary in tap.seen, f"canary {canary[:12]}… never reached the simulator"


def test_cli_run_probe_report_never_write_a_key(keyed_sim, tmp_path: Path) -> None:
    sim, tap = keyed_sim
    ok = tmp_path / "ok.toml"
    ok.write_text(_providers_ok(sim), encoding="utf-8")
    failing = tmp_path / "failing.toml"
    failing.write_text(_providers_failing(sim), encoding="utf-8")
    db = tmp_path / "wb.duckdb"
    outputs: dict[str, str] = {}

    def cli(name: str, args: list[str], *, expect_ok: bool = True) -> None:
        r = _cli(args, tmp_path)
        outputs[f"{name} stdout"] = r.stdout
        outputs[f"{name} stderr"] = r.stderr
        if expect_ok:
            assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"

    base = ["--db", str(db), "--quiet", "--no-local"]
    # One run, both configurations side by side: one that answers (through a 429 and a 500
    # on its first model) and one where every call fails (401, echoed-key 401, 429, 500). The
    # failing one's items are held for its 429s and 500s, then logged unanswered (their held
    # errors written too) after a short --max-wait.
    run = ["run", str(SMOKE), "--providers", str(ok), "--providers", str(failing), *base]
    cli("run", [*run, "--max-wait", "2s"], expect_ok=False)
    cli("probe ok", ["probe", "--providers", str(ok), "--json", "--no-local"])
    cli("probe failing", ["probe", "--providers", str(failing), "--json", "--no-local"])
    cli("report", ["report", "--db", str(db), "--out", str(tmp_path / "out")])
    cli("runs", ["runs", "--db", str(db)])
    cli("verdicts", ["verdicts", "--db", str(db)])

    # The failing configuration really failed, and in each of the intended ways.
    statuses = {e["status"] for e in sim.requests()}
    assert {429, 500} <= statuses, statuses
    assert any(not e["auth"] and e["status"] in (401, 403) for e in sim.requests())
    _assert_wire(sim, tap)

    for where, text in outputs.items():
        _assert_clean(where, text)

    dump = _duckdb_dump(db)
    assert dump, "the DuckDB file holds no table"
    all_rows = "\n".join(dump.values())
    assert "401" in all_rows or "AUTH" in all_rows, "the errors were not logged at all"
    for table, text in dump.items():
        _assert_clean(f"DuckDB table {table}", text)

    reports = sorted(tmp_path.rglob("*.html"))
    assert reports, "no HTML report was written"
    # Every file the commands left behind (reports, DuckDB, WAL, caches), byte for byte.
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for canary in CANARIES:
                assert canary.encode() not in data, f"canary {canary[:12]}… in file {path.name}"


def _error_texts(err: BaseException) -> list[str]:
    texts = [str(err), repr(err), repr(err.args)]
    if isinstance(err, WorkbenchError):
        texts += [err.message, repr(err.details), json.dumps(err.details, default=repr)]
    for name in ("body", "full_body", "partial", "url", "reason"):
        if hasattr(err, name):
            texts.append(repr(getattr(err, name)))
    if isinstance(err, RoutingError):
        for attempt in err.attempts:
            texts.append(repr(attempt))
            if attempt.error is not None:
                texts += _error_texts(attempt.error)
    cause = err.__cause__ or err.__context__
    if cause is not None and cause is not err:
        texts += [str(cause), repr(cause)]
    return texts


async def test_router_in_process_never_logs_or_raises_a_key(
    keyed_sim, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sim, tap = keyed_sim
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "workbench", "uvicorn", "asyncio"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    events: list[Any] = []
    errors: list[BaseException] = []
    texts: list[str] = []

    for body in (_providers_ok(sim), _providers_failing(sim)):
        path = tmp_path / "providers.toml"
        path.write_text(body, encoding="utf-8")
        cfg = load_config(path)
        router = cfg.build_router(sinks=[events.append])
        try:
            for i in range(6):
                request = ChatRequest.of(f"Reply with exactly: pong {i}")
                try:
                    result = await router.route(request)
                    texts += [repr(result), repr(result.attempts)]
                except Exception as exc:
                    errors.append(exc)
                try:
                    stream = await router.ask(request, stream=True)
                    async for piece in stream:  # type: ignore[union-attr]
                        texts.append(repr(piece))
                except Exception as exc:
                    errors.append(exc)
            texts.append(json.dumps(await router.stats(), default=repr))
            texts.append(repr(router.flagged))
        finally:
            await router.close()

    assert errors, "the failing chain raised nothing"
    assert any(isinstance(e, RoutingError) for e in errors)
    codes = {
        getattr(pe, "code", "") for e in errors if isinstance(e, RoutingError) for pe in e.errors
    }
    assert {"PROVIDER_AUTH", "PROVIDER_OUTAGE", "PROVIDER_RATE_LIMIT"} <= codes, codes
    _assert_wire(sim, tap)

    for err in errors:
        for text in _error_texts(err):
            _assert_clean(f"error {type(err).__name__}", text)
    for event in events:
        _assert_clean(f"event {type(event).__name__}", repr(event))
    for text in texts:
        _assert_clean("a route result / stats", text)
    assert caplog.records, "nothing was logged at DEBUG"
    for record in caplog.records:
        rendered = f"{record.getMessage()} {record.args!r} {record.exc_text or ''}"
        _assert_clean(f"log record {record.name}:{record.levelname}", rendered)
    _assert_clean("caplog text", caplog.text)


def test_committed_notebooks_hold_no_key_shaped_output() -> None:
    notebooks = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert notebooks, "no committed notebook found"
    for nb in notebooks:
        data = json.loads(nb.read_text(encoding="utf-8"))
        for n, cell in enumerate(data.get("cells", [])):
            for output in cell.get("outputs", []):
                text = json.dumps(output)
                found = KEY_SHAPES.findall(text)
                assert not found, f"{nb.name} cell {n}: key-shaped output {found[0][:8]}…"
            # A key typed into a cell's source is a leak too.
            source = "".join(cell.get("source", []))
            assert not KEY_SHAPES.search(source), f"{nb.name} cell {n}: key-shaped source"
