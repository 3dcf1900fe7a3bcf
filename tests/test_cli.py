"""The `workbench` command: the probe's verdicts, JSON output, and one-line errors."""

from __future__ import annotations

import json

import pytest

from workbench.cli import main
from workbench.sim import load_fleet

FLEET = load_fleet(None)


@pytest.fixture(scope="module")
def probe_rows():
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["probe", "--json", "--no-local"]) == 0
    return json.loads(out.getvalue())


def test_probe_gives_every_persona_its_documented_verdicts(probe_rows):
    got = {(r["model"], r["capability"]): r["verdict"] for r in probe_rows}
    for persona in FLEET.personas.values():
        assert got[(persona.id, "tools")] == persona.expect["tools"], persona.id
        if persona.id in ("sim-flaky", "sim-glitchy"):
            # Their second request is scheduled to fail: a 503 / empty 200 proves nothing.
            assert got[(persona.id, "vision")] == "unobserved"
        else:
            assert got[(persona.id, "vision")] == persona.expect["vision"], persona.id


def test_probe_rows_name_the_prose_format_of_each_text_verdict(probe_rows):
    got = {r["model"]: r["protocol_family"] for r in probe_rows if r["capability"] == "tools"}
    for persona in FLEET.personas.values():
        if "family" in persona.expect:
            assert got[persona.id] == persona.expect["family"], persona.id
        elif persona.expect["tools"] != "text":
            assert got[persona.id] is None, persona.id
    assert got["qwen-prose"] == "tool_lines" and got["hermes-prose"] == "hermes"
    assert all(r["protocol_family"] is None for r in probe_rows if r["capability"] == "vision")


def test_probe_rows_carry_evidence_and_latency(probe_rows):
    for row in probe_rows:
        assert row["evidence"] and row["latency_ms"] >= 0
        assert "sim-key" not in json.dumps(row)


def test_probe_table_is_readable(capsys):
    assert main(["probe", "--no-local", "--no-vision"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "provider",
        "model",
        "kind",
        "verdict",
        "latency",
        "evidence",
    ]
    assert "qwen-prose" in out and "text" in out
    rows = {line.split()[1]: line for line in out.splitlines()[2:] if len(line.split()) > 3}
    assert "  text (hermes)  " in rows["hermes-prose"]
    assert "  native  " in rows["sim-native"] and "native (" not in rows["sim-native"]


def test_verdicts_shows_the_prose_format_of_records_and_of_a_runs_verdicts(tmp_path, capsys):
    from workbench.capability.decide import make_record
    from workbench.eval.store.database import Store
    from workbench.events import VerdictEvent

    db = tmp_path / "wb.duckdb"
    with Store.open(db) as store:
        run = store.start_run(name="r", dataset="d", dataset_sha="x", configs=["c"], settings={})
        store.sink(run, "i", 0, "c")(
            VerdictEvent("p", "m", "s", "tools", "text", True, "prose", "live", 1, "glm")
        )
        store.put_capability(
            make_record("p", "m", "s", "tools", "text", "live", "prose", protocol_family="mistral")
        )
    assert main(["verdicts", "--db", str(db)]) == 0
    records = capsys.readouterr().out
    assert "protocol_family" in records.splitlines()[0] and "mistral" in records
    assert main(["verdicts", "--db", str(db), "--run", run]) == 0
    verdicts = capsys.readouterr().out
    assert "protocol_family" in verdicts.splitlines()[0] and "glm" in verdicts


def test_runs_lists_each_run_with_its_settings_not_its_whole_config(tmp_path, capsys):
    from workbench.eval.run.options import RunConfig
    from workbench.eval.store.database import Store

    db = tmp_path / "wb.duckdb"
    with Store.open(db) as store:
        store.start_run(
            name="listed",
            dataset="d",
            dataset_sha="x",
            configs=["c"],
            settings={"concurrency": 3},
            config=RunConfig(concurrency=3).to_json(),
        )
    assert main(["runs", "--db", str(db)]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert "settings" in header.split() and "config" not in header.split()
    assert "listed" in row


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["probe", "--providers", "/no/such/file.toml"], "PROVIDERS_INVALID"),
        (["probe", "--fleet", "/no/such/fleet.toml"], "FLEET_INVALID"),
        (["run", "datasets/smoke.jsonl", "--workers", "2"], "RUN_INVALID"),
        (["run", "datasets/smoke.jsonl", "--ray-address", "auto"], "RUN_INVALID"),
        # --max-wait: a positive duration (90s, 10m, 1h, seconds), refused before anything runs
        *(
            (
                ["run", "datasets/smoke.jsonl", "--db", "/no/such/x.duckdb", f"--max-wait={bad}"],
                "RUN_INVALID",
            )
            for bad in ("0", "-5s", "ten minutes", "10d", "", "inf", "nan", "1e9999")
        ),
        (["run", "datasets/smoke.jsonl", "--max-tries", "0"], "RUN_INVALID"),
    ],
)
def test_bad_input_is_one_line_with_its_code_and_exit_2(capsys, argv, code):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and code in err and "Traceback" not in err


def test_bad_fleet_content_is_refused(tmp_path, capsys):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[persona]]\nid = "x"\ntool_style = "telepathy"\n')
    assert main(["probe", "--fleet", str(fleet)]) == 2
    err = capsys.readouterr().err
    assert "FLEET_INVALID" in err and "tool_style" in err


def test_probe_reads_a_providers_file_and_keeps_its_keys_secret(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WB_TEST_SIM_KEY", "sk-test-secret-value-123456")
    providers = tmp_path / "providers.toml"
    providers.write_text(
        f"""
[[providers]]
id = "mine"
base_url = "{sim.openai_url}"
key_env = "WB_TEST_SIM_KEY"
models = ["qwen-prose", {{ id = "sim-blind", vision = false }}]

[[providers]]
id = "google"
adapter = "gemini"
base_url = "{sim.gemini_url}"
key_env = "WB_TEST_SIM_KEY"
models = ["gemini-flash"]
"""
    )
    assert main(["probe", "--providers", str(providers), "--json"]) == 0
    out = capsys.readouterr().out
    rows = {(r["provider"], r["model"], r["capability"]): r["verdict"] for r in json.loads(out)}
    assert rows == {
        ("mine", "qwen-prose", "tools"): "text",
        ("mine", "qwen-prose", "vision"): "none",
        ("mine", "sim-blind", "tools"): "native",  # declared blind: no picture is sent
        ("google", "gemini-flash", "tools"): "native",
        ("google", "gemini-flash", "vision"): "native",
    }
    assert "sk-test-secret-value-123456" not in out
    assert all(r["auth"] for r in sim.requests())  # the key was sent, just never shown


def test_sim_serve_runs_standalone(tmp_path):
    import socket
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "sim", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        assert {m["id"] for m in models["data"]} >= set(FLEET.personas)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert f"127.0.0.1:{port}/v1" in out


def test_local_serve_help_lists_the_tools_flag(capsys):
    with pytest.raises(SystemExit) as info:
        main(["local", "serve", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--tools" in out and "tool_calls" in out


@pytest.mark.parametrize("extra", [["--workers", "0"]], ids=["no-workers"])
def test_ray_engine_settings_are_refused_before_any_run(tmp_path, capsys, extra):
    db = tmp_path / "r.duckdb"
    argv = ["run", "datasets/smoke.jsonl", "--no-local", "--engine", "ray", "--db", str(db)]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "RAY_INVALID" in err and "Traceback" not in err
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(0,)]
